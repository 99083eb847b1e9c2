"""Writing OTLP files the way the collector ``file`` exporter does, with size rotation.

``format="json"`` writes one request per line; ``format="proto"`` writes length-prefixed
messages. ``compression="zstd"`` compresses each message on its own inside the
length-prefixed framing (the collector's ``compression: zstd``, JSON or protobuf inside);
``"zstd-stream"`` compresses the whole file as one zstd stream (the collector's native
compression gate) and ``"gzip"`` as one gzip stream.
"""

from __future__ import annotations

import gzip
import os
import threading
from collections.abc import Iterable
from typing import IO, Any, Literal

import zstandard
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.logs.v1.logs_pb2 import LogsData

from tooltrail.otlp.decode.span import Span
from tooltrail.otlp.write.encode import encode_request, frame, json_line, logs_json_line

Format = Literal["json", "proto"]
Compression = Literal["zstd", "zstd-stream", "gzip"] | None


def _is_logs(request: Any) -> bool:
    return isinstance(request, (ExportLogsServiceRequest, LogsData)) or hasattr(
        request, "resource_logs"
    )


def encode_for_file(
    request: Any, format: Format = "json", compression: Compression = None
) -> bytes:
    """The bytes one request takes in a file of the given format and compression."""
    if format == "json":
        data = logs_json_line(request) if _is_logs(request) else json_line(request)
    elif format == "proto":
        data = request.SerializeToString()
    else:
        raise ValueError(f"unknown format {format!r}: use 'json' or 'proto'")
    if compression == "zstd":
        return frame(zstandard.ZstdCompressor().compress(data))
    if format == "proto":
        return frame(data)
    return data


class OtlpFileWriter:
    """Appends OTLP requests (traces or logs) to a file; thread-safe.

    With ``max_bytes``, once the file reaches that size it is renamed to
    ``<stem>-<n><suffix>`` (n = 1, 2, ...) and a fresh file is started at ``path``.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        format: Format = "json",
        compression: Compression = None,
        max_bytes: int | None = None,
    ) -> None:
        if format not in ("json", "proto"):
            raise ValueError(f"unknown format {format!r}: use 'json' or 'proto'")
        if compression not in (None, "zstd", "zstd-stream", "gzip"):
            raise ValueError(
                f"unknown compression {compression!r}: use None, 'zstd', 'zstd-stream' or 'gzip'"
            )
        self.path = os.fspath(path)
        self.format: Format = format
        self.compression: Compression = compression
        self.max_bytes = max_bytes
        self.rotated: list[str] = []
        self._lock = threading.Lock()
        self._raw: IO[bytes] | None = None
        self._stream: Any = None
        self._open()

    def _open(self) -> None:
        self._raw = open(self.path, "ab")  # noqa: SIM115 - owned by the writer
        if self.compression == "gzip":
            self._stream = gzip.GzipFile(fileobj=self._raw, mode="ab")
        elif self.compression == "zstd-stream":
            self._stream = zstandard.ZstdCompressor().stream_writer(self._raw, closefd=False)
        else:
            self._stream = self._raw

    def _close_current(self) -> None:
        if self._stream is not None and self._stream is not self._raw:
            self._stream.close()
        if self._raw is not None:
            self._raw.close()
        self._stream = self._raw = None

    def write(self, request: Any) -> None:
        """Append one ``ExportTraceServiceRequest``/``TracesData`` or logs request."""
        data = encode_for_file(request, self.format, self.compression)
        with self._lock:
            if self._raw is None:
                raise ValueError("write to a closed OtlpFileWriter")
            self._stream.write(data)
            if self.max_bytes is not None:
                if self._stream is not self._raw:
                    self._stream.flush()
                if self._raw.tell() >= self.max_bytes:
                    self._rotate()

    def write_spans(self, spans: Iterable[Span]) -> None:
        """Append ``spans`` as one request (grouped by resource and scope)."""
        self.write(encode_request(spans))

    def _rotate(self) -> None:
        self._close_current()
        stem, suffix = _split_suffix(self.path)
        n = len(self.rotated) + 1
        while os.path.exists(target := f"{stem}-{n}{suffix}"):
            n += 1
        os.replace(self.path, target)
        self.rotated.append(target)
        self._open()

    def flush(self) -> None:
        with self._lock:
            if self._stream is not None:
                self._stream.flush()
                if self._stream is not self._raw and self._raw is not None:
                    self._raw.flush()

    def close(self) -> None:
        with self._lock:
            self._close_current()

    def __enter__(self) -> OtlpFileWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _split_suffix(path: str) -> tuple[str, str]:
    """``dir/traces.otlp.jsonl`` -> (``dir/traces``, ``.otlp.jsonl``)."""
    head, name = os.path.split(path)
    dot = name.find(".", 1)
    if dot < 0:
        return path, ""
    return os.path.join(head, name[:dot]), name[dot:]
