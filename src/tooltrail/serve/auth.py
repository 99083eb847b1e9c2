"""Who may send to the receiver: an optional bearer token and TLS, for both listeners.

As the OpenTelemetry Collector's receivers offer them: a client sends
``Authorization: Bearer <token>`` (HTTP header, or gRPC metadata ``authorization``); the token
is compared in constant time. Without a token the receiver accepts anyone who can reach it,
which is why it listens on loopback by default and warns when told otherwise.
"""

from __future__ import annotations

import hmac
import ipaddress
import os
import ssl
from pathlib import Path

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
    context.load_cert_chain(os.fspath(cert), os.fspath(key))
    return context


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
