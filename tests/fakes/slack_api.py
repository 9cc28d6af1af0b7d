"""A fake Slack Web API on a real loopback socket: records every call, answers like Slack,
and can inject 429 (with Retry-After), 500 and `ok: false` errors.

Serves `auth.test`, `chat.postMessage`, `chat.postEphemeral`, `chat.update`, `reactions.add`,
`reactions.remove`, `users.info` under `<url>/api/`, and slash-command `response_url`s under
`<url>/respond/...`. Start it with `with FakeSlackAPI() as api:`; point clients at `api.api_url`.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs

BOT_USER_ID = "UBOT"
BOT_ID = "BBOT"
TEAM_ID = "T0001"


@dataclass
class Call:
    """One request the fake received; `body` is the parsed form or JSON body."""

    method: str  # "chat.postMessage", or "respond" for response_url posts
    path: str
    body: dict[str, Any]
    headers: dict[str, str]
    status: int = 200  # what the fake answered
    response: Any = None  # and the body it answered with


@dataclass
class _Fault:
    method: str
    status: int
    retry_after: int | None
    error: str
    times: int


@dataclass
class FakeSlackAPI:
    """The fake server. `calls` lists every request in arrival order (thread-safe to read)."""

    admins: set[str] = field(default_factory=set)  # users.info says is_admin for these
    calls: list[Call] = field(default_factory=list)
    _faults: list[_Fault] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _ts: itertools.count = field(default_factory=lambda: itertools.count(1))

    # --- lifecycle
    def __enter__(self) -> FakeSlackAPI:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> None:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server API)
                fake._handle(self)

            do_GET = do_POST  # users.info is a GET

            def log_message(self, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.05,), daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(5)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    @property
    def api_url(self) -> str:
        return self.url + "/api/"

    def response_url(self, name: str = "1") -> str:
        return f"{self.url}/respond/{name}"

    # --- fault injection
    def fail(self, method: str, status: int = 500, times: int = 1, retry_after: int | None = None,
             error: str = "") -> None:
        """The next `times` calls of `method` get `status` (429 adds Retry-After), or `ok: false`
        with `error` when error is given (status 200, as Slack does)."""
        with self._lock:
            self._faults.append(_Fault(method, status, retry_after, error, times))

    # --- reading what happened
    def of(self, method: str) -> list[Call]:
        """Successful calls of `method`, in order."""
        with self._lock:
            return [c for c in self.calls if c.method == method and c.status == 200 and not c.body.get("_failed")]

    def attempts(self, method: str) -> list[Call]:
        """Every call of `method`, failed ones included."""
        with self._lock:
            return [c for c in self.calls if c.method == method]

    async def wait_for(self, method: str, count: int = 1, timeout: float = 20.0) -> list[Call]:
        """Wait (without blocking the loop) until `count` successful calls of `method` arrived."""
        deadline = time.monotonic() + timeout
        while len(self.of(method)) < count:
            if time.monotonic() > deadline:
                raise AssertionError(f"expected {count} call(s) of {method}, got {self.of(method)!r}; "
                                     f"all calls: {[c.method for c in self.calls]}")
            await asyncio.sleep(0.02)
        return self.of(method)

    # --- the server side
    def _handle(self, request: BaseHTTPRequestHandler) -> None:
        length = int(request.headers.get("Content-Length") or 0)
        raw = request.rfile.read(length).decode("utf-8") if length else ""
        ctype = request.headers.get("Content-Type", "")
        if "json" in ctype and raw:
            body = json.loads(raw)
        else:
            body = {k: v[0] if len(v) == 1 else v for k, v in parse_qs(raw).items()}
        path, _, query = request.path.partition("?")
        body = {k: v[0] if len(v) == 1 else v for k, v in parse_qs(query).items()} | body  # params= go here
        method = "respond" if path.startswith("/respond/") else path.rsplit("/", 1)[-1]
        call = Call(method, path, body, dict(request.headers.items()))
        status, headers, payload = self._reply(call)
        call.status, call.response = status, payload
        with self._lock:
            self.calls.append(call)
        data = payload.encode() if isinstance(payload, str) else json.dumps(payload).encode()
        request.send_response(status)
        request.send_header("Content-Type", "text/plain" if isinstance(payload, str) else "application/json")
        request.send_header("Content-Length", str(len(data)))
        for k, v in headers.items():
            request.send_header(k, v)
        request.end_headers()
        request.wfile.write(data)

    def _reply(self, call: Call) -> tuple[int, dict[str, str], Any]:
        with self._lock:
            fault = next((f for f in self._faults if f.method == call.method and f.times > 0), None)
            if fault:
                fault.times -= 1
        if fault and fault.error:
            call.body["_failed"] = True
            return 200, {}, {"ok": False, "error": fault.error}
        if fault:
            headers = {"Retry-After": str(fault.retry_after)} if fault.retry_after is not None else {}
            return fault.status, headers, {"ok": False, "error": "ratelimited" if fault.status == 429 else "fatal_error"}
        body = call.body
        if call.method == "respond":
            return 200, {}, "ok"
        if call.method == "auth.test":
            return 200, {}, {"ok": True, "url": "https://ravbot-test.slack.com/", "team": "Test", "user": "ravbot",
                             "team_id": TEAM_ID, "user_id": BOT_USER_ID, "bot_id": BOT_ID, "is_enterprise_install": False}
        if call.method in ("chat.postMessage", "chat.update"):
            ts = body.get("ts") or f"1700000000.{next(self._ts):06d}"
            message = {"type": "message", "user": BOT_USER_ID, "bot_id": BOT_ID, "ts": ts,
                       "text": body.get("text", ""), "blocks": body.get("blocks", [])}
            if body.get("thread_ts"):
                message["thread_ts"] = body["thread_ts"]
            return 200, {}, {"ok": True, "channel": body.get("channel"), "ts": ts, "message": message}
        if call.method == "chat.postEphemeral":
            return 200, {}, {"ok": True, "message_ts": f"1700000000.{next(self._ts):06d}"}
        if call.method in ("reactions.add", "reactions.remove"):
            return 200, {}, {"ok": True}
        if call.method == "users.info":
            user = str(body.get("user", ""))
            return 200, {}, {"ok": True, "user": {"id": user, "name": user.lower(), "is_admin": user in self.admins,
                                                  "is_owner": False, "is_bot": False}}
        return 200, {}, {"ok": False, "error": "unknown_method"}
