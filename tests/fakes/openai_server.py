"""A local OpenAI-compatible HTTP server with scripted replies and fault injection, for tests.

It listens on a real loopback socket, so the real `openai` client (httpx2 underneath)
talks to it exactly as to a remote endpoint.

API
---
    server = FakeOpenAI().start()      # or: with FakeOpenAI() as server: ...
    server.url                         # "http://127.0.0.1:<port>/v1" -> settings.llm_base_url
    server.reply("Paris is the capital [1].")   # queue one scripted completion
    server.reply('{"label": "supported"}')      # JSON text for json_mode callers
    server.error(429)                  # queue an HTTP error (429, 500, 401 ...); the openai
                                       #   client retries 408/409/429/5xx; a `retry-after-ms`
                                       #   header (default 1 ms) keeps those retries fast
    server.slow(2.0, "late text")      # queue a reply sent after 2 s (client timeouts)
    server.malformed()                 # queue a 200 reply whose body is not JSON
    server.empty_choices()             # queue a 200 completion with "choices": []
    server.empty_content()             # queue a 200 completion whose message content is null
    server.respond_with(fn)            # fallback when the queue is empty:
                                       #   fn(body: dict) -> str, body = the request JSON
    server.requests                    # every /chat/completions request received, in order,
                                       #   retries included, as Recorded(path, headers, body)
    server.prompts()                   # [(system text, user text)] per request
    server.pending                     # scripted replies not yet consumed
    server.stop()                      # closes the socket: later calls get "connection refused"

Each POST /v1/chat/completions (also /chat/completions) takes the next scripted reply;
with the queue empty it uses the `respond_with` function, or else answers 400
"fake server: no scripted reply left" (not retried, so a test fails loudly).
GET /v1/models lists one model. Faults consume one queue entry per HTTP attempt, so
`error(429); reply("ok")` is "one 429, then success after the client retries".
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass(frozen=True)
class Recorded:
    """One request the fake received."""

    path: str
    headers: dict[str, str]
    body: dict[str, Any]


@dataclass
class _Scripted:
    kind: str  # text | error | malformed | empty_choices | empty_content
    text: str = ""
    status: int = 200
    delay: float = 0.0
    headers: dict[str, str] = field(default_factory=dict)


class FakeOpenAI:
    """An OpenAI-compatible chat completions server on 127.0.0.1 (see the module docstring)."""

    def __init__(self, model: str = "fake-model"):
        self.model = model
        self.requests: list[Recorded] = []
        self._queue: deque[_Scripted] = deque()
        self._fallback: Callable[[dict[str, Any]], str] | None = None
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._counter = 0

    # --- lifecycle
    def start(self) -> FakeOpenAI:
        server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        server.daemon_threads = True
        server.fake = self  # type: ignore[attr-defined]
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever, args=(0.05,), name="fake-openai", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()  # wakes slow replies
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> FakeOpenAI:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        if self._server is None:
            raise RuntimeError("FakeOpenAI is not started")
        return self._server.server_address[1]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    # --- scripting
    def reply(self, text: str, *, delay: float = 0.0) -> FakeOpenAI:
        return self._push(_Scripted("text", text=text, delay=delay))

    def error(
        self, status: int, message: str = "", *, retry_after_ms: int | None = 1
    ) -> FakeOpenAI:
        headers = {"retry-after-ms": str(retry_after_ms)} if retry_after_ms is not None else {}
        text = message or f"fake server error {status}"
        return self._push(_Scripted("error", text=text, status=status, headers=headers))

    def slow(self, seconds: float, text: str = "slow reply") -> FakeOpenAI:
        return self._push(_Scripted("text", text=text, delay=seconds))

    def malformed(self) -> FakeOpenAI:
        return self._push(_Scripted("malformed"))

    def empty_choices(self) -> FakeOpenAI:
        return self._push(_Scripted("empty_choices"))

    def empty_content(self) -> FakeOpenAI:
        return self._push(_Scripted("empty_content"))

    def respond_with(self, fn: Callable[[dict[str, Any]], str] | None) -> FakeOpenAI:
        self._fallback = fn
        return self

    @property
    def pending(self) -> int:
        with self._lock:
            return len(self._queue)

    def prompts(self) -> list[tuple[str, str]]:
        """(system, user) message texts of each chat request received."""
        out = []
        for r in self.requests:
            messages = r.body.get("messages", [])
            system = "\n".join(m.get("content", "") for m in messages if m.get("role") == "system")
            user = "\n".join(m.get("content", "") for m in messages if m.get("role") == "user")
            out.append((system, user))
        return out

    def _push(self, item: _Scripted) -> FakeOpenAI:
        with self._lock:
            self._queue.append(item)
        return self

    # --- serving (called from handler threads)
    def _next(self, body: dict[str, Any]) -> _Scripted:
        with self._lock:
            if self._queue:
                return self._queue.popleft()
            fallback = self._fallback
        if fallback is not None:
            return _Scripted("text", text=fallback(body))
        return _Scripted("error", text="fake server: no scripted reply left", status=400)

    def _completion(self, text: str | None, choices: bool = True) -> dict[str, Any]:
        with self._lock:
            self._counter += 1
            n = self._counter
        message = {"role": "assistant", "content": text}
        return {
            "id": f"chatcmpl-fake-{n}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": self.model,
            "choices": [{"index": 0, "message": message, "finish_reason": "stop"}]
            if choices
            else [],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
        }


class _Handler(BaseHTTPRequestHandler):
    server_version = "FakeOpenAI/1.0"

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    @property
    def fake(self) -> FakeOpenAI:
        return self.server.fake  # type: ignore[attr-defined]

    def do_GET(self) -> None:
        if self.path.rstrip("/").endswith("/models"):
            self._send(
                200, {"object": "list", "data": [{"id": self.fake.model, "object": "model"}]}
            )
        else:
            self._send(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        if not self.path.rstrip("/").endswith("/chat/completions"):
            self._send(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})
            return
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            self._send(
                400,
                {"error": {"message": "request body is not JSON", "type": "invalid_request_error"}},
            )
            return
        fake = self.fake
        fake.requests.append(
            Recorded(self.path, {k.lower(): v for k, v in self.headers.items()}, body)
        )
        item = fake._next(body)
        if item.delay and fake._stopping.wait(item.delay):
            return  # server stopping: drop the reply
        try:
            if item.kind == "text":
                self._send(200, fake._completion(item.text))
            elif item.kind == "error":
                error = {
                    "error": {"message": item.text, "type": "fake_error", "code": str(item.status)}
                }
                self._send(item.status, error, item.headers)
            elif item.kind == "malformed":
                self._send_raw(200, b'{"id": "chatcmpl-broken", "choices": [', "application/json")
            elif item.kind == "empty_choices":
                self._send(200, fake._completion("", choices=False))
            elif item.kind == "empty_content":
                self._send(200, fake._completion(None))
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (timeout) before the reply

    def _send(
        self, status: int, payload: dict[str, Any], headers: dict[str, str] | None = None
    ) -> None:
        self._send_raw(status, json.dumps(payload).encode(), "application/json", headers)

    def _send_raw(
        self, status: int, data: bytes, ctype: str, headers: dict[str, str] | None = None
    ) -> None:
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)
