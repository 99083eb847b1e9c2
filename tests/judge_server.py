"""A scripted judge model on loopback: an OpenAI-compatible and Anthropic-compatible server
that the judge tests start, script and inspect.

API (``from judge_server import JudgeServer, judge_server_fixture, verdict, text, status``;
the fixture's name in a test is ``judge_server``):

- ``server = JudgeServer()`` / ``server.start()`` / ``server.stop()``, or the ``judge_server``
  fixture, which starts one on ``127.0.0.1:0`` per test and stops it at teardown (requests still
  waiting are woken and answered, so teardown never hangs).
- ``server.openai_url`` (``http://127.0.0.1:PORT/v1``, an OpenAI ``base_url``) and
  ``server.anthropic_url`` (``http://127.0.0.1:PORT``, an Anthropic ``base_url``).
- ``server.script(reply, ...)``: the answers to the next requests, in order; once they are used
  up every request gets ``server.default`` (a passing verdict). A reply is a :class:`Reply`;
  the helpers :func:`verdict`, :func:`text` and :func:`status` make one.
- ``server.requests``: every request received (:class:`Received`: path, parsed JSON body, the
  prompt, headers with lower-case names, arrival time on ``time.monotonic()``); ``server.count``.
  ``Received.system`` is the request's system message (OpenAI's ``system`` role, Anthropic's
  ``system``), ``Received.text`` every message's text in the order the model reads them.
- ``never()``: a reply that never comes (the request waits until the server stops), for a
  judge server that accepts and never answers. ``tool_verdict(...)``: a verdict an Anthropic
  answer gives as a call of the request's first tool (OpenAI answers get it as text).
- ``server.refuse_structured_output = True``: a request with ``response_format`` gets an
  HTTP 400 naming it, as a compatible server without structured output answers.
- ``server.peak_in_flight``: the most requests being answered at one moment.
- ``server.hold_until(n, total=..., max_wait_s=..., linger_s=...)``: each request waits until
  ``n`` are in flight, or ``total`` requests have arrived (the last few of a batch), or
  ``max_wait_s`` passed, then ``linger_s`` more, before it is answered: so requests sent
  together overlap, and a client that sends more than it may at once shows a peak above its
  bound.
"""

from __future__ import annotations

import http.client
import json
import threading
import time
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest


@dataclass(frozen=True)
class Reply:
    """One scripted answer: a status, the model's text (for a 200), headers, a delay."""

    status: int = 200
    text: str = ""
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0
    input_tokens: int = 100
    output_tokens: int = 20
    #: Anthropic: answer with a call of the request's first tool, ``text`` (JSON) its input.
    as_tool: bool = False


def verdict(
    passed: bool = True, score: float | None = None, reasoning: str = "ok", **kw: Any
) -> Reply:
    """A 200 whose text is a well-formed verdict."""
    body = {
        "passed": passed,
        "score": (1.0 if passed else 0.0) if score is None else score,
        "reasoning": reasoning,
    }
    return Reply(text=json.dumps(body), **kw)


def text(answer: str, **kw: Any) -> Reply:
    """A 200 whose text is ``answer`` as given (a malformed verdict, say)."""
    return Reply(text=answer, **kw)


def status(code: int, headers: dict[str, str] | None = None, **kw: Any) -> Reply:
    """An error status with an error body in the APIs' shape."""
    return Reply(status=code, headers=headers or {}, **kw)


#: Seconds a :func:`never` reply waits (the server's stop wakes it first).
NEVER_S = 24 * 3600.0


def never(**kw: Any) -> Reply:
    """A reply that is never sent: the request is held until the server stops."""
    return Reply(text="", delay_s=NEVER_S, **kw)


def tool_verdict(passed: bool = True, score: float | None = None, reasoning: str = "ok") -> Reply:
    """A verdict that an Anthropic answer gives as a ``tool_use`` block calling the request's
    first tool, with the verdict as its input."""
    return replace(verdict(passed, score, reasoning), as_tool=True)


@dataclass(frozen=True)
class Received:
    """One request as the server saw it."""

    path: str
    body: dict[str, Any]
    headers: dict[str, str]
    at: float

    @property
    def prompt(self) -> str:
        """The text of the request's user message."""
        return _content_text(self.body["messages"][-1]["content"])

    @property
    def system(self) -> str | None:
        """The request's system message: Anthropic's ``system``, or the text of OpenAI's
        ``system`` (or ``developer``) messages; ``None`` when it has none."""
        if "system" in self.body:
            return _content_text(self.body["system"])
        found = [
            _content_text(message["content"])
            for message in self.body.get("messages", [])
            if message.get("role") in ("system", "developer")
        ]
        return "\n\n".join(found) if found else None

    @property
    def text(self) -> str:
        """Every message's text, in the order the model reads them: the system message first,
        then each message (separated by a blank line)."""
        parts = [self.body["system"]] if "system" in self.body else []
        parts += [message["content"] for message in self.body.get("messages", [])]
        return "\n\n".join(_content_text(part) for part in parts)


def _content_text(content: Any) -> str:
    """A message content's text: a string, or the text of a list of content parts."""
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content)
    return str(content)


class JudgeServer:
    """See the module docstring."""

    def __init__(self) -> None:
        self.default = verdict(True, 1.0, "default answer")
        #: answer a request that asks for ``response_format`` with an HTTP 400 naming it
        self.refuse_structured_output = False
        self.requests: list[Received] = []
        self.peak_in_flight = 0
        self._in_flight = 0
        self._script: deque[Reply] = deque()
        self._changed = threading.Condition()
        self._stopping = threading.Event()
        self._hold: tuple[int, int | None, float, float] | None = None
        self._http: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- scripting and reading ----------------------------------------------------------------

    def script(self, *replies: Reply) -> None:
        with self._changed:
            self._script.extend(replies)

    def hold_until(
        self, n: int, *, total: int | None = None, max_wait_s: float = 30.0, linger_s: float = 0.0
    ) -> None:
        with self._changed:
            self._hold = (n, total, max_wait_s, linger_s)

    def release(self, timeout: float = 60.0) -> None:
        """Send a request of the test's own: it completes the held batch's ``total``, so the
        held replies go."""
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        body = {"model": "release", "messages": [{"role": "user", "content": "release"}]}
        try:
            connection.request(
                "POST",
                "/v1/chat/completions",
                body=json.dumps(body).encode(),
                headers={"Content-Type": "application/json"},
            )
            assert connection.getresponse().status == 200
        finally:
            connection.close()

    @property
    def count(self) -> int:
        with self._changed:
            return len(self.requests)

    @property
    def openai_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def anthropic_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def port(self) -> int:
        assert self._http is not None, "the server is not started"
        return int(self._http.server_address[1])

    # -- life ---------------------------------------------------------------------------------

    def start(self) -> JudgeServer:
        handler = type("Handler", (_Handler,), {"owner": self})
        self._http = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._http.daemon_threads = True
        self._thread = threading.Thread(
            target=self._http.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        with self._changed:
            self._changed.notify_all()
        if self._http is not None:
            self._http.shutdown()
            self._http.server_close()
        if self._thread is not None:
            self._thread.join(timeout=10)

    # -- answering (called by the handler's threads) --------------------------------------------

    def _answer(self, path: str, body: dict[str, Any], headers: dict[str, str]) -> Reply:
        with self._changed:
            self.requests.append(
                Received(path=path, body=body, headers=headers, at=time.monotonic())
            )
            self._in_flight += 1
            self.peak_in_flight = max(self.peak_in_flight, self._in_flight)
            self._changed.notify_all()
            if self.refuse_structured_output and "response_format" in body:
                reply = Reply(status=400, text="response_format json_schema is not supported")
            else:
                reply = self._script.popleft() if self._script else self.default
            hold = self._hold
            if hold is not None:
                n, total, max_wait_s, _ = hold
                self._changed.wait_for(
                    lambda: (
                        self._in_flight >= n
                        or (total is not None and len(self.requests) >= total)
                        or self._stopping.is_set()
                    ),
                    timeout=max_wait_s,
                )
        if hold is not None and hold[3]:
            self._stopping.wait(hold[3])
        if reply.delay_s:
            self._stopping.wait(reply.delay_s)
        return reply

    def _done(self) -> None:
        with self._changed:
            self._in_flight -= 1
            self._changed.notify_all()


class _Handler(BaseHTTPRequestHandler):
    owner: JudgeServer
    #: keep-alive, as real endpoints: a client reuses its connections
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    def do_POST(self) -> None:  # noqa: N802 (http.server's name)
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        body = json.loads(raw or b"{}")
        path = self.path.split("?", 1)[0]
        headers = {name.lower(): value for name, value in self.headers.items()}
        reply = self.owner._answer(path, body, headers)
        try:
            self._send(path, body, reply)
        except OSError:  # the client gave up (a timeout): nothing to answer
            pass
        finally:
            self.owner._done()

    def _send(self, path: str, body: dict[str, Any], reply: Reply) -> None:
        if path == "/v1/chat/completions":
            payload = _openai(body, reply)
        elif path == "/v1/messages":
            payload = _anthropic(body, reply)
        else:
            reply = Reply(status=404)
            payload = {"error": {"type": "not_found_error", "message": f"no route {path}"}}
        data = json.dumps(payload).encode()
        self.send_response(reply.status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in reply.headers.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)


def _openai(body: dict[str, Any], reply: Reply) -> dict[str, Any]:
    if reply.status != 200:
        return {
            "error": {
                "message": reply.text or f"scripted status {reply.status}",
                "type": "scripted",
                "code": None,
                "param": None,
            }
        }
    return {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "created": 0,
        "model": body.get("model", ""),
        "choices": [
            {
                "index": 0,
                "finish_reason": "stop",
                "message": {"role": "assistant", "content": reply.text},
            }
        ],
        "usage": {
            "prompt_tokens": reply.input_tokens,
            "completion_tokens": reply.output_tokens,
            "total_tokens": reply.input_tokens + reply.output_tokens,
        },
    }


def _anthropic(body: dict[str, Any], reply: Reply) -> dict[str, Any]:
    if reply.status != 200:
        return {
            "type": "error",
            "error": {"type": "scripted", "message": f"scripted status {reply.status}"},
        }
    return {
        "id": "msg_test",
        "type": "message",
        "role": "assistant",
        "model": body.get("model", ""),
        "content": [_anthropic_block(body, reply)],
        "stop_reason": "tool_use" if reply.as_tool else "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": reply.input_tokens, "output_tokens": reply.output_tokens},
    }


def _anthropic_block(body: dict[str, Any], reply: Reply) -> dict[str, Any]:
    if not reply.as_tool:
        return {"type": "text", "text": reply.text}
    (tool, *_) = body["tools"]
    return {
        "type": "tool_use",
        "id": "toolu_test",
        "name": tool["name"],
        "input": json.loads(reply.text),
    }


@pytest.fixture(name="judge_server")
def judge_server_fixture(
    monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[JudgeServer]:
    """A started :class:`JudgeServer`, stopped at teardown. The SDKs see test keys, no base URL
    of the environment, no proxy for loopback, and a default cache under a temporary dir."""
    for name in ("OPENAI_BASE_URL", "ANTHROPIC_BASE_URL", "OPENAI_ORG_ID", "OPENAI_PROJECT_ID"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("xdg-cache")))
    server = JudgeServer().start()
    try:
        yield server
    finally:
        server.stop()
