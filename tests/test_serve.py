"""`ravbot serve`: starts and stops cleanly with no platform and with every platform on local fakes."""

from __future__ import annotations

import asyncio
import logging
import socket

import aiohttp
import discord
import pytest

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


async def test_serve_with_no_platform_says_how_to_configure_and_stops(base_settings, embedder, caplog):
    stop = asyncio.Event()
    caplog.set_level(logging.INFO)
    task = asyncio.create_task(serve(base_settings, stop=stop))
    for _ in range(200):
        if HOW_TO_CONFIGURE in caplog.text:
            break
        await asyncio.sleep(0.02)
    assert HOW_TO_CONFIGURE in caplog.text
    stop.set()
    assert await asyncio.wait_for(task, 30) == 0
    assert "shutting down" in caplog.text


async def test_serve_runs_slack_http_and_discord_then_stops_cleanly(base_settings, embedder, monkeypatch):
    monkeypatch.setattr(discord.http.Route, "BASE", discord.http.Route.BASE)  # serve sets it process-wide
    discord_fake = await FakeDiscord().start()
    port = free_port()
    with FakeSlackAPI() as slack_fake:
        settings = base_settings.replace(slack_bot_token="xoxb-test", slack_signing_secret="secret",
                                         slack_api_url=slack_fake.api_url, port=port,
                                         discord_token="test-token", discord_api_url=discord_fake.api_url)
        stop = asyncio.Event()
        task = asyncio.create_task(serve(settings, stop=stop))
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
    assert code == 0
    async with aiohttp.ClientSession() as http:
        with pytest.raises(aiohttp.ClientConnectionError):
            await http.post(f"http://127.0.0.1:{port}/slack/events", data="{}")
