"""`ravbot serve`: starts and stops cleanly with no platform and with every platform on local fakes.

The Core served is real (`bot.app.build`) with the deterministic fake embedder passed in: these
tests are about serving, not about the model."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket

import aiohttp
import discord
import pytest

from bot.app import build
from bot.serve import HOW_TO_CONFIGURE, platforms, serve
from config.settings import load_settings
from tests.fakes.discord_api import FakeDiscord
from tests.fakes.slack_api import FakeSlackAPI


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def base_settings(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# A\n\nThe VPN gateway is vpn.example.com.\n")
    return load_settings(env={}, data_dir=str(tmp_path / "data"), sources=f"d={docs}", wikipedia="off",
                         reindex_interval_minutes=0)


def test_platform_selection_by_tokens_and_role(base_settings):
    s = base_settings
    assert platforms(s) == {}
    socket_mode = s.replace(slack_bot_token="xoxb", slack_app_token="xapp")
    http_mode = s.replace(slack_bot_token="xoxb", slack_signing_secret="sig")
    assert list(platforms(socket_mode, "worker")) == ["slack (socket mode)"]
    assert list(platforms(socket_mode, "web")) == []
    assert list(platforms(http_mode, "web")) == ["slack (http mode)"]
    assert list(platforms(http_mode, "worker")) == []
    assert list(platforms(s.replace(discord_token="t"), "all")) == ["discord"]
    assert list(platforms(s.replace(discord_token="t"), "web")) == []
    with pytest.raises(ValueError, match="'moon'"):
        platforms(s, "moon")


async def test_serve_with_no_platform_says_how_to_configure_and_stops(base_settings, fake_embedder, caplog):
    stop = asyncio.Event()
    caplog.set_level(logging.INFO)
    app = build(base_settings, embedder=fake_embedder)
    try:
        task = asyncio.create_task(serve(base_settings, stop=stop, app=app))
        for _ in range(200):
            if HOW_TO_CONFIGURE in caplog.text:
                break
            await asyncio.sleep(0.02)
        assert HOW_TO_CONFIGURE in caplog.text
        stop.set()
        assert await asyncio.wait_for(task, 30) == 0
        assert "shutting down" in caplog.text
        assert "documents" in app.parts.store.counts()  # the Core it was given is left open (a closed one raises)
    finally:
        app.close()


async def test_serve_runs_slack_http_and_discord_then_stops_cleanly(base_settings, fake_embedder, monkeypatch):
    monkeypatch.setattr(discord.http.Route, "BASE", discord.http.Route.BASE)  # serve sets it process-wide
    discord_fake = await FakeDiscord().start()
    port = free_port()
    with FakeSlackAPI() as slack_fake:
        settings = base_settings.replace(slack_bot_token="xoxb-test", slack_signing_secret="secret",
                                         slack_api_url=slack_fake.api_url, port=port,
                                         discord_token="test-token", discord_api_url=discord_fake.api_url)
        stop = asyncio.Event()
        app = build(settings, embedder=fake_embedder)
        task = asyncio.create_task(serve(settings, stop=stop, app=app))
        try:
            await asyncio.wait_for(discord_fake.wait_identified(), 30)
            url = f"http://127.0.0.1:{port}/slack/events"
            async with aiohttp.ClientSession() as http:
                for _ in range(300):
                    try:
                        async with http.post(url, data="{}", headers={"Content-Type": "application/json"}) as r:
                            status = r.status
                        break
                    except aiohttp.ClientConnectionError:
                        await asyncio.sleep(0.05)
            assert status == 401  # unsigned request refused by the real Bolt request verification
        finally:
            stop.set()
            code = await asyncio.wait_for(task, 30)
            await discord_fake.stop()
            app.close()
    assert code == 0
    async with aiohttp.ClientSession() as http:
        with pytest.raises(aiohttp.ClientConnectionError):
            await http.post(f"http://127.0.0.1:{port}/slack/events", data="{}")


# --- questions during the first build ----------------------------------------------------------


def test_questions_during_a_first_build_are_answered_from_what_is_read_or_told_to_wait(tmp_path, fake_embedder,
                                                                                       monkeypatch):
    import threading

    import bot.scheduler
    from pipeline.index import index_source
    from pipeline.types import IDK, Question

    monkeypatch.setattr(bot.scheduler, "PROGRESS_EVERY_S", 0.0)  # record every document, not once a second
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# VPN\n\nThe VPN gateway is vpn.example.com. Connect with the corporate client.\n")
    (docs / "b.md").write_text("# Backups\n\nBackups are kept for 35 days on the storage server.\n")
    (docs / "c.md").write_text("# Holidays\n\nEvery employee gets 28 days of paid holiday per year.\n")
    settings = load_settings(env={}, data_dir=str(tmp_path / "data"), sources=f"d={docs}", wikipedia="off",
                             reindex_interval_minutes=0, rate_limit_per_minute=0)
    app = build(settings, run_scheduler=False, embedder=fake_embedder)
    held, release = threading.Event(), threading.Event()

    def index_one(source: str, progress=None) -> dict:  # App.index_one, publishing after every document
        def hold(done: int, total: int) -> None:
            progress(done, total)
            if done == 1:
                held.set()
                assert release.wait(60)
        return index_source(app.parts.store, app.parts.embedder, source, [str(docs)], first_publish_s=0.0,
                            progress=hold)

    app.reindexer.index_one = index_one
    holiday = Question("How many days of paid holiday does an employee get?", platform="cli")
    try:
        app.reindexer.trigger("d")
        assert held.wait(60)
        assert app.parts.store.counts()["documents"] == 1  # a.md is published, b.md and c.md are not read yet
        known = app.ask(Question("What is the VPN gateway?", platform="cli"))
        assert "vpn.example.com" in known.text and not known.idk
        assert "Still indexing: 1 of 3 documents read so far, so this answer may miss what is not read yet." in known.notes
        waiting = app.ask(holiday)
        assert waiting.text == "I'm still reading the documents (1 of 3); ask again in a few minutes."
        assert app.indexing() == {"d": app.indexing()["d"]} and app.indexing()["d"].startswith("1 of 3 documents")
    finally:
        release.set()
        app.reindexer.shutdown(60)
    try:
        done = app.ask(holiday)  # the build finished: a plain answer, no note
        assert "28 days" in done.text and not any("Still indexing" in n for n in done.notes)
        assert app.ask(Question("What is the capital of Mongolia?")).text == IDK  # a real "I don't know" again
        assert app.indexing() == {}
    finally:
        app.close()


async def test_a_question_a_second_after_a_fresh_start_never_gets_i_dont_know(tmp_path, fake_embedder):
    """The deployment of issue 18: `ravbot serve` in HTTP mode, fresh data dir, the bundled docs,
    `/ask How do I trigger a reindex?` as soon as the listener is up, over real sockets."""
    import sqlite3
    import time
    from urllib.parse import urlencode

    from slack_sdk.signature import SignatureVerifier

    from pipeline.types import IDK

    port = free_port()
    with FakeSlackAPI() as slack_fake:
        settings = load_settings(env={}, data_dir=str(tmp_path / "data"), wikipedia="off",  # sources: docs=docs
                                 slack_bot_token="xoxb-test", slack_signing_secret="secret",
                                 slack_api_url=slack_fake.api_url, port=port)
        stop = asyncio.Event()
        app = build(settings, embedder=fake_embedder)  # with its scheduler, as `serve` builds it
        task = asyncio.create_task(serve(settings, stop=stop, app=app))
        url = f"http://127.0.0.1:{port}/slack/events"

        async def ask(http: aiohttp.ClientSession, user: str) -> None:
            body = urlencode({"token": "t", "team_id": "T0001", "channel_id": "C1", "user_id": user,
                              "command": "/ask", "text": "How do I trigger a reindex?", "api_app_id": "A1",
                              "response_url": slack_fake.response_url(user), "trigger_id": "1.2"})
            ts = str(int(time.time()))
            headers = {"Content-Type": "application/x-www-form-urlencoded", "X-Slack-Request-Timestamp": ts,
                       "X-Slack-Signature": SignatureVerifier("secret").generate_signature(timestamp=ts, body=body)}
            async with http.post(url, data=body.encode(), headers=headers) as r:
                assert r.status == 200

        def answers() -> list[str]:
            return [c.body["text"] for c in slack_fake.of("chat.postMessage") if c.body.get("thread_ts")]

        try:
            async with aiohttp.ClientSession() as http:
                for _ in range(600):
                    try:
                        async with http.post(url, data="{}", headers={"Content-Type": "application/json"}):
                            break
                    except aiohttp.ClientConnectionError:
                        await asyncio.sleep(0.05)
                await ask(http, "U1")  # the listener is up: ask at once
                await slack_fake.wait_for("chat.postMessage", 2, timeout=120)  # the question, then the answer
                [first] = answers()
                assert IDK not in first
                assert "still reading the documents" in first or "reindex" in first.lower()

                def indexed() -> bool:
                    with contextlib.closing(sqlite3.connect(tmp_path / "data" / "feedback.sqlite")) as db:
                        return bool(db.execute("select 1 from index_runs where status = 'ok'").fetchone())

                for _ in range(1200):
                    if indexed():
                        break
                    await asyncio.sleep(0.1)
                assert indexed()
                await ask(http, "U2")  # once the build is done: a real answer
                await slack_fake.wait_for("chat.postMessage", 4, timeout=120)
                second = answers()[1]
                assert IDK not in second and "still reading" not in second and "reindex" in second.lower()
        finally:
            stop.set()
            try:
                assert await asyncio.wait_for(task, 60) == 0
            finally:
                app.close()
