"""A scripted OpenAI-compatible model server on loopback.

The server answers ``POST /v1/chat/completions`` (JSON or ``stream: true`` server-sent events)
and ``POST /v1/responses`` from a script: a list of ``Step``s, one per model request, taken in
order. A step either asks for tool calls (``Calls``) or answers with text (``Reply``). Every
request is kept (``requests``) so a recording script can check what the framework sent.

No framework's private API is used: frameworks reach the server through their documented
``base_url`` / ``api_base`` setting and any API key.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass(frozen=True)
class Call:
    """One tool call the model asks for."""

    name: str
    args: dict[str, Any]
    call_id: str


@dataclass(frozen=True)
class Calls:
    """A model response asking for these calls (parallel calls when there are several)."""

    calls: tuple[Call, ...]
    text: str = ""


@dataclass(frozen=True)
class Reply:
    """A model response with text only: the agent's reply."""

    text: str


Step = Calls | Reply


@dataclass
class Script:
    """The steps of a scenario, consumed one per model request."""

    steps: list[Step]
    position: int = 0
    requests: list[dict[str, Any]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def next_step(self, request: dict[str, Any]) -> Step:
        with self.lock:
            self.requests.append(request)
            if self.position >= len(self.steps):
                raise ScriptExhausted(
                    f"request {len(self.requests)} came after the script's {len(self.steps)} steps"
                )
            step = self.steps[self.position]
            self.position += 1
            return step


class ScriptExhausted(RuntimeError):
    """The framework made more model requests than the scenario scripted."""


MODEL = "scripted-model"
_USAGE = {"prompt_tokens": 50, "completion_tokens": 10, "total_tokens": 60}


def _chat_message(step: Step) -> dict[str, Any]:
    if isinstance(step, Reply):
        return {"role": "assistant", "content": step.text}
    return {
        "role": "assistant",
        "content": step.text or None,
        "tool_calls": [
            {
                "id": call.call_id,
                "type": "function",
                "function": {"name": call.name, "arguments": json.dumps(call.args)},
            }
            for call in step.calls
        ],
    }


def chat_completion(step: Step, created: int) -> dict[str, Any]:
    """The non-streaming chat completion of a step."""
    return {
        "id": f"chatcmpl-{created}",
        "object": "chat.completion",
        "created": created,
        "model": MODEL,
        "choices": [
            {
                "index": 0,
                "message": _chat_message(step),
                "finish_reason": "stop" if isinstance(step, Reply) else "tool_calls",
            }
        ],
        "usage": dict(_USAGE),
    }


def chat_chunks(step: Step, created: int, usage: bool) -> Iterator[dict[str, Any]]:
    """The streamed chunks of a step: role, text, each call's name then arguments, the end."""
    base = {
        "id": f"chatcmpl-{created}",
        "object": "chat.completion.chunk",
        "created": created,
        "model": MODEL,
    }

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    yield chunk({"role": "assistant", "content": ""})
    if isinstance(step, Reply):
        yield chunk({"content": step.text})
        yield chunk({}, "stop")
    else:
        if step.text:
            yield chunk({"content": step.text})
        for index, call in enumerate(step.calls):
            yield chunk(
                {
                    "tool_calls": [
                        {
                            "index": index,
                            "id": call.call_id,
                            "type": "function",
                            "function": {"name": call.name, "arguments": ""},
                        }
                    ]
                }
            )
            yield chunk(
                {"tool_calls": [{"index": index, "function": {"arguments": json.dumps(call.args)}}]}
            )
        yield chunk({}, "tool_calls")
    if usage:
        yield {**base, "choices": [], "usage": dict(_USAGE)}


def response_object(step: Step, created: int) -> dict[str, Any]:
    """The OpenAI Responses API object of a step (``function_call`` items or a message)."""
    output: list[dict[str, Any]] = []
    if isinstance(step, Reply) or step.text:
        output.append(
            {
                "type": "message",
                "id": f"msg_{created}",
                "status": "completed",
                "role": "assistant",
                "content": [{"type": "output_text", "text": step.text, "annotations": []}],
            }
        )
    if isinstance(step, Calls):
        for call in step.calls:
            output.append(
                {
                    "type": "function_call",
                    "id": f"fc_{call.call_id}",
                    "call_id": call.call_id,
                    "name": call.name,
                    "arguments": json.dumps(call.args),
                    "status": "completed",
                }
            )
    return {
        "id": f"resp_{created}",
        "object": "response",
        "created_at": created,
        "status": "completed",
        "model": MODEL,
        "output": output,
        "usage": {
            "input_tokens": 50,
            "output_tokens": 10,
            "total_tokens": 60,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens_details": {"reasoning_tokens": 0},
        },
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
    }


class ScriptedModel:
    """The server: ``with ScriptedModel(steps) as model: ... model.base_url ...``."""

    def __init__(self, steps: list[Step]) -> None:
        self.script = Script(list(steps))
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    @property
    def requests(self) -> list[dict[str, Any]]:
        return self.script.requests

    def done(self) -> bool:
        """Whether every step was used."""
        return self.script.position == len(self.script.steps)

    def __enter__(self) -> ScriptedModel:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        script = self.script

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:  # quiet
                pass

            def do_GET(self) -> None:
                self._json(200, {"object": "list", "data": [{"id": MODEL, "object": "model"}]})

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                request = json.loads(self.rfile.read(length) or b"{}")
                try:
                    step = script.next_step(request)
                except ScriptExhausted as exc:
                    self._json(500, {"error": {"message": str(exc), "type": "server_error"}})
                    return
                created = int(time.time())
                if self.path.rstrip("/").endswith("/responses"):
                    self._json(200, response_object(step, created))
                elif request.get("stream"):
                    usage = bool((request.get("stream_options") or {}).get("include_usage"))
                    self._events(chat_chunks(step, created, usage))
                else:
                    self._json(200, chat_completion(step, created))

            def _json(self, status: int, body: dict[str, Any]) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _events(self, chunks: Iterator[dict[str, Any]]) -> None:
                data = (
                    b"".join(b"data: " + json.dumps(c).encode() + b"\n\n" for c in chunks)
                    + b"data: [DONE]\n\n"
                )
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        return Handler
