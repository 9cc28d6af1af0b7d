"""Slack adapter: pure rendering (known values + properties) and bolt-python scenarios.

Scenarios run a real Bolt `AsyncApp` behind its real aiohttp handler (HTTP mode) on loopback, with
its Web API client pointed at `tests.fakes.slack_api.FakeSlackAPI`; requests are signed like Slack
signs them. Behind the app is the real Core (`bot.app.build`: real index of a few Markdown files,
real retrieval, verifier and feedback store). Only remote services are faked: the exact answer
text is controlled by scripting the remote LLM (`tests.fakes.openai_server.FakeOpenAI`).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import logging
import re
import socket
import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import aiohttp
import pytest
from hypothesis import given
from hypothesis import settings as hyp_settings
from hypothesis import strategies as st
from slack_sdk.signature import SignatureVerifier

from adapters.slack import (
    BLOCK_LIMIT,
    SECTION_LIMIT,
    USAGE,
    build_slack_app,
    escape,
    make_client,
    render_answer,
    serve_slack,
    slack_mode,
    split_escaped,
    start_http,
)
from bot.app import build
from config.settings import Settings, load_settings
from pipeline.types import Answer, Claim, Evidence, Label, Source, Verdict
from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.slack_api import BOT_ID, BOT_USER_ID, TEAM_ID, FakeSlackAPI

SECRET = "test-signing-secret"

# ----------------------------------------------------------------------------------------------
# Answers used below
# ----------------------------------------------------------------------------------------------

BACKUP_TEXT = "Backups are kept for 30 days [1]. The policy was adopted in 2019 [2]."


def backup_answer() -> Answer:
    first = BACKUP_TEXT.index("[1].") + 4
    second = len(BACKUP_TEXT)
    evidence = Evidence(text="Adopted in 2018.", title="History", path="docs/history.md")
    return Answer(
        question="how long do we keep backups?",
        text=BACKUP_TEXT,
        sources=(Source(1, "Backups", url="https://wiki.example.com/backups?a=1&b=2"),
                 Source(2, "History", path="docs/history.md")),
        verdicts=(
            Verdict(Claim(BACKUP_TEXT[:first], 0, first), Label.SUPPORTED, 0.9, "default"),
            Verdict(Claim(BACKUP_TEXT[first + 1:], first + 1, second), Label.CONTRADICTED, 0.8, "default",
                    evidence=evidence, sentence="The policy was adopted in 2018.", conflict="2018",
                    checked_against=("kb",)),
        ),
        timings={"retrieve": 12.0, "generate": 3.0, "verify": 40.0},
    )


# ----------------------------------------------------------------------------------------------
# Rendering: known values
# ----------------------------------------------------------------------------------------------


def all_texts(blocks: list[dict]) -> list[str]:
    out = []
    for b in blocks:
        if "text" in b:
            out.append(b["text"]["text"])
        out.extend(e["text"] for e in b.get("elements", []))
    return out


def test_render_answer_known_values():
    blocks, text = render_answer(backup_answer())
    body = blocks[0]["text"]
    assert body == {"type": "mrkdwn", "verbatim": True,
                    "text": "Backups are kept for 30 days [1]. The policy was adopted in 2019 [2]. ❌¹"}
    assert blocks[1]["text"]["text"].startswith("❌¹ contradicted: source says 2018 — \"The policy was adopted in 2018.\"")
    assert blocks[2]["text"]["text"] == (
        "*Sources*\n[1] <https://wiki.example.com/backups?a=1&amp;b=2|Backups>\n[2] History — docs/history.md")
    assert blocks[-1]["type"] == "context"
    context = blocks[-1]["elements"][0]["text"]
    assert context == "1 of 2 claims verified; 1 contradicted (checked against the knowledge base)"
    assert text.startswith("Backups are kept for 30 days [1].") and "❌¹" in text and context in text
    timed = render_answer(backup_answer(), show_timings=True)[0][-1]["elements"][0]["text"]  # only when asked
    assert timed == context + " · retrieve 12 ms · generate 3 ms · verify 40 ms"


def test_render_escapes_pings_and_links_in_generated_text():
    answer = Answer(question="q", text="Hey <!channel> and <!here>, ask <@U123> & see <https://evil.example|docs>. @everyone",
                    sources=(Source(1, "<!everyone> title", path="a<b>.md"),), notes=("LLM <down>",))
    blocks, text = render_answer(answer)
    for t in [*all_texts(blocks), text]:
        assert "<!" not in t and "<@" not in t and "<https://evil" not in t
    assert "&lt;!channel&gt;" in blocks[0]["text"]["text"]
    assert "&amp; see &lt;https://evil.example|docs&gt;" in blocks[0]["text"]["text"]
    assert "[1] &lt;!everyone&gt; title — a&lt;b&gt;.md" in text


def test_source_urls_with_other_schemes_are_not_links():
    answer = Answer(question="q", text="x", sources=(Source(1, "T", url="javascript:alert(1)"),))
    blocks, _ = render_answer(answer)
    assert "[1] T — javascript:alert(1)" in all_texts(blocks)[1]


def test_error_answer_shows_apology_with_error_id_and_notes():
    answer = Answer(question="q", text="", error="store down: secret detail", notes=("LLM unavailable",))
    blocks, text = render_answer(answer, error_id="abc123")
    assert "Sorry, something went wrong" in text and "abc123" in text and "LLM unavailable" in text
    assert "secret detail" not in text and all("secret detail" not in t for t in all_texts(blocks))
    assert blocks[-1]["elements"][0]["text"].startswith("Not verified")
    own = Answer(question="q", text="Sorry, the store is down <now> (error id 77).", error="store down")
    blocks, text = render_answer(own, error_id="abc123")
    assert blocks[0]["text"]["text"] == "Sorry, the store is down &lt;now&gt; (error id 77)." and "abc123" not in text


def test_long_answer_is_split_into_sections_within_limits():
    sentence = "Backups & restores are tested every quarter by the platform team. "
    answer = Answer(question="q", text=sentence * 200)  # ~13,000 chars, & escapes to &amp;
    blocks, _ = render_answer(answer)
    sections = [b for b in blocks if b["type"] == "section"]
    assert len(sections) >= 5
    assert all(len(s["text"]["text"]) <= SECTION_LIMIT for s in sections)
    joined = " ".join(s["text"]["text"] for s in sections)
    assert joined.count("&amp;") == 200 and "&amp" not in joined.replace("&amp;", "")


def test_huge_answer_stays_within_fifty_blocks():
    answer = Answer(question="q", text="word " * 60_000)
    blocks, text = render_answer(answer)
    assert len(blocks) == BLOCK_LIMIT
    assert "shortened" in blocks[-2]["text"]["text"]
    assert len(text) <= 12_000


def test_split_escaped_hard_cut_never_breaks_an_entity():
    text = "&amp;" * 1000  # no separators at all
    pieces = split_escaped(text, 3000)
    assert "".join(pieces) == text
    assert all(len(p) <= 3000 and p.startswith("&amp;") and p.endswith("&amp;") for p in pieces)


# ----------------------------------------------------------------------------------------------
# Rendering: properties
# ----------------------------------------------------------------------------------------------

_ENTITY_FREE = re.compile(r"&(?!amp;|lt;|gt;)")
_LINK = re.compile(r"<https?://[^\s<>|]+\|[^<>]*>")

_PIECES = [*"<>&!@|*_ ~.`\n", "<!channel>", "@everyone", "<@U1>", "&amp;", "ab", "é", "⚠️"]
any_text = st.lists(st.sampled_from(_PIECES), max_size=120).map("".join) | st.text(max_size=200)


@st.composite
def answers(draw: Any) -> Answer:
    text = draw(any_text)
    verdicts = []
    for _ in range(draw(st.integers(0, 4))):
        end = draw(st.integers(0, len(text)))
        label = draw(st.sampled_from(list(Label)))
        ev = Evidence(text=draw(any_text), title=draw(any_text), url=draw(st.sampled_from(["", "https://x.example/<a>"])))
        verdicts.append(Verdict(Claim(text[:end], 0, end), label, 0.5, "default", evidence=ev,
                                sentence=draw(any_text), conflict=draw(any_text)))
    sources = tuple(Source(i + 1, draw(any_text), url=draw(st.sampled_from(["", "https://docs.example/p?q=1&r=<2>", "ftp://x"])),
                           path=draw(any_text)) for i in range(draw(st.integers(0, 3))))
    return Answer(question="q", text=text, sources=sources, verdicts=tuple(verdicts),
                  notes=tuple(draw(st.lists(any_text, max_size=2))), idk=draw(st.booleans()),
                  error=draw(st.sampled_from(["", "boom"])), timings={"retrieve": 1.0})


@hyp_settings(max_examples=150, deadline=None)
@given(answers())
def test_rendering_never_lets_generated_text_through_unescaped(answer: Answer):
    blocks, text = render_answer(answer, error_id="e1")
    assert 1 <= len(blocks) <= BLOCK_LIMIT
    for t in [*all_texts(blocks), text]:
        rest = _LINK.sub("", t)  # the only markup we emit: <https://...|title> source links
        assert "<" not in rest and ">" not in rest
        assert not _ENTITY_FREE.search(t)
    for b in blocks:
        if b["type"] == "section":
            assert 0 < len(b["text"]["text"]) <= SECTION_LIMIT and b["text"]["verbatim"] is True
        else:
            assert b["type"] == "context" and len(b["elements"][0]["text"]) <= SECTION_LIMIT


@hyp_settings(max_examples=150, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("ab &<>.\n")), max_size=3000), st.integers(16, 200))
def test_split_escaped_respects_limit_and_entities(raw: str, limit: int):
    text = escape(raw)
    pieces = split_escaped(text, limit)
    assert all(0 < len(p) <= limit for p in pieces)
    assert all(not _ENTITY_FREE.search(p) for p in pieces)
    assert "".join(pieces).replace(" ", "").replace("\n", "") == text.replace(" ", "").replace("\n", "")


# ----------------------------------------------------------------------------------------------
# Mode selection
# ----------------------------------------------------------------------------------------------


def test_slack_mode(settings):
    assert slack_mode(settings) is None
    assert slack_mode(settings.replace(slack_bot_token="xoxb-1", slack_app_token="xapp-1")) == "socket"
    assert slack_mode(settings.replace(slack_bot_token="xoxb-1", slack_app_token="xapp-1",
                                       slack_signing_secret="s")) == "socket"
    assert slack_mode(settings.replace(slack_bot_token="xoxb-1", slack_signing_secret="s")) == "http"
    assert slack_mode(settings.replace(slack_signing_secret="s", slack_app_token="xapp-1")) is None


# ----------------------------------------------------------------------------------------------
# Scenarios: a real AsyncApp over HTTP and the real Core, with fakes only for remote services
# ----------------------------------------------------------------------------------------------

KB_DOCS = {
    "releases.md": "# Releases\n\nravbot 1.0 was released in 2018 by the Tools team in Berlin.\n"
                   "The 2.0 release added Discord support in 2021.\n",
    "backups.md": "# Backups\n\nBackups of the index are kept for 30 days on the storage server. "
                  "Restores are tested by the platform team.\n",
    "alerts.md": "# Alerts\n\nTo alert the whole channel about an outage, write <!channel> & @everyone "
                 "in the #ops channel. Outage alerts are announced by the incident commander.\n",
}
# The LLM's reply unless a test scripts another: cited, and without entities or numbers, so it
# has no claims to verify and scenarios that are about Slack stay quick.
PLAIN_REPLY = "Backups are kept on the storage server [1]."


@pytest.fixture(scope="module")
def kb_folder(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("kb")
    for name, text in KB_DOCS.items():
        (folder / name).write_text(text)
    return folder


def core_settings(data_dir: Path, kb_folder: Path, **overrides: Any) -> Settings:
    chosen = {"rate_limit_per_minute": 0, "slack_admins": "UADMIN", "llm_retries": 0, "correction_rounds": 0,
              **overrides}
    return load_settings(env={}, data_dir=str(data_dir), sources=f"kb={kb_folder}", wikipedia="off", **chosen)


@pytest.fixture(scope="module")
def llm_server():
    """The remote LLM: a local OpenAI-compatible server, shared by the module's Core."""
    with FakeOpenAI() as fake:
        yield fake


@pytest.fixture(scope="module")
def core(tmp_path_factory, kb_folder, llm_server, fake_embedder):
    """The real Core (`bot.app.build`), indexed once for the module; its LLM is `llm_server`, its
    embedder the deterministic fake (these scenarios test Slack, not the model)."""
    app = build(core_settings(tmp_path_factory.mktemp("core"), kb_folder, llm_base_url=llm_server.url),
                run_scheduler=False, embedder=fake_embedder)
    app.index_one("kb")
    yield app
    app.close()


@pytest.fixture
def make_core(tmp_path, kb_folder, fake_embedder):
    """A private real Core (indexed, the fake embedder) for scenarios that change settings or break it."""
    apps = []

    def make(**overrides: Any):
        app = build(core_settings(tmp_path / f"core{len(apps)}", kb_folder, **overrides), run_scheduler=False,
                    embedder=fake_embedder)
        apps.append(app)
        app.index_one("kb")
        return app

    yield make
    for app in apps:
        app.close()


class LLMScript:
    """What the shared fake LLM answers during one test, and the prompts it received in that test.

    `hold()` keeps every completion waiting until `release()`, like a slow remote model."""

    def __init__(self, server: FakeOpenAI):
        self.server = server
        self.first = len(server.requests)
        self.gate = threading.Event()
        self.gate.set()
        self.say(PLAIN_REPLY)

    def say(self, text: str) -> None:
        def reply(body: dict) -> str:
            self.gate.wait(20)
            return text
        self.server.respond_with(reply)

    def hold(self) -> None:
        self.gate.clear()

    def release(self) -> None:
        self.gate.set()

    def prompts(self) -> list[str]:
        """The user prompts sent to the LLM in this test (each holds the question)."""
        return [user for _, user in self.server.prompts()[self.first:]]


@pytest.fixture
def llm(llm_server):
    script = LLMScript(llm_server)
    yield script
    script.release()


_ts_bases = itertools.count(1000, 1000)


@pytest.fixture
def api():
    # Message timestamps differ between tests: the module's Core keeps every answer it recorded.
    with FakeSlackAPI(admins={"UWSADMIN"}, _ts=itertools.count(next(_ts_bases))) as fake:
        yield fake


def slack_settings_for(core, api: FakeSlackAPI, **more: Any) -> Settings:
    return core.settings.replace(slack_bot_token="xoxb-test", slack_signing_secret=SECRET,
                                 slack_api_url=api.api_url, **{"slack_retry_backoff": 0.01, **more})


@contextlib.asynccontextmanager
async def serving(core, settings: Settings):
    """The Bolt app for `core` served over real HTTP on loopback; yields its /slack/events URL.
    On exit, waits for the listeners still answering (bounded) so nothing spills into the next test."""
    runner = await start_http(build_slack_app(core, settings), "127.0.0.1", 0)
    try:
        yield f"http://127.0.0.1:{runner.addresses[0][1]}/slack/events"
    finally:
        await runner.cleanup()
        pending = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        if pending:
            await asyncio.wait(pending, timeout=20)


@pytest.fixture
async def bolt(core, api, llm):
    async with serving(core, slack_settings_for(core, api)) as url:
        yield url
        llm.release()


def sign(body: str, timestamp: int | None = None, secret: str = SECRET) -> dict[str, str]:
    ts = str(int(time.time()) if timestamp is None else timestamp)
    sig = SignatureVerifier(secret).generate_signature(timestamp=ts, body=body)
    return {"X-Slack-Request-Timestamp": ts, "X-Slack-Signature": sig}


async def send(url: str, body: str, content_type: str, headers: dict[str, str] | None = None,
               **sign_args: Any) -> tuple[int, str]:
    all_headers = {"Content-Type": content_type, **sign(body, **sign_args), **(headers or {})}
    async with aiohttp.ClientSession() as session, session.post(url, data=body.encode(), headers=all_headers) as r:
        return r.status, await r.text()


async def slash(url: str, api: FakeSlackAPI, text: str, command: str = "/ask", user: str = "U111",
                extra: dict | None = None, **kw: Any) -> tuple[int, str]:
    form = {"token": "legacy", "team_id": TEAM_ID, "team_domain": "test", "channel_id": "C111",
            "channel_name": "general", "user_id": user, "user_name": user.lower(), "command": command,
            "text": text, "api_app_id": "A111", "response_url": api.response_url(user),
            "trigger_id": "1.2.3", **(extra or {})}
    return await send(url, urlencode(form), "application/x-www-form-urlencoded", **kw)


_event_ids = iter(range(1, 10_000))


async def event(url: str, ev: dict, event_id: str | None = None, **kw: Any) -> tuple[int, str]:
    body = {"token": "legacy", "team_id": TEAM_ID, "api_app_id": "A111", "type": "event_callback",
            "event": ev, "event_id": event_id or f"Ev{next(_event_ids):05d}", "event_time": int(time.time()),
            "authorizations": [{"team_id": TEAM_ID, "user_id": BOT_USER_ID, "is_bot": True}]}
    return await send(url, json.dumps(body), "application/json", **kw)


def mention(text: str, ts: str = "1700000100.000100", user: str = "U222", **more: Any) -> dict:
    return {"type": "app_mention", "user": user, "text": text, "ts": ts, "channel": "C222",
            "event_ts": ts, **more}


def reaction(kind: str, name: str, ts: str, user: str = "U333", item_user: str = BOT_USER_ID) -> dict:
    return {"type": kind, "user": user, "reaction": name, "item_user": item_user,
            "item": {"type": "message", "channel": "C222", "ts": ts}, "event_ts": "1700000500.000100"}


def feedback_rows(core, sql: str, *args: Any) -> list[dict]:
    """Rows of the Core's feedback database, read through a connection of our own (read-only)."""
    if not core.feedback.path.exists():  # the Core creates it on first use
        return []
    with contextlib.closing(sqlite3.connect(f"file:{core.feedback.path}?mode=ro", uri=True)) as db:
        db.row_factory = sqlite3.Row
        try:
            return [dict(r) for r in db.execute(sql, args)]
        except sqlite3.OperationalError as e:
            if "no such table" in str(e):  # the Core is creating the database right now
                return []
            raise


def recorded(core, ts: str) -> dict | None:
    """The answer the Core's feedback store remembers for Slack message `ts`."""
    rows = feedback_rows(core, "select * from answers where platform = 'slack' and message_id = ?", ts)
    return rows[0] if rows else None


def votes(core, ts: str) -> dict[str, int | None]:
    rows = feedback_rows(core, "select user, value from votes where platform = 'slack' and message_id = ?", ts)
    return {r["user"]: r["value"] for r in rows}


def posted_text(call) -> str:
    return " ".join([*all_texts(call.body.get("blocks") or []), call.body["text"]])


async def _until(condition: Callable[[], Any], timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("condition not met in time")
        await asyncio.sleep(0.02)


# --- /ask --------------------------------------------------------------------------------------


async def test_ask_acks_before_the_pipeline_then_answers_with_a_contradiction_flag(bolt, api, core, llm):
    llm.say("ravbot 1.0 was released in 2020 [1].")  # the documents say 2018
    llm.hold()  # the remote model is busy until we say so
    status, body = await slash(bolt, api, "when was ravbot 1.0 released?")
    assert status == 200 and body == ""  # acked while the pipeline waits for the model
    parent = (await api.wait_for("chat.postMessage"))[0]
    assert parent.body["channel"] == "C111" and "thread_ts" not in parent.body
    assert parent.body["text"] == "Question from <@U111>: when was ravbot 1.0 released?"
    await _until(lambda: llm.prompts())
    assert "when was ravbot 1.0 released?" in llm.prompts()[0]
    llm.release()
    reply = (await api.wait_for("chat.postMessage", 2))[1]
    parent_ts = parent.response["ts"]
    assert reply.body["channel"] == "C111" and reply.body["thread_ts"] == parent_ts
    blocks = reply.body["blocks"]
    assert blocks[0]["text"]["text"] == "ravbot 1.0 was released in 2020 [1]. ❌¹"
    footnote = blocks[1]["text"]["text"]
    assert footnote.startswith("❌¹ contradicted: source says 2018")
    assert "ravbot 1.0 was released in 2018 by the Tools team in Berlin." in footnote
    texts = " ".join(all_texts(blocks))
    assert "*Sources*\n[1] Releases — " in texts and "releases.md" in texts
    assert "1 contradicted" in blocks[-1]["elements"][0]["text"]
    assert reply.body["link_names"] is False and reply.body["parse"] == "none"
    await _until(lambda: recorded(core, reply.response["ts"]))
    row = recorded(core, reply.response["ts"])
    assert (row["channel"], row["thread"], row["asker"]) == ("C111", parent_ts, "U111")
    assert row["question"] == "when was ravbot 1.0 released?" and row["flagged"] == 1


async def test_empty_ask_gets_an_ephemeral_usage_hint(bolt, api, llm):
    status, body = await slash(bolt, api, "   ")
    assert status == 200 and json.loads(body) == {"text": USAGE, "response_type": "ephemeral"}
    assert llm.prompts() == [] and api.of("chat.postMessage") == []


async def test_a_question_the_core_refuses_is_answered_privately(bolt, api, llm):
    await slash(bolt, api, "??? !!!")
    (reply,) = await api.wait_for("respond")
    assert reply.body["text"] == "That doesn't look like a question; please ask in words."
    assert reply.body["response_type"] == "ephemeral"
    assert llm.prompts() == [] and api.of("chat.postMessage") == []


async def test_rate_limited_asker_is_told_to_wait(make_core, api):
    core = make_core(rate_limit_per_minute=1)
    async with serving(core, slack_settings_for(core, api)) as url:
        await slash(url, api, "How long are backups kept?")
        await slash(url, api, "And restores?")
        (wait,) = await api.wait_for("respond")
        assert wait.body["response_type"] == "ephemeral" and "please wait" in wait.body["text"]
        parent, answer = await api.wait_for("chat.postMessage", 2)
        assert parent.body["text"].endswith("How long are backups kept?")
        assert "30 days" in posted_text(answer)
        await slash(url, api, "again?", user="U999")  # the limit is per user
        await api.wait_for("chat.postMessage", 4)
    assert len(api.of("respond")) == 1


async def test_ask_escapes_the_question_in_the_parent_message(bolt, api, llm):
    await slash(bolt, api, "how long are backups kept? <!channel> & <!here>")
    parent = (await api.wait_for("chat.postMessage"))[0]
    assert parent.body["text"] == "Question from <@U111>: how long are backups kept? &lt;!channel&gt; &amp; &lt;!here&gt;"
    await api.wait_for("chat.postMessage", 2)
    assert "how long are backups kept? <!channel> & <!here>" in llm.prompts()[0]


# --- mentions ----------------------------------------------------------------------------------


async def test_mention_answers_in_thread_with_eyes_while_working(bolt, api, core, llm):
    status, _ = await event(bolt, mention("<@UBOT> how long do we keep backups?"))
    assert status == 200
    (reply,) = await api.wait_for("chat.postMessage")
    await api.wait_for("reactions.remove")
    assert reply.body["thread_ts"] == "1700000100.000100" and reply.body["channel"] == "C222"
    assert reply.body["blocks"][0]["text"]["text"] == PLAIN_REPLY
    assert "how long do we keep backups?" in llm.prompts()[0]
    order = [c.method for c in api.calls if c.method in ("reactions.add", "chat.postMessage", "reactions.remove")]
    assert order == ["reactions.add", "chat.postMessage", "reactions.remove"]
    added = api.of("reactions.add")[0].body
    assert added == {"channel": "C222", "timestamp": "1700000100.000100", "name": "eyes"}
    await _until(lambda: recorded(core, reply.response["ts"]))
    row = recorded(core, reply.response["ts"])
    assert (row["channel"], row["thread"], row["asker"], row["answer"]) == (
        "C222", "1700000100.000100", "U222", PLAIN_REPLY)


async def test_mention_inside_a_thread_answers_in_that_thread(bolt, api):
    await event(bolt, mention("<@UBOT> and restores?", ts="1700000200.000300", thread_ts="1700000100.000100"))
    (reply,) = await api.wait_for("chat.postMessage")
    assert reply.body["thread_ts"] == "1700000100.000100"
    assert api.of("reactions.add")[0].body["timestamp"] == "1700000200.000300"


async def test_own_and_other_bot_messages_are_ignored(bolt, api, llm):
    await event(bolt, mention("<@UBOT> where are backups kept? (loop)", user=BOT_USER_ID, bot_id=BOT_ID))
    await event(bolt, mention("<@UBOT> where are backups kept? (bot)", user="U999", bot_id="B999"))
    await event(bolt, mention("<@UBOT> where are backups kept? (human)", ts="1700000300.000100"))
    await api.wait_for("chat.postMessage")
    await api.wait_for("reactions.remove")
    assert len(llm.prompts()) == 1 and "(human)" in llm.prompts()[0]
    assert len(api.of("chat.postMessage")) == 1


async def test_other_bots_are_answered_when_allowed(core, api, llm):
    async with serving(core, slack_settings_for(core, api, slack_allow_bots=True)) as url:
        await event(url, mention("<@UBOT> where are backups kept? (bot)", user="U999", bot_id="B999"))
        await api.wait_for("reactions.remove")
    assert len(llm.prompts()) == 1 and "where are backups kept? (bot)" in llm.prompts()[0]
    assert len(api.of("chat.postMessage")) == 1


async def test_retried_event_is_answered_once(bolt, api, llm):
    ev = mention("<@UBOT> where are backups kept? (retried)")
    await event(bolt, ev, event_id="EvRETRY")
    await event(bolt, ev, event_id="EvRETRY", headers={"X-Slack-Retry-Num": "1", "X-Slack-Retry-Reason": "http_timeout"})
    await event(bolt, mention("<@UBOT> where are backups kept? (next)", ts="1700000400.000100"))
    await api.wait_for("chat.postMessage", 2)
    await api.wait_for("reactions.remove", 2)
    asked = llm.prompts()
    assert len(asked) == 2 and sum("(retried)" in p for p in asked) == 1 and sum("(next)" in p for p in asked) == 1


async def test_empty_mention_gets_usage_hint(bolt, api, llm):
    await event(bolt, mention("<@UBOT>   "))
    (hint,) = await api.wait_for("chat.postEphemeral")
    assert hint.body["user"] == "U222" and "Ask me a question" in hint.body["text"]
    assert llm.prompts() == []


# --- what the answer shows -------------------------------------------------------------------


async def test_generated_pings_and_links_are_escaped_in_the_posted_answer(bolt, api, llm):
    llm.say("Write <!channel> @everyone <https://evil.example|click> & <@U42> to alert the channel [1].")
    await event(bolt, mention("<@UBOT> how do I alert the whole channel?"))
    (reply,) = await api.wait_for("chat.postMessage")
    body = reply.body["blocks"][0]["text"]
    assert body["text"].startswith("Write &lt;!channel&gt; @everyone &lt;https://evil.example|click&gt; "
                                   "&amp; &lt;@U42&gt; to alert the channel [1].")
    assert body["verbatim"] is True
    for text in [*all_texts(reply.body["blocks"]), reply.body["text"]]:
        assert "<!" not in text and "<@" not in text and "<https://evil" not in text


async def test_a_long_answer_is_split_into_sections_within_block_kit_limits(bolt, api, llm):
    sentence = "Restores are tested by the platform team on the storage server & logged [1]. "
    llm.say(sentence * 300)  # ~23,000 characters, no claims to verify
    await event(bolt, mention("<@UBOT> how are restores tested?"))
    (reply,) = await api.wait_for("chat.postMessage", timeout=90)  # 300 sentences to split and check: slow on a busy machine
    blocks = reply.body["blocks"]
    sections = [b["text"]["text"] for b in blocks if b["type"] == "section"]
    assert len(blocks) <= BLOCK_LIMIT and len(sections) >= 8
    assert all(0 < len(s) <= SECTION_LIMIT for s in sections)
    answer = " ".join(s for s in sections if s.startswith("Restores") or s.startswith("[1]"))
    assert answer.count("&amp; logged") == 300 and "& logged" not in answer
    assert len(reply.body["text"]) <= 12_000


async def test_llm_down_falls_back_to_quoting_the_documents_with_a_note(bolt, api, llm_server):
    llm_server.error(500)  # llm_retries=0: one failed call
    await event(bolt, mention("<@UBOT> How long are backups kept?"))
    (reply,) = await api.wait_for("chat.postMessage")
    texts = " ".join(all_texts(reply.body["blocks"]))
    assert "30 days" in texts
    assert "_Note: The language model was unavailable" in texts
    assert llm_server.pending == 0


async def test_a_broken_knowledge_base_is_reported_in_the_thread(make_core, api, caplog):
    core = make_core()
    core.parts.store.close()
    async with serving(core, slack_settings_for(core, api)) as url:
        await event(url, mention("<@UBOT> How long are backups kept?"))
        (reply,) = await api.wait_for("chat.postMessage")
        await api.wait_for("reactions.remove")
    assert reply.body["thread_ts"] == "1700000100.000100"
    assert "knowledge base is unavailable" in reply.body["blocks"][0]["text"]["text"]
    assert "knowledge base is unavailable" in reply.body["text"]
    assert recorded(core, reply.response["ts"]) is None  # errors are not answers to vote on
    assert any("error id" in r.getMessage() for r in caplog.records if r.name == "adapters.slack")


async def test_rate_limited_and_failing_posts_are_retried(bolt, api):
    api.fail("chat.postMessage", status=429, retry_after=0)
    api.fail("chat.postMessage", status=500)
    await event(bolt, mention("<@UBOT> q"))
    (reply,) = await api.wait_for("chat.postMessage")
    assert [c.status for c in api.attempts("chat.postMessage")] == [429, 500, 200]
    assert reply.body["thread_ts"] == "1700000100.000100"


async def test_a_post_that_slack_refuses_falls_back_to_a_short_message(bolt, api):
    api.fail("chat.postMessage", error="invalid_blocks")
    await event(bolt, mention("<@UBOT> q"))
    (reply,) = await api.wait_for("chat.postMessage")
    assert "Sorry, something went wrong" in reply.body["text"] and "blocks" not in reply.body


# --- votes -------------------------------------------------------------------------------------


async def test_reactions_become_votes(bolt, api, core):
    await event(bolt, mention("<@UBOT> where are backups kept?"))
    (reply,) = await api.wait_for("chat.postMessage")
    answer_ts = reply.response["ts"]
    await _until(lambda: recorded(core, answer_ts))
    await event(bolt, reaction("reaction_added", "+1::skin-tone-2", answer_ts))
    await event(bolt, reaction("reaction_added", "thumbsdown", answer_ts, user="U444"))
    await _until(lambda: len(votes(core, answer_ts)) == 2)
    assert votes(core, answer_ts) == {"U333": 1, "U444": -1}
    await event(bolt, reaction("reaction_removed", "+1", answer_ts))
    await event(bolt, reaction("reaction_added", "heart", answer_ts))  # not a vote
    await event(bolt, reaction("reaction_added", "-1", "1600000000.000001", item_user="U999"))  # not ours
    await _until(lambda: votes(core, answer_ts)["U333"] is None)
    assert votes(core, answer_ts) == {"U333": None, "U444": -1}
    assert votes(core, "1600000000.000001") == {}
    await event(bolt, reaction("reaction_added", "+1", answer_ts, user="U444"))  # holds both: 👍 is the latest
    await _until(lambda: votes(core, answer_ts)["U444"] == 1)
    await event(bolt, reaction("reaction_removed", "+1", answer_ts, user="U444"))  # the 👎 still held counts
    await _until(lambda: votes(core, answer_ts)["U444"] == -1)


# --- admin -------------------------------------------------------------------------------------


async def test_admin_reindex_acks_at_once_and_reports_when_done(bolt, api, core):
    status, body = await slash(bolt, api, "reindex kb", command="/ask-admin", user="UADMIN")
    assert status == 200 and body == ""
    (reply,) = await api.wait_for("respond")
    assert reply.body["text"] == "Reindex of kb started; I'll report when it is done."
    assert reply.body["response_type"] == "ephemeral"
    (done,) = await api.wait_for("chat.postMessage", timeout=30)
    assert done.body["channel"] == "C111"
    assert re.fullmatch(r"Reindex of kb finished in [\d.]+ s: 0 added, 0 changed, 3 unchanged, 0 removed, "
                        r"0 skipped, 0 failed\.", done.body["text"]), done.body["text"]


async def test_admin_command_allowed_for_workspace_admin_by_users_info(bolt, api):
    await slash(bolt, api, "status", command="/ask-admin", user="UWSADMIN")  # not in slack_admins
    (reply,) = await api.wait_for("respond")
    assert reply.body["text"].startswith("Index: 3 documents,") and "Reindex scheduler" in reply.body["text"]
    assert api.of("users.info")[0].body["user"] == "UWSADMIN"


async def test_admin_command_refused_even_with_crafted_payload_fields(bolt, api, core):
    runs_before = len(core.feedback.runs(limit=1000, source="kb"))
    crafted = {"is_admin": "true", "user_name": "UADMIN", "is_enterprise_install": "true"}
    await slash(bolt, api, "reindex", command="/ask-admin", user="U555", extra=crafted)
    (reply,) = await api.wait_for("respond")
    assert reply.body["text"].startswith("Sorry, only ravbot admins can run admin commands.")
    assert reply.body["response_type"] == "ephemeral"
    assert core.reindexer.running() == {} and len(core.feedback.runs(limit=1000, source="kb")) == runs_before
    assert api.of("chat.postMessage") == []


# --- requests that are not Slack's -------------------------------------------------------------


async def test_bad_signature_is_rejected(bolt, api, llm):
    status, _ = await slash(bolt, api, "q", secret="not-the-secret")
    assert status == 401
    status, _ = await event(bolt, mention("<@UBOT> q"), secret="not-the-secret")
    assert status == 401
    assert llm.prompts() == [] and api.attempts("chat.postMessage") == []


async def test_stale_timestamp_is_rejected(bolt, api, llm):
    status, _ = await slash(bolt, api, "q", timestamp=int(time.time()) - 10 * 60)  # correctly signed, replayed
    assert status == 401
    assert llm.prompts() == [] and api.attempts("chat.postMessage") == []


# --- serving -----------------------------------------------------------------------------------


async def test_serve_slack_http_mode_runs_until_cancelled(core, api):
    port = free_port()
    task = asyncio.create_task(serve_slack(core, slack_settings_for(core, api, port=port), host="127.0.0.1"))
    url = f"http://127.0.0.1:{port}/slack/events"
    body = json.dumps({"type": "url_verification", "challenge": "c-123", "token": "legacy"})
    for _ in range(200):
        try:
            status, text = await send(url, body, "application/json")
            break
        except aiohttp.ClientConnectionError:
            await asyncio.sleep(0.05)
    assert status == 200 and json.loads(text)["challenge"] == "c-123"
    assert (await send(url, body, "application/json", secret="wrong"))[0] == 401
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    with pytest.raises(aiohttp.ClientConnectionError):
        await send(url, body, "application/json")


async def test_serve_slack_without_tokens_says_what_is_missing(core):
    with pytest.raises(ValueError, match="SLACK_BOT_TOKEN"):
        await serve_slack(core, core.settings)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# --- without an LLM: extractive answers from the documents ----------------------------------


async def test_extractive_answers_escape_document_text_and_take_votes(make_core, api):
    core = make_core()  # no llm_base_url: answers quote the documents
    async with serving(core, slack_settings_for(core, api)) as url:
        await event(url, mention("<@UBOT> How long are backups kept?"))
        (reply,) = await api.wait_for("chat.postMessage")
        texts = " ".join(all_texts(reply.body["blocks"]))
        assert "30 days" in texts and "*Sources*" in texts and "backups.md" in texts
        await event(url, reaction("reaction_added", "+1::skin-tone-3", reply.response["ts"]))
        await _until(lambda: core.feedback.stats()["up"] == 1)

        await event(url, mention("<@UBOT> How do I alert the whole channel about an outage?", ts="1700000600.000100"))
        replies = await api.wait_for("chat.postMessage", 2)
        posted = posted_text(replies[1])
        assert "&lt;!channel&gt; &amp; @everyone" in posted and "<!channel>" not in posted


# ----------------------------------------------------------------------------------------------
# The manifest matches what the app listens to
# ----------------------------------------------------------------------------------------------


def test_manifest_declares_the_commands_events_and_scopes_the_app_uses():
    import yaml

    from config.settings import PROJECT_ROOT

    manifest = yaml.safe_load((PROJECT_ROOT / "config" / "slack-manifest.yml").read_text())
    commands = {c["command"] for c in manifest["features"]["slash_commands"]}
    assert commands == {"/ask", "/ask-admin"}
    assert set(manifest["settings"]["event_subscriptions"]["bot_events"]) == {
        "app_mention", "reaction_added", "reaction_removed"}
    scopes = set(manifest["oauth_config"]["scopes"]["bot"])
    assert {"commands", "app_mentions:read", "chat:write", "reactions:read", "reactions:write", "users:read"} <= scopes


# --- logs --------------------------------------------------------------------------------------


async def test_a_normal_start_warns_nothing_and_each_question_logs_one_line(core, api, llm, monkeypatch, caplog,
                                                                             tmp_path):
    monkeypatch.setenv("SLACK_BOT_TOKEN", "xoxb-test")  # how deployments give the token; Bolt reads it itself
    caplog.set_level(logging.INFO)
    question = "where are backups kept?"

    def question_lines() -> list[str]:
        return [r.getMessage() for r in caplog.records if r.name == "bot.app" and r.getMessage().startswith("question ")]

    async with serving(core, slack_settings_for(core, api)) as url:
        assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []
        await event(url, mention(f"<@UBOT> {question}"))
        await api.wait_for("chat.postMessage")
        await _until(lambda: question_lines())
        [line] = question_lines()
        assert "platform=slack" in line and "latency_ms=" in line and "labels=SUPPORTED:" in line
        assert re.search(r"sources=[0-9a-f]{8,}(,|$)", line)  # chunk ids
        assert question not in line and "backups" not in line.lower()
    # with `log_questions` on: a Core over the same index (its store and embedder passed in)
    logging_core = build(core.settings.replace(log_questions=True, data_dir=str(tmp_path / "data")),
                         run_scheduler=False, embedder=core.parts.embedder, store=core.parts.store)
    try:
        async with serving(logging_core, slack_settings_for(logging_core, api)) as url:
            await event(url, mention(f"<@UBOT> {question}", ts="1700000200.000100"))
            await api.wait_for("chat.postMessage", 2)
            await _until(lambda: len(question_lines()) == 2)
            assert f"question={question!r}" in question_lines()[1]
    finally:
        logging_core.close()


def test_retries_wait_the_configured_backoff_doubling_with_up_to_half_again_of_jitter(core, api):
    client = make_client(slack_settings_for(core, api, slack_retry_backoff=0.1))
    [server_errors] = [h for h in client.retry_handlers if type(h).__name__ == "AsyncServerErrorRetryHandler"]
    for attempt, wait in [(0, 0.1), (1, 0.2), (2, 0.4)]:
        waits = [server_errors.interval_calculator.calculate_sleep_duration(attempt) for _ in range(50)]
        assert all(wait <= w <= 1.5 * wait for w in waits)
