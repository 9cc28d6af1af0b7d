"""Admin commands and authorisation: real FeedbackStore and Reindexer, settings from the settings table."""

from __future__ import annotations

import threading

import pytest

from bot.admin import HELP, REFUSAL, handle_admin, is_authorised
from bot.feedback import FeedbackStore
from bot.scheduler import Reindexer
from config.settings import load_settings
from pipeline.types import Answer, Source

SPECS = {"docs": {"locations": ["docs"], "interval_minutes": 60, "cron": ""},
         "wiki": {"locations": ["wiki"], "interval_minutes": 0, "cron": ""}}


@pytest.fixture
def parts(tmp_path):
    feedback = FeedbackStore(tmp_path / "feedback.db")
    calls: list[str] = []
    release = threading.Event()

    def index_one(source: str) -> dict:
        calls.append(source)
        assert release.wait(30)
        return {"added": 4, "changed": 1, "unchanged": 0, "removed": 2, "skipped": 0, "errors": []}

    reindexer = Reindexer(index_one, feedback, SPECS)
    yield feedback, reindexer, calls, release
    release.set()
    reindexer.shutdown(wait_s=30)
    feedback.close()


def info() -> dict:  # the shape bot.app.App.status_info returns
    return {"index": {"documents": 12, "chunks": 340}, "store": "embedded", "embedding_model": "all-MiniLM-L6-v2",
            "llm": "none (extractive)", "sources": {"docs": ["/srv/docs"]}}


def admin(parts, line: str, authorised: bool = True, notify=None, status_info=info) -> str:
    feedback, reindexer, _, _ = parts
    return handle_admin(line, authorised=authorised, reindexer=reindexer, feedback=feedback,
                        status_info=status_info, notify=notify)


def test_reindex_starts_once_and_notifies(parts):
    _, _, calls, release = parts
    notes: list[str] = []
    done = threading.Event()
    reply = admin(parts, "reindex docs", notify=lambda t: (notes.append(t), done.set()))
    assert reply.startswith("Reindex of docs started")
    assert admin(parts, "reindex docs") == "Reindex of docs is already running."
    status = admin(parts, "status")
    assert "`docs` (every 60 min); running now (admin)" in status
    release.set()
    assert done.wait(30)
    assert calls == ["docs"] and "4 added" in notes[0]
    status = admin(parts, "status")
    assert ("Index: 12 documents, 340 chunks; store `embedded`, embedding model `all-MiniLM-L6-v2`; "
            "llm `none (extractive)`.") in status
    assert "last run ok" in status and "4 added, 1 changed, 2 removed, 0 failed" in status
    assert "`wiki` (manual only); never run" in status


def test_unknown_source_lists_the_known_ones(parts):
    assert admin(parts, "reindex nope") == "There is no source named `nope`. Known sources: `docs`, `wiki`."
    assert parts[2] == []


def test_status_when_the_store_is_down(parts):
    def broken() -> dict:
        raise RuntimeError("cannot open index /data/index.db")

    text = admin(parts, "status", status_info=broken)
    assert "Index: unavailable (RuntimeError: cannot open index /data/index.db)." in text
    assert "Reindex scheduler: not started." in text
    text = admin(parts, "status", status_info=lambda: {"index": {"error": "store is closed"}, "store": "embedded"})
    assert "Index: unavailable (RuntimeError: store is closed)." in text


def test_stats_and_stats_since(parts):
    feedback = parts[0]
    feedback.record_answer("slack", "C1", "m1", "", "U1", Answer(question="Who?", text="Ann.", sources=(Source(1, "a", path="docs/a.md"),)))
    feedback.vote("slack", "m1", "U2", -1)
    text = admin(parts, "stats")
    assert "1 answers" in text and "Who?" in text and "docs/a.md (1)" in text
    assert "since" in admin(parts, "stats 7")
    assert admin(parts, "stats soon") == "`stats` takes a number of days, e.g. `stats 7`; `soon` is not one."


def test_help_unknown_and_unauthorised(parts):
    assert admin(parts, "help") == HELP and admin(parts, "") == HELP
    assert admin(parts, "/admin help") == HELP
    unknown = admin(parts, "explode now")
    assert unknown.startswith("Unknown admin command `explode`.") and "reindex [source]" in unknown
    for line in ("reindex docs", "status", "stats", "explode"):
        assert admin(parts, line, authorised=False) == REFUSAL
    assert parts[2] == []
    assert admin(parts, "help", authorised=False) == HELP


def test_is_authorised_from_settings():
    s = load_settings(env={}, slack_admins="U1, U2", discord_admin_users="111", discord_admin_roles="900,901")
    assert is_authorised("slack", "U2", (), False, s)
    assert not is_authorised("slack", "U3", (), False, s)
    assert is_authorised("slack", "U3", (), True, s)  # workspace admin
    assert is_authorised("discord", "111", (), False, s)
    assert is_authorised("discord", "222", ("5", "901"), False, s)
    assert not is_authorised("discord", "222", ("5",), False, s)
    assert is_authorised("discord", "222", (), True, s)  # Manage Server
    assert not is_authorised("discord", "U1", (), False, s)  # a Slack admin id means nothing on Discord
    assert is_authorised("cli", "anyone", (), False, s)
    assert not is_authorised("teams", "U1", (), False, s)
    assert not is_authorised("slack", "", (), False, load_settings(env={}))
