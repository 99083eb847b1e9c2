"""Who may send to the receiver: an optional bearer token and TLS, for both listeners.

As the OpenTelemetry Collector's receivers offer them: a client sends
``Authorization: Bearer <token>`` (HTTP header, or gRPC metadata ``authorization``); the token
is compared in constant time. Without a token the receiver accepts anyone who can reach it,
which is why it listens on loopback by default and warns when told otherwise.
"""

from __future__ import annotations

import base64
import binascii
import hmac
import ipaddress
import os
import re
import ssl
from pathlib import Path

from tooltrail.config_error import ConfigError

_SCHEME = "bearer "


class BearerToken:
    """The shared secret clients must present."""

    __slots__ = ("_expected",)

    def __init__(self, token: str) -> None:
        if not token or any(c.isspace() for c in token):
            raise ValueError("the auth token must be one word, not empty")
        self._expected = token.encode()

    @classmethod
    def from_file(cls, path: str | os.PathLike[str]) -> BearerToken:
        """The token in ``path`` (surrounding whitespace and a final newline ignored)."""
        text = Path(path).read_text(encoding="utf-8").strip()
        if not text or any(c.isspace() for c in text):
            raise ValueError(f"{os.fspath(path)}: expected one token on one line")
        return cls(text)

    def accepts(self, authorization: str | None) -> bool:
        """Whether an ``Authorization`` value is ``Bearer <the token>``."""
        if not authorization or authorization[: len(_SCHEME)].lower() != _SCHEME:
            return False
        offered = authorization[len(_SCHEME) :].strip().encode()
        return hmac.compare_digest(offered, self._expected)


def tls_context(cert: str | os.PathLike[str], key: str | os.PathLike[str]) -> ssl.SSLContext:
    """A server TLS context from a PEM certificate (chain) and its private key."""
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(os.fspath(cert), os.fspath(key), password=_no_password)
    return context


class TlsFileError(ConfigError):
    """A ``--tls-cert`` or ``--tls-key`` file that cannot serve TLS; the message names the file
    and the cause."""


_CERT_BLOCK = re.compile(
    rb"-----BEGIN CERTIFICATE-----\s+([A-Za-z0-9+/=\s]+?)-----END CERTIFICATE-----"
)
_KEY_BEGIN = re.compile(rb"-----BEGIN ((?:RSA |EC |DSA |ENCRYPTED )?PRIVATE KEY)-----")


def check_tls(cert: str | os.PathLike[str], key: str | os.PathLike[str]) -> None:
    """Raise ``TlsFileError`` naming the file and the cause when ``cert`` and ``key`` cannot
    serve TLS: not readable, no PEM certificate, a certificate OpenSSL cannot parse, no PEM
    private key, an encrypted key (``serve`` has nobody to ask for a passphrase), or a key of
    another certificate. Checked before any listener starts: gRPC would otherwise fail late,
    with the cause only in its own log."""
    cert_name, key_name = os.fspath(cert), os.fspath(key)
    cert_bytes = _read(cert_name, "--tls-cert")
    key_bytes = _read(key_name, "--tls-key")
    blocks = _CERT_BLOCK.findall(cert_bytes)
    if not blocks:
        raise TlsFileError(
            f"--tls-cert {cert_name}: holds no PEM certificate (a block from "
            "'-----BEGIN CERTIFICATE-----' to '-----END CERTIFICATE-----')"
        )
    for number, block in enumerate(blocks, 1):
        try:
            der = base64.b64decode(b"".join(block.split()), validate=True)
        except (binascii.Error, ValueError):
            der = b""
        if not der.startswith(b"\x30"):
            raise TlsFileError(
                f"--tls-cert {cert_name}: certificate {number} is not valid PEM (its base64 "
                "text does not decode to a certificate)"
            )
    probe = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    try:
        probe.load_verify_locations(cafile=cert_name)  # parses every certificate of the file
    except ssl.SSLError as exc:
        raise TlsFileError(
            f"--tls-cert {cert_name}: not a valid certificate ({_why(exc)})"
        ) from None
    found = _KEY_BEGIN.search(key_bytes)
    if found is None:
        raise TlsFileError(
            f"--tls-key {key_name}: holds no PEM private key (a block from "
            "'-----BEGIN PRIVATE KEY-----' to '-----END PRIVATE KEY-----')"
        )
    if found.group(1).startswith(b"ENCRYPTED") or b"Proc-Type: 4,ENCRYPTED" in key_bytes:
        raise TlsFileError(
            f"--tls-key {key_name}: the private key is encrypted; tooltrail serve needs it "
            "unencrypted (openssl pkey -in KEY -out PLAIN), readable by its user only"
        )
    try:
        probe.load_cert_chain(cert_name, key_name, password=_no_password)
    except ssl.SSLError as exc:
        if exc.reason == "KEY_VALUES_MISMATCH":
            raise TlsFileError(
                f"--tls-key {key_name}: the private key does not belong to the certificate "
                f"in --tls-cert {cert_name}"
            ) from None
        raise TlsFileError(
            f"--tls-key {key_name}: not a usable private key for --tls-cert {cert_name} "
            f"({_why(exc)})"
        ) from None


def _read(path: str, flag: str) -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError as exc:
        raise TlsFileError(f"{flag} {path}: cannot read it: {exc.strerror or exc}") from None


def _no_password() -> str:
    return ""  # never a prompt on the terminal: an encrypted key fails instead


def _why(exc: ssl.SSLError) -> str:
    """OpenSSL's reason in words (``KEY_VALUES_MISMATCH`` -> ``key values mismatch``); it
    gives none for a damaged PEM block."""
    if not exc.reason:
        return "OpenSSL cannot parse it: damaged or cut short"
    return str(exc.reason).replace("_", " ").lower()


def grpc_key_pair(cert: str | os.PathLike[str], key: str | os.PathLike[str]) -> tuple[bytes, bytes]:
    """(private key, certificate chain) as ``grpc.ssl_server_credentials`` takes them."""
    return Path(key).read_bytes(), Path(cert).read_bytes()


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def exposure_warning(host: str, *, authenticated: bool, tls: bool) -> str | None:
    """What to tell the operator when the receiver listens beyond this machine unprotected."""
    if is_loopback(host) or authenticated:
        return None
    plain = "" if tls else " in plain text"
    return (
        f"listening on {host}, beyond loopback, without authentication: anyone who can reach "
        f"it can send traces{plain}. Give --auth-token-file (and --tls-cert/--tls-key)"
    )
