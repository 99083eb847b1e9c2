"""Credentials of every shape redaction hides by default (``tooltrail.credentials.SHAPES``),
made as their issuers make them, for the credential redaction tests.

API (``from credential_examples import CREDENTIALS, credentials, Credential, ...``):

- ``Credential``: the text as it would appear (``"Bearer 9fQx..."``), its shape's name, and
  ``cores``: the parts that must never be seen again (the token without the ``Bearer`` scheme,
  each base64 line of a private key, a card's digits, grouped or not). A core is made of
  characters that no output escapes (letters, digits, ``-._~+/``), so searching raw output
  bytes for it is enough whatever the format (JSON, a Python repr, HTML, protobuf).
- ``CREDENTIALS``: one fixed example per shape (the AWS and Google ones are their issuers'
  documented examples); ``credentials()``: a hypothesis strategy drawing any shape.
- ``ORDINARY``: texts that look a little like credentials and are not (an order id, a
  Luhn-invalid digit run, a timestamp, a hyphenated slug...): they must come out unchanged.
- ``SEPARATORS``: what may stand before and after a credential in text (a key prefix counts at
  the start of a word only).
"""

from __future__ import annotations

import base64
import json
import string
from dataclasses import dataclass

from hypothesis import strategies as st

ALNUM = string.ascii_letters + string.digits


@dataclass(frozen=True)
class Credential:
    shape: str
    text: str
    cores: tuple[str, ...]


def luhn_digit(body: str) -> str:
    """The check digit that makes ``body`` + it pass the Luhn check."""
    total = 0
    for i, char in enumerate(reversed(body)):
        digit = int(char)
        if i % 2 == 0:
            digit = digit * 2 - 9 if digit > 4 else digit * 2
        total += digit
    return str(-total % 10)


def card(body: str, grouped: bool = False) -> Credential:
    number = body + luhn_digit(body)
    text = " ".join(number[i : i + 4] for i in range(0, len(number), 4)) if grouped else number
    return Credential("card_number", text, (number, text) if grouped else (number,))


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def jwt(payload: dict[str, object], signature: bytes) -> Credential:
    header = b64url(json.dumps({"alg": "HS256", "typ": "JWT"}).encode())
    body, sig = b64url(json.dumps(payload).encode()), b64url(signature)
    return Credential("jwt", f"{header}.{body}.{sig}", (body, sig) if len(sig) >= 8 else (body,))


def private_key(lines: list[str], kind: str = "RSA ") -> Credential:
    block = f"-----BEGIN {kind}PRIVATE KEY-----\n" + "\n".join(lines)
    block += f"\n-----END {kind}PRIVATE KEY-----"
    return Credential("private_key", block, tuple(line.rstrip("=") for line in lines))


def basic(user: str, password: str) -> Credential:
    value = base64.b64encode(f"{user}:{password}".encode()).decode()
    return Credential("basic", f"Basic {value}", (value.rstrip("="),))


def prefixed(shape: str, prefix: str, body: str) -> Credential:
    return Credential(shape, prefix + body, (body,))


CREDENTIALS: tuple[Credential, ...] = (
    Credential("bearer", "Bearer 9fQxL2mZr7TkW4", ("9fQxL2mZr7TkW4",)),
    basic("alice", "s3cr3t-pw"),
    prefixed("anthropic", "sk-ant-api03-", "Qw3rTy7uIo9pAs1dFg5hJk2lZx8cVb4nM6q"),
    prefixed("openai", "sk-proj-", "Lm4Rt9Vw1Zp7Kd3Fh6YbQ2x8Nc5Gs0Ja"),
    prefixed("openai", "sk-", "T3BlbkFJx9Q2mZr7Tk4W8pL1vN6cB0hD5fG3"),
    prefixed("github", "ghp_", "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"),
    prefixed("github", "github_pat_", "11ABCDEFG0aBcDeFgHiJkLmN_opQrStUvWxYz0123456789"),
    prefixed("gitlab", "glpat-", "z_sxgtrfAxKr8q1TPY8Yq7"),
    prefixed("slack", "xoxb-", "2048123456789-2048987654321-Ab3Cd5Ef7Gh9"),
    prefixed("stripe", "sk_live_", "4eC39HqLyjWDarjtT1zdp7dcXy"),
    prefixed("stripe", "rk_live_", "51HqLyjWDarjtT1zdp7dc9QmZ"),
    Credential(  # Google Cloud's documented example key
        "google", "AIzaSyDaGmWKa4JsXZ-HjGw7ISLn_3namBGewQe", ("SyDaGmWKa4JsXZ",)
    ),
    Credential("aws", "AKIAIOSFODNN7EXAMPLE", ("AKIAIOSFODNN7EXAMPLE",)),  # AWS's example id
    prefixed("huggingface", "hf_", "aBcDeFgHiJkLmNoPqRsTuVwXyZaBcDeFgH"),
    jwt({"sub": "1234567890", "name": "Jane Doe"}, b"\x8f\x01" * 16),
    private_key(["MIIEowIBAAKCAQEA0Z3VS5JJcds3xfn", "/ygWyF8PbnGy0AHB7Mhgw5lZ9l2q9a=="]),
    card("411111111111111"),  # 4111 1111 1111 1111
    card("555555555555444", grouped=True),  # 5555 5555 5555 4444
)

#: Not credentials, though each looks a little like one: they pass every shape unchanged.
ORDINARY: tuple[str, ...] = (
    "ORD-7731",
    "order 4111111111111112",  # 16 digits, Luhn fails
    "ts 1733500000000000000",  # a nanosecond timestamp begins with 1
    "pi is 3.4111111111111111",  # a decimal's digits
    "span 4000000000000001ab",  # part of a hex id
    "call +4915112345678901",  # a phone number
    "risk-assessment-for-the-new-product-launch",  # no sk- key inside a word
    "task_live_1234567890abcdef",
    "the Bearer authentication scheme",
    "bearer tokens are short",
    "Basic troubleshooting steps",
    "a basic idea",
    "sk-short",
    "id 9b2c7e1a-4f3d-4c8b-9a6e-2d1f0c3b5a79",
    "AKIA is the prefix of long-term keys",
    "eyJ alone",
)

#: What may stand right before and right after a credential in text.
SEPARATORS = (" ", "\n", "\t", "(", ")", "[", "]", '"', "'", ",", ";", "= ", ": ", "<", ">")

_BODY = st.text(ALNUM, min_size=24, max_size=48)


@st.composite
def credentials(draw: st.DrawFn) -> Credential:
    """A credential of any shape, with random secret material."""
    body = draw(_BODY)
    kind = draw(st.sampled_from(sorted({c.shape for c in CREDENTIALS}) + ["card_grouped"]))
    if kind == "bearer":
        token = draw(st.text(ALNUM + "-._~+/", min_size=12, max_size=40)) + draw(
            st.sampled_from(string.digits)
        )
        scheme = draw(st.sampled_from(["Bearer", "bearer", "BEARER"]))
        return Credential("bearer", f"{scheme} {token}", (token,))
    if kind == "basic":
        return basic(draw(st.text(ALNUM, min_size=3, max_size=12)), body[:16])
    if kind == "anthropic":
        return prefixed(kind, draw(st.sampled_from(["sk-ant-api03-", "sk-ant-admin01-"])), body)
    if kind == "openai":
        prefix = draw(st.sampled_from(["sk-", "sk-proj-", "sk-svcacct-", "sk-admin-"]))
        return prefixed(kind, prefix, body)
    if kind == "github":
        prefix = draw(st.sampled_from(["ghp_", "gho_", "ghu_", "ghs_", "ghr_"]))
        if draw(st.booleans()):
            return prefixed(kind, "github_pat_", body[:22] + "_" + body)
        return prefixed(kind, prefix, (body * 2)[:36])
    if kind == "gitlab":
        return prefixed(kind, "glpat-", body[:20])
    if kind == "slack":
        prefix = draw(st.sampled_from(["xoxb-", "xoxp-", "xoxa-", "xoxr-", "xoxs-", "xapp-"]))
        return prefixed(kind, prefix, "1234567890-" + body)
    if kind == "stripe":
        prefix = draw(st.sampled_from(["sk_live_", "sk_test_", "rk_live_", "rk_test_", "whsec_"]))
        return prefixed(kind, prefix, body)
    if kind == "google":
        return prefixed(kind, "AIza", (body * 2)[:35])
    if kind == "aws":
        prefix = draw(st.sampled_from(["AKIA", "ASIA"]))
        key = prefix + draw(
            st.text(string.ascii_uppercase + string.digits, min_size=16, max_size=16)
        )
        return Credential(kind, key, (key,))
    if kind == "huggingface":
        return prefixed(kind, "hf_", (body * 2)[:34])
    if kind == "jwt":
        payload = {"sub": draw(st.text(ALNUM, min_size=4, max_size=12)), "k": body}
        return jwt(payload, draw(st.binary(min_size=16, max_size=32)))
    if kind == "private_key":
        lines = draw(
            st.lists(st.text(ALNUM + "+/", min_size=24, max_size=64), min_size=1, max_size=4)
        )
        lines = [line if sum(c in ALNUM for c in line) >= 20 else body for line in lines]
        return private_key(lines, draw(st.sampled_from(["RSA ", "EC ", "", "OPENSSH "])))
    first = draw(st.sampled_from("3456"))
    rest = draw(st.text(string.digits, min_size=14, max_size=14))
    return card(first + rest, grouped=kind == "card_grouped")
