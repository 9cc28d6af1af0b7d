"""A scripted OpenAI-compatible chat endpoint on 127.0.0.1 that replies with each case's given answer.

`ravbot eval check` puts it behind ravbot so that the real `openai` client and the real pipeline run
unchanged: ravbot sends its usual prompt, and the server finds the case whose question text occurs
in the user message and replies with that case's `faithful` or `corrupted` answer (per `mode`).

- A correction request (the user message holds "Here is your previous answer:") gets `faithful`.
- An out-of-scope case (or a prompt naming no known question) gets ravbot's IDK sentence.
- A JSON-mode request (the `llm` verifier) gets HTTP 400: the scripted answers are not a verifier.

Every chat request is recorded by case id and kind ("draft", "correction", "unmatched", "json"),
so a harness can tell whether a question reached the LLM at all.
"""

from __future__ import annotations

import json
import threading
from collections import Counter
from collections.abc import Iterable, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from pipeline.types import IDK

CORRECTION_MARK = "Here is your previous answer:"
MODES = ("faithful", "corrupted")


def _clean(text: str) -> str:
    return " ".join(str(text).split())


class ScriptedLLM:
    """Owns one ThreadingHTTPServer on a random loopback port (see the module docstring)."""

    def __init__(self, cases: Iterable[Mapping[str, Any]], model: str = "scripted"):
        self.model = model
        self.cases = {c["id"]: c for c in cases}
        # longest question first, so a question contained in a longer one never steals its prompts
        self._questions = sorted(((_clean(c["question"]), cid) for cid, c in self.cases.items()),
                                 key=lambda qc: -len(qc[0]))
        self.mode = "faithful"
        self.requests: list[tuple[str, str]] = []  # (case id or "", kind), in arrival order
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None

    # --- lifecycle
    def start(self) -> ScriptedLLM:
        server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        server.daemon_threads = True
        server.scripted = self  # type: ignore[attr-defined]
        self._server = server
        threading.Thread(target=server.serve_forever, args=(0.05,), name="scripted-llm", daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> ScriptedLLM:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def url(self) -> str:
        if self._server is None:
            raise RuntimeError("ScriptedLLM is not started")
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    # --- bookkeeping
    def set_mode(self, mode: str) -> None:
        if mode not in MODES:
            raise ValueError(f"unknown mode {mode!r}; expected one of {', '.join(MODES)}")
        self.mode = mode

    def count(self, case_id: str, kind: str | None = None) -> int:
        """Requests received so far for `case_id` (of one kind, or all kinds)."""
        with self._lock:
            return sum(1 for cid, k in self.requests if cid == case_id and (kind is None or k == kind))

    def kinds(self) -> Counter:
        with self._lock:
            return Counter(k for _, k in self.requests)

    # --- replies
    def find_case(self, prompt: str) -> str:
        """The id of the case whose question occurs in `prompt`, or ""."""
        text = _clean(prompt)
        for question, cid in self._questions:
            if question and question in text:
                return cid
        return ""

    def reply(self, body: Mapping[str, Any]) -> tuple[int, str]:
        """(HTTP status, reply text) for one chat completion request; records it."""
        messages = body.get("messages") or []
        user = "\n".join(str(m.get("content") or "") for m in messages if m.get("role") == "user")
        if (body.get("response_format") or {}).get("type") == "json_object":
            self._record("", "json")
            return 400, "scripted LLM: JSON-mode requests (the `llm` verifier) are not scripted"
        cid = self.find_case(user)
        correction = CORRECTION_MARK in user
        self._record(cid, "unmatched" if not cid else "correction" if correction else "draft")
        case = self.cases.get(cid)
        if case is None or case.get("out_of_scope"):
            return 200, IDK
        return 200, case["faithful"] if correction else case[self.mode]

    def _record(self, cid: str, kind: str) -> None:
        with self._lock:
            self.requests.append((cid, kind))


class _Handler(BaseHTTPRequestHandler):
    server_version = "ScriptedLLM/1.0"

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    def do_GET(self) -> None:
        scripted: ScriptedLLM = self.server.scripted  # type: ignore[attr-defined]
        if self.path.rstrip("/").endswith("/models"):
            self._send(200, {"object": "list", "data": [{"id": scripted.model, "object": "model"}]})
        else:
            self._send(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})

    def do_POST(self) -> None:
        scripted: ScriptedLLM = self.server.scripted  # type: ignore[attr-defined]
        raw = self.rfile.read(int(self.headers.get("content-length") or 0))
        if not self.path.rstrip("/").endswith("/chat/completions"):
            self._send(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})
            return
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            self._send(400, {"error": {"message": "request body is not JSON", "type": "invalid_request_error"}})
            return
        status, text = scripted.reply(body)
        if status != 200:
            self._send(status, {"error": {"message": text, "type": "invalid_request_error"}})
            return
        self._send(200, {
            "id": f"chatcmpl-scripted-{len(scripted.requests)}", "object": "chat.completion", "created": 0,
            "model": scripted.model,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
        })

    def _send(self, status: int, payload: dict[str, Any]) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        try:
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass
