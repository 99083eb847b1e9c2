"""Bearer-token authentication and TLS on both listeners, as a collector's receivers offer:
401 / UNAUTHENTICATED without the token, accepted with it; a self-signed certificate made here."""

from __future__ import annotations

import http.client
import shutil
import ssl
import subprocess
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2
from serve_helpers import post
from serve_traces import PROTOBUF, agent_trace, body_of

from tooltrail.serve import RunningReceiver, ServeConfig, start_in_thread
from tooltrail.serve.auth import exposure_warning

TOKEN = "s3cr3t-token-4242"
EXPORT = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"


def _token_file(tmp_path: Path) -> Path:
    path = tmp_path / "token"
    path.write_text(TOKEN + "\n", encoding="utf-8")
    return path


def _certificate(tmp_path: Path) -> tuple[Path, Path]:
    if shutil.which("openssl") is None:
        pytest.skip("needs the openssl command")
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
         "-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1",
         "-keyout", str(key), "-out", str(cert)],
        check=True, capture_output=True,
    )  # fmt: skip
    return cert, key


@pytest.fixture
def authenticated(tmp_path: Path) -> Iterator[RunningReceiver]:
    receiver = start_in_thread(
        ServeConfig(grpc_port=0, http_port=0, auth_token_file=_token_file(tmp_path))
    )
    try:
        yield receiver
    finally:
        receiver.stop()


def _grpc_export(channel: grpc.Channel, metadata: tuple[tuple[str, str], ...] = ()) -> None:
    export = channel.unary_unary(
        EXPORT,
        request_serializer=None,
        response_deserializer=trace_service_pb2.ExportTraceServiceResponse.FromString,
    )
    export(body_of(agent_trace()), metadata=metadata, timeout=10)


def test_http_needs_the_bearer_token(authenticated: RunningReceiver) -> None:
    port = authenticated.http_port
    assert port is not None
    body = body_of(agent_trace())
    status, headers, _ = post(port, body, PROTOBUF)
    assert status == 401 and headers["www-authenticate"].startswith("Bearer")
    assert post(port, body, {**PROTOBUF, "Authorization": "Bearer wrong"})[0] == 401
    assert post(port, b"", path="/stats", method="GET")[0] == 401
    assert post(port, body, {**PROTOBUF, "Authorization": f"Bearer {TOKEN}"})[0] == 200
    assert post(port, b"", path="/healthz", method="GET")[0] == 200  # for load balancers
    stats = authenticated.receiver.stats()
    assert (stats["requests_unauthenticated"], stats["spans_received"]) == (3, 2)


def test_grpc_needs_the_bearer_token(authenticated: RunningReceiver) -> None:
    with grpc.insecure_channel(f"127.0.0.1:{authenticated.grpc_port}") as channel:
        with pytest.raises(grpc.RpcError) as refused:
            _grpc_export(channel)
        assert refused.value.code() == grpc.StatusCode.UNAUTHENTICATED
        with pytest.raises(grpc.RpcError) as wrong:
            _grpc_export(channel, (("authorization", "Bearer nope"),))
        assert wrong.value.code() == grpc.StatusCode.UNAUTHENTICATED
        _grpc_export(channel, (("authorization", f"Bearer {TOKEN}"),))
    assert authenticated.receiver.stats()["spans_received"] == 2


def test_both_listeners_speak_tls(tmp_path: Path) -> None:
    cert, key = _certificate(tmp_path)
    receiver = start_in_thread(
        ServeConfig(grpc_port=0, http_port=0, tls_cert=cert, tls_key=key,
                    auth_token_file=_token_file(tmp_path))
    )  # fmt: skip
    try:
        context = ssl.create_default_context(cafile=str(cert))
        connection = http.client.HTTPSConnection(
            "127.0.0.1", receiver.http_port, context=context, timeout=10
        )
        connection.request("POST", "/v1/traces", body=body_of(agent_trace()),
                           headers={**PROTOBUF, "Authorization": f"Bearer {TOKEN}"})  # fmt: skip
        assert connection.getresponse().status == 200
        connection.close()
        # Plain HTTP to the TLS port gets no answer.
        with pytest.raises((ConnectionError, http.client.HTTPException, OSError)):
            post(receiver.http_port or 0, body_of(agent_trace()), PROTOBUF)
        credentials = grpc.ssl_channel_credentials(root_certificates=cert.read_bytes())
        with grpc.secure_channel(f"localhost:{receiver.grpc_port}", credentials) as channel:
            _grpc_export(channel, (("authorization", f"Bearer {TOKEN}"),))
    finally:
        stats = receiver.stop()
    assert stats["spans_received"] == 4


def test_listening_beyond_loopback_without_a_token_is_warned_about() -> None:
    assert exposure_warning("127.0.0.1", authenticated=False, tls=False) is None
    assert exposure_warning("0.0.0.0", authenticated=True, tls=True) is None
    warning = exposure_warning("0.0.0.0", authenticated=False, tls=False)
    assert warning is not None and "--auth-token-file" in warning
