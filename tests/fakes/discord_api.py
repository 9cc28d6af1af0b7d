"""A local fake of Discord's REST API and gateway, on a loopback socket, for driving the real discord.py client.

It speaks enough of the real protocol for a bot: discord.py logs in over REST
(`GET /users/@me`, `GET /oauth2/applications/@me`), asks `GET /gateway/bot` for the
websocket URL (an `AutoShardedClient` does), connects to `ws://127.0.0.1:PORT/gw?v=10&encoding=json
&compress=zlib-stream`, gets HELLO (op 10), sends IDENTIFY (op 2), gets READY and one
GUILD_CREATE, and has its heartbeats (op 1) acknowledged (op 11). The fake always sends
uncompressed text frames: discord.py only decompresses binary frames, so the `compress`
query parameter and IDENTIFY's `compress: true` can be ignored.

API (all inside a running event loop)
---
    fake = FakeDiscord(); await fake.start()
    fake.api_url                 # "http://127.0.0.1:<port>/api/v10" -> settings.discord_api_url
    await fake.wait_identified() # the client has sent IDENTIFY and received READY + GUILD_CREATE
    await fake.dispatch("MESSAGE_CREATE", fake.message_payload(...))   # push any gateway event
    fake.requests                # every REST request as Recorded(method, path, query, body)
    fake.find("POST", "/channels/{id}/messages")   # requests whose path matches a pattern
    await fake.wait_for("POST", "/webhooks/{app}/{token}", count=1)     # until that many arrived
    fake.identify                # the IDENTIFY payload's "d" (token, intents, shard)
    fake.fail("POST", "/channels/{id}/messages", status=500)           # next matching call fails
    await fake.stop()

Ids: the bot user is `BOT_ID`, the guild `GUILD_ID`, its text channel `CHANNEL_ID`, an existing
public thread in it `THREAD_ID`, the application `APP_ID`; the `@everyone` role has the guild's
id and `ADMIN_ROLE_ID` is a second role. Created messages, threads and webhook messages get
fresh snowflakes from a counter.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import re
from dataclasses import dataclass
from typing import Any

from aiohttp import WSMsgType, web

BOT_ID = 900_000_000_000_000_001
APP_ID = BOT_ID
GUILD_ID = 900_000_000_000_000_010
CHANNEL_ID = 900_000_000_000_000_020
THREAD_ID = 900_000_000_000_000_030
ADMIN_ROLE_ID = 900_000_000_000_000_040
TIMESTAMP = "2025-01-01T00:00:00.000000+00:00"


@dataclass(frozen=True)
class Recorded:
    """One REST request the fake received; `body` is the parsed JSON (or {} when none)."""

    method: str
    path: str  # without the /api/v10 prefix, e.g. "/channels/123/messages"
    query: dict[str, str]
    body: Any


def user_payload(user_id: int, name: str, bot: bool = False) -> dict[str, Any]:
    return {"id": str(user_id), "username": name, "global_name": name, "discriminator": "0",
            "avatar": None, "bot": bot, "public_flags": 0}


def _pattern(template: str) -> re.Pattern[str]:
    """"/channels/{id}/messages" -> a regex where each {name} is one path segment."""
    return re.compile("^" + re.sub(r"\\\{[^}]*\\\}", "[^/]+", re.escape(template)) + "$")


def _json(data: Any, status: int = 200) -> web.Response:
    """JSON with Discord's exact content type: discord.py parses a body only when the header is
    exactly `application/json` (aiohttp's json_response appends `; charset=utf-8`)."""
    return web.Response(body=json.dumps(data).encode(), status=status, headers={"Content-Type": "application/json"})


class FakeDiscord:
    """The fake REST + gateway server; owns an aiohttp site and the open gateway sockets."""

    def __init__(self) -> None:
        self.requests: list[Recorded] = []
        self.identify: dict[str, Any] = {}
        self.heartbeats = 0
        self._ids = itertools.count(950_000_000_000_000_000)
        self._seq = itertools.count(1)
        self._sockets: list[web.WebSocketResponse] = []
        self._identified = asyncio.Event()
        self._arrived = asyncio.Condition()
        self._failures: list[tuple[str, re.Pattern[str], int]] = []
        self._runner: web.AppRunner | None = None
        self.port = 0

    # --- lifecycle
    async def start(self) -> FakeDiscord:
        app = web.Application()
        app.router.add_get("/gw", self._gateway)
        app.router.add_route("*", "/api/v10/{tail:.*}", self._rest)
        self._runner = web.AppRunner(app, handle_signals=False)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        return self

    async def stop(self) -> None:
        for ws in list(self._sockets):
            await ws.close()
        if self._runner:
            await self._runner.cleanup()

    @property
    def api_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/api/v10"

    # --- test controls
    async def wait_identified(self, timeout: float = 10.0) -> None:
        await asyncio.wait_for(self._identified.wait(), timeout)

    async def dispatch(self, event: str, data: dict[str, Any]) -> None:
        """Send one DISPATCH (op 0) to every connected gateway socket."""
        frame = json.dumps({"op": 0, "t": event, "s": next(self._seq), "d": data})
        for ws in self._sockets:
            await ws.send_str(frame)

    def find(self, method: str, template: str) -> list[Recorded]:
        pattern = _pattern(template)
        return [r for r in self.requests if r.method == method and pattern.match(r.path)]

    async def wait_for(self, method: str, template: str, count: int = 1, timeout: float = 20.0) -> list[Recorded]:
        async def enough() -> list[Recorded]:
            async with self._arrived:
                await self._arrived.wait_for(lambda: len(self.find(method, template)) >= count)
            return self.find(method, template)

        try:
            return await asyncio.wait_for(enough(), timeout)
        except TimeoutError:
            seen = [f"{r.method} {r.path}" for r in self.requests]
            raise AssertionError(f"expected {count} x {method} {template}; requests so far: {seen}") from None

    def fail(self, method: str, template: str, status: int = 500) -> None:
        """Make the next request matching method + template answer `status`."""
        self._failures.append((method, _pattern(template), status))

    # --- payload builders for tests
    def message_payload(self, content: str, *, author_id: int = 700, author_bot: bool = False,
                        channel_id: int = CHANNEL_ID, guild: bool = True, mentions_bot: bool = False,
                        mention_everyone: bool = False, roles: tuple[int, ...] = ()) -> dict[str, Any]:
        author = user_payload(author_id, f"user{author_id}", bot=author_bot)
        data: dict[str, Any] = {
            "id": str(next(self._ids)), "channel_id": str(channel_id), "author": author,
            "content": content, "timestamp": TIMESTAMP, "edited_timestamp": None, "tts": False,
            "mention_everyone": mention_everyone, "mention_roles": [], "attachments": [],
            "embeds": [], "pinned": False, "type": 0, "flags": 0, "components": [],
            "mentions": [user_payload(BOT_ID, "ravbot", bot=True)] if mentions_bot else [],
        }
        if guild:
            data["guild_id"] = str(GUILD_ID)
            data["member"] = self._member(None, roles)
        return data

    def reaction_payload(self, message_id: str | int, emoji: str, *, user_id: int = 700,
                         channel_id: int = CHANNEL_ID, guild: bool = True) -> dict[str, Any]:
        data: dict[str, Any] = {"user_id": str(user_id), "channel_id": str(channel_id),
                                "message_id": str(message_id), "emoji": {"id": None, "name": emoji},
                                "type": 0, "burst": False, "burst_colors": []}
        if guild:
            data["guild_id"] = str(GUILD_ID)
            data["member"] = self._member(user_id, ())
        return data

    def interaction_payload(self, name: str, options: list[dict[str, Any]], *, user_id: int = 700,
                            permissions: int = 0, roles: tuple[int, ...] = (),
                            guild: bool = True) -> dict[str, Any]:
        """An APPLICATION_COMMAND interaction; `permissions` are the member's resolved permissions."""
        data: dict[str, Any] = {
            "id": str(next(self._ids)), "application_id": str(APP_ID), "type": 2,
            "token": f"itoken{next(self._ids)}", "version": 1, "locale": "en-US", "attachment_size_limit": 10 << 20,
            "app_permissions": str((1 << 53) - 1), "entitlements": [], "context": 0 if guild else 1,
            "authorizing_integration_owners": {"0": str(GUILD_ID)},
            "data": {"id": str(next(self._ids)), "name": name, "type": 1, "options": options},
        }
        if guild:
            data |= {"guild_id": str(GUILD_ID), "guild_locale": "en-US", "channel_id": str(CHANNEL_ID),
                     "channel": self._text_channel()}
            data["member"] = self._member(user_id, roles) | {"permissions": str(permissions)}
        else:
            dm = 800_000_000_000_000_000 + user_id
            data |= {"channel_id": str(dm), "channel": {"id": str(dm), "type": 1},
                     "user": user_payload(user_id, f"user{user_id}")}
        return data

    # --- gateway
    async def _gateway(self, request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse(max_msg_size=0)
        await ws.prepare(request)
        self._sockets.append(ws)
        await ws.send_json({"op": 10, "d": {"heartbeat_interval": 41250}, "s": None, "t": None})
        try:
            async for msg in ws:
                if msg.type != WSMsgType.TEXT:
                    continue
                frame = json.loads(msg.data)
                if frame.get("op") == 1:
                    self.heartbeats += 1
                    await ws.send_json({"op": 11, "d": None, "s": None, "t": None})
                elif frame.get("op") == 2:
                    self.identify = frame["d"]
                    await self._send_ready(ws)
        finally:
            self._sockets.remove(ws)
        return ws

    async def _send_ready(self, ws: web.WebSocketResponse) -> None:
        ready = {
            "v": 10, "user": user_payload(BOT_ID, "ravbot", bot=True) | {"verified": True, "mfa_enabled": False, "flags": 0},
            "guilds": [{"id": str(GUILD_ID), "unavailable": True}], "session_id": "fake-session",
            "resume_gateway_url": f"ws://127.0.0.1:{self.port}/gw", "shard": self.identify.get("shard", [0, 1]),
            "application": {"id": str(APP_ID), "flags": 0}, "private_channels": [], "relationships": [],
        }
        await ws.send_json({"op": 0, "t": "READY", "s": next(self._seq), "d": ready})
        await ws.send_json({"op": 0, "t": "GUILD_CREATE", "s": next(self._seq), "d": self._guild()})
        self._identified.set()

    def _guild(self) -> dict[str, Any]:
        role = {"color": 0, "hoist": False, "managed": False, "mentionable": False, "flags": 0, "icon": None,
                "unicode_emoji": None}
        return {
            "id": str(GUILD_ID), "name": "Test guild", "owner_id": "1", "icon": None, "splash": None,
            "discovery_splash": None, "afk_channel_id": None, "afk_timeout": 300, "verification_level": 0,
            "default_message_notifications": 0, "explicit_content_filter": 0, "mfa_level": 0,
            "system_channel_id": None, "system_channel_flags": 0, "rules_channel_id": None,
            "vanity_url_code": None, "description": None, "banner": None, "premium_tier": 0,
            "preferred_locale": "en-US", "public_updates_channel_id": None, "nsfw_level": 0,
            "premium_progress_bar_enabled": False, "features": [], "emojis": [], "stickers": [],
            "roles": [role | {"id": str(GUILD_ID), "name": "@everyone", "permissions": str(0x4C00), "position": 0},
                      role | {"id": str(ADMIN_ROLE_ID), "name": "ravbot-admins", "permissions": "0", "position": 1}],
            "channels": [self._text_channel()],
            "threads": [{"id": str(THREAD_ID), "type": 11, "guild_id": str(GUILD_ID), "parent_id": str(CHANNEL_ID),
                         "name": "an old question", "owner_id": "700", "last_message_id": None,
                         "message_count": 1, "member_count": 1, "rate_limit_per_user": 0, "flags": 0,
                         "thread_metadata": {"archived": False, "auto_archive_duration": 1440,
                                             "archive_timestamp": TIMESTAMP, "locked": False}}],
            "members": [self._member(BOT_ID, ())], "member_count": 2, "large": False, "unavailable": False,
            "joined_at": TIMESTAMP, "voice_states": [], "presences": [], "stage_instances": [],
            "guild_scheduled_events": [], "soundboard_sounds": [],
        }

    def _text_channel(self) -> dict[str, Any]:
        return {"id": str(CHANNEL_ID), "type": 0, "guild_id": str(GUILD_ID), "name": "general", "position": 0,
                "permission_overwrites": [], "nsfw": False, "parent_id": None, "topic": None,
                "last_message_id": None, "rate_limit_per_user": 0, "flags": 0}

    def _member(self, user_id: int | None, roles: tuple[int, ...]) -> dict[str, Any]:
        member: dict[str, Any] = {"roles": [str(r) for r in roles], "joined_at": TIMESTAMP, "deaf": False,
                                  "mute": False, "flags": 0, "pending": False, "nick": None, "avatar": None}
        if user_id is not None:
            member["user"] = user_payload(user_id, f"user{user_id}", bot=user_id == BOT_ID)
        return member

    # --- REST
    async def _rest(self, request: web.Request) -> web.Response:
        path = "/" + request.match_info["tail"]
        raw = await request.read()
        try:
            body = json.loads(raw) if raw else {}
        except ValueError:
            body = {"_raw": raw.decode("utf-8", "replace")}
        self.requests.append(Recorded(request.method, path, dict(request.query), body))
        async with self._arrived:
            self._arrived.notify_all()
        for i, (method, pattern, status) in enumerate(self._failures):
            if method == request.method and pattern.match(path):
                del self._failures[i]
                return _json({"message": "fake failure", "code": 0}, status=status)
        reply = self._route(request.method, path, body)
        if reply is None:
            return _json({"message": f"fake: no route {request.method} {path}", "code": 0}, status=404)
        if reply == 204:
            return web.Response(status=204)
        return _json(reply)

    def _route(self, method: str, path: str, body: Any) -> Any:
        parts = path.strip("/").split("/")
        if (method, path) == ("GET", "/users/@me"):
            return user_payload(BOT_ID, "ravbot", bot=True) | {"verified": True, "mfa_enabled": False, "flags": 0}
        if (method, path) == ("GET", "/oauth2/applications/@me"):
            return {"id": str(APP_ID), "name": "ravbot", "description": "", "icon": None, "bot_public": True,
                    "bot_require_code_grant": False, "owner": user_payload(1, "owner"), "verify_key": "00",
                    "flags": 0, "team": None, "summary": ""}
        if (method, path) == ("GET", "/gateway/bot"):
            return {"url": f"ws://127.0.0.1:{self.port}/gw", "shards": 1,
                    "session_start_limit": {"total": 1000, "remaining": 999, "reset_after": 0, "max_concurrency": 1}}
        if method == "POST" and parts[0] == "channels" and parts[2:] == ["typing"]:
            return 204
        if method == "POST" and parts[0] == "channels" and parts[2:] == ["messages"]:
            return self._message(parts[1], body)
        if method == "POST" and parts[0] == "channels" and len(parts) == 5 and parts[4] == "threads":
            return self._thread(parts[1], parts[3], body)
        if method in ("PUT", "DELETE") and parts[0] == "channels" and "reactions" in parts:
            return 204
        if method == "POST" and parts[0] == "interactions" and parts[-1] == "callback":
            return self._callback(parts[1], body)
        if parts[0] == "webhooks" and len(parts) >= 3:
            if method == "POST":
                return self._message("0", body, webhook=True)
            if method == "PATCH":
                return self._message("0", body, webhook=True)
            if method == "DELETE":
                return 204
        if method == "PUT" and parts[0] == "applications" and parts[-1] == "commands":
            return [cmd | {"id": str(next(self._ids)), "application_id": str(APP_ID), "version": "1",
                           "default_member_permissions": cmd.get("default_member_permissions"), "type": cmd.get("type", 1)}
                    for cmd in body]
        return None

    def _message(self, channel_id: str, body: dict[str, Any], webhook: bool = False) -> dict[str, Any]:
        return {"id": str(next(self._ids)), "channel_id": channel_id, "author": user_payload(BOT_ID, "ravbot", bot=True),
                "content": body.get("content") or "", "timestamp": TIMESTAMP, "edited_timestamp": None,
                "tts": False, "mention_everyone": False, "mentions": [], "mention_roles": [], "attachments": [],
                "embeds": body.get("embeds") or [], "pinned": False, "type": 0, "flags": body.get("flags", 0),
                "components": [], **({"webhook_id": str(APP_ID)} if webhook else {})}

    def _thread(self, channel_id: str, message_id: str, body: dict[str, Any]) -> dict[str, Any]:
        return {"id": message_id, "type": 11, "guild_id": str(GUILD_ID), "parent_id": channel_id,
                "name": body.get("name", ""), "owner_id": str(BOT_ID), "last_message_id": None,
                "message_count": 0, "member_count": 1, "rate_limit_per_user": 0, "flags": 0,
                "thread_metadata": {"archived": False, "auto_archive_duration": body.get("auto_archive_duration", 1440),
                                    "archive_timestamp": TIMESTAMP, "locked": False}}

    def _callback(self, interaction_id: str, body: dict[str, Any]) -> dict[str, Any]:
        kind, data = body.get("type"), body.get("data") or {}
        ephemeral = bool(int(data.get("flags") or 0) & 64)
        message = self._message(str(CHANNEL_ID), data) | {"id": str(next(self._ids))}
        return {"interaction": {"id": interaction_id, "type": 2, "response_message_loading": kind == 5,
                                "response_message_ephemeral": ephemeral, "response_message_id": message["id"]},
                "resource": {"type": kind, "message": message}}
