"""Slack Socket Mode through the real `ravbot serve` (Bolt's AsyncSocketModeHandler, slack_sdk's
aiohttp client) against a local fake Slack: `apps.connections.open` on the fake Web API and a
websocket speaking Slack's envelope protocol (tests/fakes/slack_socket.py), all over real sockets.

Scenarios as in HTTP mode: `/ask`, a mention, reactions as votes, an admin reindex; then a
refresh-requested disconnect and a dropped link, after which no question is lost or answered twice.
The Core is real (`bot.app.build`) with the deterministic fake embedder passed in.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sqlite3
import time
from pathlib import Path
from typing import Any

import pytest

from bot.app import build
from bot.serve import serve
from config.settings import load_settings
from tests.fakes.slack_api import BOT_USER_ID, TEAM_ID
from tests.fakes.slack_socket import FakeSlackSocket

DOCS = {
    "backups.md": "# Backups\n\nBackups are kept for 35 days on the storage server in the Frankfurt data centre.\n",
    "vpn.md": "# VPN\n\nThe VPN gateway is vpn.example.com; connect with the corporate client.\n",
    "oncall.md": "# On-call\n\nThe on-call rotation changes every Monday at 09:00.\n",
}


def slash_payload(slack: FakeSlackSocket, text: str, user: str = "U111", command: str = "/ask",
                  channel: str = "C111") -> dict[str, Any]:
    return {"token": "legacy", "team_id": TEAM_ID, "team_domain": "test", "channel_id": channel,
            "channel_name": "general", "user_id": user, "user_name": user.lower(), "command": command,
            "text": text, "api_app_id": "A111", "is_enterprise_install": "false",
            "response_url": slack.response_url(user), "trigger_id": "1.2.3"}


_event_ids = iter(range(1, 10_000))


def event_payload(event: dict[str, Any]) -> dict[str, Any]:
    return {"token": "legacy", "team_id": TEAM_ID, "api_app_id": "A111", "type": "event_callback",
            "event": event, "event_id": f"EvSock{next(_event_ids):04d}", "event_time": int(time.time()),
            "authorizations": [{"team_id": TEAM_ID, "user_id": BOT_USER_ID, "is_bot": True}]}


def mention(text: str, ts: str, user: str = "U222") -> dict[str, Any]:
    return event_payload({"type": "app_mention", "user": user, "text": f"<@{BOT_USER_ID}> {text}", "ts": ts,
                          "channel": "C222", "event_ts": ts})


def thread_answers(slack: FakeSlackSocket, thread_ts: str) -> list[Any]:
    return [c for c in slack.of("chat.postMessage") if c.body.get("thread_ts") == thread_ts]


async def until(condition, what: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}")
        await asyncio.sleep(0.05)


def feedback_rows(data: Path, sql: str, *args: Any) -> list[tuple]:
    path = data / "feedback.sqlite"
    if not path.exists():
        return []
    with contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as db:
        try:
            return list(db.execute(sql, args))
        except sqlite3.OperationalError:  # being created
            return []


@pytest.fixture
def corpus(tmp_path) -> Path:
    folder = tmp_path / "docs"
    folder.mkdir()
    for name, text in DOCS.items():
        (folder / name).write_text(text)
    return folder


async def test_socket_mode_serves_questions_votes_admin_and_survives_reconnects(tmp_path, corpus, fake_embedder,
                                                                                caplog, monkeypatch):
    monkeypatch.setenv("SLACK_BOT_TOKEN", "xoxb-test")  # as deployed: must not make Bolt warn
    caplog.set_level(logging.INFO)
    data = tmp_path / "data"
    with FakeSlackSocket() as slack:
        settings = load_settings(env={}, data_dir=str(data), sources=f"kb={corpus}", wikipedia="off",
                                 rate_limit_per_minute=0, slack_admins="UADMIN", slack_bot_token="xoxb-test",
                                 slack_app_token="xapp-test", slack_api_url=slack.api_url)
        stop = asyncio.Event()
        app = build(settings, embedder=fake_embedder)  # with its scheduler, as `serve` builds a worker
        task = asyncio.create_task(serve(settings, role="worker", stop=stop, app=app))
        try:
            await slack.wait_connections(1)
            assert slack.app_tokens == ["xapp-test"]  # apps.connections.open with the app-level token
            await until(lambda: feedback_rows(data, "select 1 from index_runs where status = 'ok'"), "the first index")

            # /ask: acked at once, the question posted, the answer in its thread
            ask = slack.send("slash_commands", slash_payload(slack, "How long are backups kept?"))
            await slack.wait_ack(ask)
            parent, answer = await slack.wait_for("chat.postMessage", 2)
            assert parent.body["text"].startswith("Question from <@U111>")
            assert answer.body["thread_ts"] == parent.response["ts"] and "35 days" in answer.body["text"]

            # a mention: 👀 while working, the answer in the mention's thread
            asked = slack.send("events_api", mention("What is the VPN gateway?", ts="1700000100.000100"))
            await slack.wait_ack(asked)
            await until(lambda: thread_answers(slack, "1700000100.000100"), "the mention's answer")
            [vpn] = thread_answers(slack, "1700000100.000100")
            assert "vpn.example.com" in vpn.body["text"]
            assert [c.body["name"] for c in slack.of("reactions.add")] == ["eyes"]

            # reactions on the answer are votes
            answer_ts = vpn.response["ts"]
            await until(lambda: feedback_rows(data, "select 1 from answers where message_id = ?", answer_ts),
                        "the answer to be recorded")
            slack.send("events_api", event_payload({
                "type": "reaction_added", "user": "U333", "reaction": "+1", "item_user": BOT_USER_ID,
                "item": {"type": "message", "channel": "C222", "ts": answer_ts}, "event_ts": "1700000500.000100"}))
            await until(lambda: feedback_rows(data, "select value from votes where message_id = ?", answer_ts) == [(1,)],
                        "the vote")

            # admin reindex: acked, an ephemeral "started", then the outcome in the channel
            posts = len(slack.of("chat.postMessage"))
            reindex = slack.send("slash_commands", slash_payload(slack, "reindex", user="UADMIN", command="/ask-admin"))
            await slack.wait_ack(reindex)
            [started] = await slack.wait_for("respond")
            assert started.body["text"].startswith("Reindex of kb started") and started.path == "/respond/UADMIN"
            await until(lambda: len(slack.of("chat.postMessage")) > posts, "the reindex outcome")
            assert slack.of("chat.postMessage")[-1].body["text"].startswith("Reindex of kb finished")

            # Slack recycles the link: a new connection, and the next question is answered on it
            slack.disconnect("refresh_requested")
            await slack.wait_connections(2)
            assert slack.app_tokens == ["xapp-test"] * 2
            slack.send("events_api", mention("When does the on-call rotation change?", ts="1700000200.000100"))
            await until(lambda: thread_answers(slack, "1700000200.000100"), "the answer after the refresh")

            # the link drops right after a question, before its ack: the question is delivered again
            # on the next connection, and one sent while disconnected waits for it
            lost_ack = slack.send("events_api", mention("How long are backups kept?", ts="1700000300.000100"),
                                  drop_after=True)
            waiting = slack.send("events_api", mention("What is the VPN gateway?", ts="1700000400.000100"))
            await slack.wait_connections(3)
            await until(lambda: lost_ack.deliveries == 2 and lost_ack.acked and waiting.acked, "the redelivery")
            await until(lambda: thread_answers(slack, "1700000300.000100") and thread_answers(slack, "1700000400.000100"),
                        "both answers")
            await asyncio.sleep(1.0)  # a duplicate answer would come now
            assert len(thread_answers(slack, "1700000300.000100")) == 1  # answered once, not twice
            assert len(thread_answers(slack, "1700000400.000100")) == 1
            assert "ignoring a retried delivery" in caplog.text
        finally:
            stop.set()
            try:
                assert await asyncio.wait_for(task, 60) == 0
            finally:
                app.close()
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING
                and not r.name.startswith("adapters.slack.bolt")]
    assert not [w for w in warnings if "token" in w], warnings
    assert "As you gave `client` as well" not in caplog.text
