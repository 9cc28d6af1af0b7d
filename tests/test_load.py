"""A bounded load test on loopback: bursts of questions through the real Slack adapter (HTTP mode,
signed requests) and the real Discord client, while the pipeline is busy (the remote LLM holds
every completion until released). Asserts behaviour, not speed (speed: benchmarks/load.py):
every slash command is acknowledged before any answer is posted, and every question gets
exactly one answer, none lost or doubled. The Core is real, with the deterministic fake embedder.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import threading
import time
from collections import Counter
from urllib.parse import urlencode

import aiohttp
import discord
import pytest
from slack_sdk.signature import SignatureVerifier

from adapters.discord import build_discord_client
from adapters.slack import build_slack_app, start_http
from bot.app import build
from config.settings import load_settings
from tests.fakes.discord_api import BOT_ID, CHANNEL_ID, FakeDiscord
from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.slack_api import TEAM_ID, FakeSlackAPI

SECRET = "load-signing-secret"
SLACK_QUESTIONS = 12
DISCORD_QUESTIONS = 6
DOCS = {"backups.md": "# Backups\n\nDatabase backups are kept for 30 days in the Frankfurt region.\n",
        "deploys.md": "# Deploys\n\nProduction deploys happen on Tuesdays after the change review.\n"}


@pytest.fixture(scope="module")
def gate():
    """Closed: every LLM completion waits (the pipeline is busy) until the test opens it."""
    return threading.Event()


@pytest.fixture(scope="module")
def core(tmp_path_factory, fake_embedder, gate):
    folder = tmp_path_factory.mktemp("docs")
    for name, text in DOCS.items():
        (folder / name).write_text(text)
    with FakeOpenAI() as llm:
        def reply(body: dict) -> str:
            gate.wait(60)
            question = body["messages"][-1]["content"].rsplit("\n", 1)[-1]
            return f"Answer to {question.split('#')[-1].strip()}: backups are kept in the region [1]."
        llm.respond_with(reply)
        settings = load_settings(env={}, data_dir=str(tmp_path_factory.mktemp("data")), sources=f"kb={folder}",
                                 wikipedia="off", rate_limit_per_minute=0, llm_base_url=llm.url, llm_retries=0,
                                 llm_timeout=60.0, correction_rounds=0, verify=False, workers=2,
                                 slack_bot_token="xoxb-load", slack_signing_secret=SECRET, discord_token="load-token")
        app = build(settings, run_scheduler=False, embedder=fake_embedder)
        app.index_one("kb")
        yield app
        gate.set()
        app.close()


def signed(body: str) -> dict[str, str]:
    ts = str(int(time.time()))
    return {"X-Slack-Request-Timestamp": ts, "Content-Type": "application/x-www-form-urlencoded",
            "X-Slack-Signature": SignatureVerifier(SECRET).generate_signature(timestamp=ts, body=body)}


async def test_slack_burst_is_acked_before_answers_and_answered_exactly_once(core, gate):
    gate.clear()
    with FakeSlackAPI(_ts=itertools.count(1)) as api:
        runner = await start_http(build_slack_app(core, core.settings.replace(slack_api_url=api.api_url, slack_retry_backoff=0.01)), "127.0.0.1", 0)
        url = f"http://127.0.0.1:{runner.addresses[0][1]}/slack/events"
        try:
            async def slash(i: int, session: aiohttp.ClientSession) -> int:
                body = urlencode({"team_id": TEAM_ID, "channel_id": "C1", "user_id": f"U{i}", "command": "/ask",
                                  "text": f"How long are backups kept? #{i}", "response_url": api.response_url(str(i)),
                                  "trigger_id": "t", "api_app_id": "A1", "token": "x"})
                async with session.post(url, data=body.encode(), headers=signed(body)) as r:
                    return r.status

            async with aiohttp.ClientSession() as session:
                statuses = await asyncio.gather(*(slash(i, session) for i in range(SLACK_QUESTIONS)))
            assert statuses == [200] * SLACK_QUESTIONS  # every command acked...
            await api.wait_for("chat.postMessage", SLACK_QUESTIONS)  # ...and its parent message posted
            assert not [c for c in api.of("chat.postMessage") if c.body.get("thread_ts")]  # ...before any answer
            gate.set()
            await api.wait_for("chat.postMessage", 2 * SLACK_QUESTIONS, timeout=120)
            await asyncio.sleep(0.5)  # anything doubled would arrive now
        finally:
            await runner.cleanup()
        posts = api.of("chat.postMessage")
    parents = {c.response["ts"]: c.body["text"] for c in posts if not c.body.get("thread_ts")}
    answers = Counter(c.body["thread_ts"] for c in posts if c.body.get("thread_ts"))
    assert len(parents) == SLACK_QUESTIONS and answers == Counter({ts: 1 for ts in parents})
    for c in posts:  # each answer is in the thread of its own question
        if c.body.get("thread_ts"):
            number = parents[c.body["thread_ts"]].rsplit("#", 1)[1]
            assert f"Answer to {number}:" in c.body["text"]


async def test_discord_burst_is_answered_exactly_once(core, gate, monkeypatch):
    gate.set()
    monkeypatch.setattr(discord.http.Route, "BASE", discord.http.Route.BASE)
    fake = await FakeDiscord().start()
    client = build_discord_client(core, core.settings.replace(discord_api_url=fake.api_url), guild_ready_timeout=0.05)
    task = asyncio.create_task(client.start("load-token"))
    try:
        await fake.wait_identified()
        await asyncio.wait_for(client.wait_until_ready(), 10)
        dm = CHANNEL_ID + 9
        for i in range(DISCORD_QUESTIONS):
            await fake.dispatch("MESSAGE_CREATE", fake.message_payload(
                f"<@{BOT_ID}> How long are backups kept? #{i}", mentions_bot=True, guild=False, channel_id=dm,
                author_id=700 + i))
        await fake.wait_for("POST", f"/channels/{dm}/messages", count=DISCORD_QUESTIONS, timeout=120)
        await asyncio.sleep(0.5)
    finally:
        await client.close()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(task, 10)
        await fake.stop()
    answers = [r.body["content"] for r in fake.find("POST", f"/channels/{dm}/messages")]
    numbers = Counter(a.split(":")[0].removeprefix("Answer to ") for a in answers)
    assert numbers == Counter({str(i): 1 for i in range(DISCORD_QUESTIONS)})
