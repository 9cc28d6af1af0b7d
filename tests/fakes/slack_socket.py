"""A fake Slack for Socket Mode on real loopback sockets: the Web API of `FakeSlackAPI` plus
`apps.connections.open` and a websocket endpoint speaking Slack's envelope protocol.

Protocol (as Slack documents it): the app calls `apps.connections.open` with its app-level token
(`xapp-...`) and gets a `wss://` URL; on connecting it receives `{"type": "hello"}`; then
envelopes `{"envelope_id", "type": "events_api" | "slash_commands" | "interactive", "payload",
"accepts_response_payload", "retry_attempt", "retry_reason"}`, each acknowledged by the app with
`{"envelope_id", "payload"?}`. `{"type": "disconnect", "reason": "refresh_requested"}` asks the
app to open a new connection (Slack does so every few hours). An `events_api` envelope that is
not acknowledged is delivered again on the next connection with `retry_attempt` + 1, as Slack
retries events; slash commands are not retried.

Start it with `with FakeSlackSocket() as slack:`; point the app's Web API client at
`slack.api_url`. Envelopes sent while no connection is open wait for the next one.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from aiohttp import WSMsgType, web

from tests.fakes.slack_api import FakeSlackAPI


@dataclass
class Envelope:
    """One envelope the fake sent (or will send), and the app's ack of it."""

    envelope_id: str
    type: str
    payload: dict[str, Any]
    deliveries: int = 0
    acked: bool = False
    ack_payload: dict[str, Any] | None = None
    force_redelivery: bool = False  # deliver again on the next connection even if acked ("ack lost")


@dataclass
class FakeSlackSocket(FakeSlackAPI):
    """`FakeSlackAPI` + Socket Mode. `connections_opened` counts `apps.connections.open` calls that
    led to a websocket; `app_tokens` lists the tokens those calls carried."""

    envelopes: list[Envelope] = field(default_factory=list)
    app_tokens: list[str] = field(default_factory=list)
    connections_opened: int = 0
    _ids: itertools.count = field(default_factory=lambda: itertools.count(1))

    # --- lifecycle
    def start(self) -> None:
        super().start()
        self._loop = asyncio.new_event_loop()
        self._ws: web.WebSocketResponse | None = None
        self._ready = threading.Event()
        self._ws_thread = threading.Thread(target=self._serve_ws, daemon=True)
        self._ws_thread.start()
        assert self._ready.wait(10), "the websocket endpoint did not start"

    def stop(self) -> None:
        asyncio.run_coroutine_threadsafe(self._runner.cleanup(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._ws_thread.join(5)
        super().stop()

    def _serve_ws(self) -> None:
        asyncio.set_event_loop(self._loop)
        app = web.Application()
        app.router.add_get("/link/", self._websocket)
        self._runner = web.AppRunner(app, access_log=None)
        self._loop.run_until_complete(self._runner.setup())
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        self._loop.run_until_complete(site.start())
        self._ws_port = self._runner.addresses[0][1]
        self._ready.set()
        self._loop.run_forever()

    @property
    def ws_url(self) -> str:
        return f"ws://127.0.0.1:{self._ws_port}/link/"

    # --- the Web API side: apps.connections.open
    def _reply(self, call: Any) -> tuple[int, dict[str, str], Any]:
        if call.method != "apps.connections.open":
            return super()._reply(call)
        token = call.headers.get("Authorization", "").removeprefix("Bearer ")
        with self._lock:
            self.app_tokens.append(token)
        if not token.startswith("xapp-"):
            return 200, {}, {"ok": False, "error": "not_allowed_token_type"}
        return 200, {}, {"ok": True, "url": f"{self.ws_url}?ticket={next(self._ids)}&app_id=A111"}

    # --- the websocket side
    async def _websocket(self, request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse(autoping=True)  # answers the SDK's pings (its liveness check)
        await ws.prepare(request)
        old, self._ws = self._ws, ws
        with self._lock:
            self.connections_opened += 1
        await ws.send_json({"type": "hello", "num_connections": 1,
                            "debug_info": {"host": "fake-slack", "approximate_connection_time": 18060},
                            "connection_info": {"app_id": "A111"}})
        if old is not None and not old.closed:  # Slack closes the old link once the new one is up
            await old.close()
        for envelope in self._to_deliver():
            await self._deliver(ws, envelope)
        async for message in ws:
            if message.type == WSMsgType.TEXT:
                self._on_ack(json.loads(message.data))
        if self._ws is ws:
            self._ws = None
        return ws

    def _to_deliver(self) -> list[Envelope]:
        with self._lock:
            due = [e for e in self.envelopes if e.deliveries == 0
                   or e.force_redelivery or (not e.acked and e.type == "events_api")]
            for e in due:
                if e.deliveries:
                    e.force_redelivery = False
            return due

    async def _deliver(self, ws: web.WebSocketResponse, envelope: Envelope) -> None:
        retry = envelope.deliveries
        envelope.deliveries += 1
        await ws.send_json({"envelope_id": envelope.envelope_id, "type": envelope.type,
                            "payload": envelope.payload, "retry_attempt": retry,
                            "retry_reason": "timeout" if retry else "",
                            "accepts_response_payload": envelope.type != "events_api"})

    def _on_ack(self, message: dict[str, Any]) -> None:
        with self._lock:
            for e in self.envelopes:
                if e.envelope_id == message.get("envelope_id"):
                    e.acked, e.ack_payload = True, message.get("payload")

    # --- what tests call (from any thread or event loop)
    def send(self, type: str, payload: dict[str, Any], *, drop_after: bool = False) -> Envelope:
        """Deliver an envelope now (or on the next connection). `drop_after`: close the connection
        right after sending, before the app's ack can arrive, and deliver it again on the next
        connection as if the ack was lost."""
        envelope = Envelope(f"env-{next(self._ids)}-{type}", type, payload, force_redelivery=drop_after)
        with self._lock:
            self.envelopes.append(envelope)
        asyncio.run_coroutine_threadsafe(self._send_now(envelope, drop_after), self._loop).result(10)
        return envelope

    async def _send_now(self, envelope: Envelope, drop_after: bool) -> None:
        ws = self._ws
        if ws is None or ws.closed:
            return  # delivered on the next hello
        await self._deliver(ws, envelope)
        if drop_after:
            await ws.close(code=1011, message=b"fake Slack dropped the link")

    def disconnect(self, reason: str = "refresh_requested") -> None:
        """Ask the app to reconnect, as Slack does before it recycles a connection."""
        async def tell() -> None:
            if self._ws is not None and not self._ws.closed:
                await self._ws.send_json({"type": "disconnect", "reason": reason,
                                          "debug_info": {"host": "fake-slack"}})
        asyncio.run_coroutine_threadsafe(tell(), self._loop).result(10)

    def drop(self) -> None:
        """Close the current connection from Slack's side with no warning."""
        async def close() -> None:
            if self._ws is not None:
                await self._ws.close(code=1011, message=b"gone")
        asyncio.run_coroutine_threadsafe(close(), self._loop).result(10)

    def connected(self) -> bool:
        return self._ws is not None and not self._ws.closed

    async def wait_connections(self, count: int, timeout: float = 30.0) -> None:
        """Wait (without blocking the loop) until `count` connections were opened and one is up."""
        deadline = time.monotonic() + timeout
        while self.connections_opened < count or not self.connected():
            if time.monotonic() > deadline:
                raise AssertionError(f"expected {count} connection(s), got {self.connections_opened}")
            await asyncio.sleep(0.02)

    async def wait_ack(self, envelope: Envelope, timeout: float = 20.0) -> dict[str, Any] | None:
        deadline = time.monotonic() + timeout
        while not envelope.acked:
            if time.monotonic() > deadline:
                raise AssertionError(f"envelope {envelope.envelope_id} ({envelope.type}) was never acked")
            await asyncio.sleep(0.02)
        return envelope.ack_payload
