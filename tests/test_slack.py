"""Slack adapter: pure rendering (known values + properties) and bolt-python style scenarios.

Scenarios run a real Bolt `AsyncApp` behind its real aiohttp handler (HTTP mode) on loopback,
with its Web API client pointed at `tests.fakes.slack_api.FakeSlackAPI`; requests are signed
like Slack signs them. The Core is `ScriptedCore`, a recorder implementing the `adapters.core.Core`
protocol, so each scenario controls the exact Answer the adapter has to render.
"""

from __future__ import annotations

import asyncio
import json
import re
import socket
import threading
import time
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
    render_answer,
    serve_slack,
    slack_mode,
    split_escaped,
    start_http,
)
from pipeline.types import Answer, Claim, Evidence, Label, Question, Source, Verdict
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
    assert context == ("1 of 2 claims verified; 1 contradicted (checked against the knowledge base)"
                       " · retrieve 12 ms · generate 3 ms · verify 40 ms")
    assert text.startswith("Backups are kept for 30 days [1].") and "❌¹" in text and context in text


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
# Scenarios: a real AsyncApp over HTTP, a fake Slack Web API
# ----------------------------------------------------------------------------------------------


class ScriptedCore:
    """Implements `adapters.core.Core`, returning scripted answers and recording every call.

    Authorisation mimics the real Core: admins are `admins` or platform admins."""

    def __init__(self) -> None:
        self.answer: Answer | Exception = backup_answer()
        self.refusal: str | None = None
        self.gate = threading.Event()
        self.gate.set()
        self.admins = {"UADMIN"}
        self.asks: list[Question] = []
        self.recorded: list[tuple] = []
        self.votes: list[tuple] = []
        self.admin_calls: list[tuple] = []

    def ask(self, question: Question) -> Answer:
        self.asks.append(question)
        self.gate.wait(20)
        if isinstance(self.answer, Exception):
            raise self.answer
        return self.answer

    def check_question(self, question: Question) -> str | None:
        return self.refusal

    def record_answer(self, platform, channel, message_id, thread, asker, answer) -> None:
        self.recorded.append((platform, channel, message_id, thread, asker, answer))

    def vote(self, platform, message_id, user, value) -> bool:
        self.votes.append((platform, message_id, user, value))
        return any(r[2] == message_id for r in self.recorded)

    def is_admin(self, platform, user, roles=(), is_platform_admin=False) -> bool:
        return user in self.admins or is_platform_admin

    def admin(self, platform, user, roles, command, is_platform_admin=False, notify=None) -> str:
        self.admin_calls.append((platform, user, roles, command, is_platform_admin))
        if not self.is_admin(platform, user, roles, is_platform_admin):
            return "Sorry, only ravbot admins can do that."
        if command.startswith("reindex") and notify:
            threading.Thread(target=notify, args=("Reindex of docs finished: 3 documents <!channel>",)).start()
            return "Reindexing docs in the background."
        return f"ok: {command}"


@pytest.fixture
def api():
    with FakeSlackAPI(admins={"UWSADMIN"}) as fake:
        yield fake


@pytest.fixture
def core() -> ScriptedCore:
    return ScriptedCore()


@pytest.fixture
def slack_settings(settings, api):
    return settings.replace(slack_bot_token="xoxb-test", slack_signing_secret=SECRET, slack_api_url=api.api_url)


@pytest.fixture
async def bolt(core, slack_settings):
    """The Bolt app served over real HTTP on loopback; yields its /slack/events URL."""
    app = build_slack_app(core, slack_settings)
    runner = await start_http(app, "127.0.0.1", 0)
    port = runner.addresses[0][1]
    yield f"http://127.0.0.1:{port}/slack/events"
    core.gate.set()
    await runner.cleanup()
    pending = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
    await asyncio.wait(pending, timeout=10) if pending else None


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


async def test_ask_acks_before_the_pipeline_then_answers_in_a_thread(bolt, api, core):
    core.gate.clear()  # the pipeline is busy until we say so
    status, body = await slash(bolt, api, "how long do we keep backups?")
    assert status == 200 and body == ""  # acked while core.ask is still blocked
    parent = (await api.wait_for("chat.postMessage"))[0]
    assert parent.body["channel"] == "C111" and "thread_ts" not in parent.body
    assert parent.body["text"] == "Question from <@U111>: how long do we keep backups?"
    core.gate.set()
    reply = (await api.wait_for("chat.postMessage", 2))[1]
    parent_ts = parent.response["ts"]
    assert reply.body["channel"] == "C111" and reply.body["thread_ts"] == parent_ts
    texts = " ".join(all_texts(reply.body["blocks"]))
    assert "<https://wiki.example.com/backups?a=1&amp;b=2|Backups>" in texts
    assert "2019 [2]. ❌¹" in texts and "source says 2018" in texts
    assert reply.body["link_names"] is False and reply.body["parse"] == "none"
    assert core.asks[0] == Question(text="how long do we keep backups?", asker="U111", platform="slack",
                                    channel="C111", thread=parent_ts)
    await _until(lambda: core.recorded)
    assert core.recorded[0][:5] == ("slack", "C111", reply.response["ts"], parent_ts, "U111")


async def test_empty_ask_gets_an_ephemeral_usage_hint(bolt, api, core):
    status, body = await slash(bolt, api, "   ")
    assert status == 200 and json.loads(body) == {"text": USAGE, "response_type": "ephemeral"}
    assert core.asks == [] and api.of("chat.postMessage") == []


async def test_refused_question_is_answered_privately(bolt, api, core):
    core.refusal = "Please wait <a minute>."
    await slash(bolt, api, "again?")
    (reply,) = await api.wait_for("respond")
    assert reply.body["text"] == "Please wait &lt;a minute&gt;." and reply.body["response_type"] == "ephemeral"
    assert core.asks == [] and api.of("chat.postMessage") == []


async def test_ask_escapes_the_question_in_the_parent_message(bolt, api, core):
    await slash(bolt, api, "is <!channel> & <!here> allowed?")
    parent = (await api.wait_for("chat.postMessage"))[0]
    assert parent.body["text"] == "Question from <@U111>: is &lt;!channel&gt; &amp; &lt;!here&gt; allowed?"
    await api.wait_for("chat.postMessage", 2)


async def test_mention_answers_in_thread_with_eyes_while_working(bolt, api, core):
    status, _ = await event(bolt, mention("<@UBOT> how long do we keep backups?"))
    assert status == 200
    (reply,) = await api.wait_for("chat.postMessage")
    await api.wait_for("reactions.remove")
    assert reply.body["thread_ts"] == "1700000100.000100" and reply.body["channel"] == "C222"
    assert core.asks[0].text == "how long do we keep backups?" and core.asks[0].thread == "1700000100.000100"
    order = [c.method for c in api.calls if c.method in ("reactions.add", "chat.postMessage", "reactions.remove")]
    assert order == ["reactions.add", "chat.postMessage", "reactions.remove"]
    added = api.of("reactions.add")[0].body
    assert added == {"channel": "C222", "timestamp": "1700000100.000100", "name": "eyes"}
    await _until(lambda: core.recorded)
    assert core.recorded[0][:5] == ("slack", "C222", reply.response["ts"], "1700000100.000100", "U222")


async def test_mention_inside_a_thread_answers_in_that_thread(bolt, api, core):
    await event(bolt, mention("<@UBOT> and restores?", ts="1700000200.000300", thread_ts="1700000100.000100"))
    (reply,) = await api.wait_for("chat.postMessage")
    assert reply.body["thread_ts"] == "1700000100.000100"
    assert api.of("reactions.add")[0].body["timestamp"] == "1700000200.000300"


async def test_own_and_other_bot_messages_are_ignored(bolt, api, core):
    await event(bolt, mention("<@UBOT> loop?", user=BOT_USER_ID, bot_id=BOT_ID))
    await event(bolt, mention("<@UBOT> from another bot", user="U999", bot_id="B999"))
    await event(bolt, mention("<@UBOT> from a human", ts="1700000300.000100"))
    await api.wait_for("chat.postMessage")
    await api.wait_for("reactions.remove")
    assert [q.text for q in core.asks] == ["from a human"]
    assert len(api.of("chat.postMessage")) == 1


async def test_other_bots_are_answered_when_allowed(core, slack_settings, api):
    app = build_slack_app(core, slack_settings.replace(slack_allow_bots=True))
    runner = await start_http(app, "127.0.0.1", 0)
    try:
        url = f"http://127.0.0.1:{runner.addresses[0][1]}/slack/events"
        await event(url, mention("<@UBOT> from another bot", user="U999", bot_id="B999"))
        await api.wait_for("reactions.remove")
        assert [q.text for q in core.asks] == ["from another bot"]
    finally:
        await runner.cleanup()


async def test_retried_event_is_answered_once(bolt, api, core):
    ev = mention("<@UBOT> retried?")
    await event(bolt, ev, event_id="EvRETRY")
    await event(bolt, ev, event_id="EvRETRY", headers={"X-Slack-Retry-Num": "1", "X-Slack-Retry-Reason": "http_timeout"})
    await event(bolt, mention("<@UBOT> next", ts="1700000400.000100"))
    await api.wait_for("chat.postMessage", 2)
    await api.wait_for("reactions.remove", 2)
    assert sorted(q.text for q in core.asks) == ["next", "retried?"]


async def test_empty_mention_gets_usage_hint(bolt, api, core):
    await event(bolt, mention("<@UBOT>   "))
    (hint,) = await api.wait_for("chat.postEphemeral")
    assert hint.body["user"] == "U222" and "Ask me a question" in hint.body["text"]
    assert core.asks == []


def reaction(kind: str, name: str, ts: str, user: str = "U333", item_user: str = BOT_USER_ID) -> dict:
    return {"type": kind, "user": user, "reaction": name, "item_user": item_user,
            "item": {"type": "message", "channel": "C222", "ts": ts}, "event_ts": "1700000500.000100"}


async def test_reactions_become_votes(bolt, api, core):
    await event(bolt, mention("<@UBOT> q"))
    await _until(lambda: core.recorded)
    answer_ts = core.recorded[0][2]
    await event(bolt, reaction("reaction_added", "+1::skin-tone-2", answer_ts))
    await event(bolt, reaction("reaction_added", "thumbsdown", answer_ts, user="U444"))
    await event(bolt, reaction("reaction_removed", "+1", answer_ts))
    await event(bolt, reaction("reaction_added", "heart", answer_ts))  # not a vote
    await event(bolt, reaction("reaction_added", "-1", "1600000000.000001", item_user="U999"))  # not ours
    await _until(lambda: len(core.votes) >= 3)
    assert sorted(core.votes, key=str) == sorted([("slack", answer_ts, "U333", 1), ("slack", answer_ts, "U444", -1),
                                                  ("slack", answer_ts, "U333", None)], key=str)


async def test_admin_command_allowed_for_configured_admin_and_notifies_when_done(bolt, api, core):
    await slash(bolt, api, "reindex docs", command="/ask-admin", user="UADMIN")
    (reply,) = await api.wait_for("respond")
    assert reply.body["text"] == "Reindexing docs in the background." and reply.body["response_type"] == "ephemeral"
    (done,) = await api.wait_for("chat.postMessage")
    assert done.body["channel"] == "C111"
    assert done.body["text"] == "Reindex of docs finished: 3 documents &lt;!channel&gt;"
    assert core.admin_calls == [("slack", "UADMIN", (), "reindex docs", False)]


async def test_admin_command_allowed_for_workspace_admin_by_users_info(bolt, api, core):
    await slash(bolt, api, "status", command="/ask-admin", user="UWSADMIN")
    (reply,) = await api.wait_for("respond")
    assert reply.body["text"] == "ok: status"
    assert api.of("users.info")[0].body["user"] == "UWSADMIN"
    assert core.admin_calls == [("slack", "UWSADMIN", (), "status", True)]


async def test_admin_command_refused_even_with_crafted_payload_fields(bolt, api, core):
    crafted = {"is_admin": "true", "user_name": "UADMIN", "is_enterprise_install": "true"}
    await slash(bolt, api, "reindex", command="/ask-admin", user="U555", extra=crafted)
    (reply,) = await api.wait_for("respond")
    assert reply.body["text"] == "Sorry, only ravbot admins can do that." and reply.body["response_type"] == "ephemeral"
    assert core.admin_calls == [("slack", "U555", (), "reindex", False)]
    assert api.of("chat.postMessage") == []


async def test_bad_signature_is_rejected(bolt, api, core):
    status, _ = await slash(bolt, api, "q", secret="not-the-secret")
    assert status == 401
    status, _ = await event(bolt, mention("<@UBOT> q"), secret="not-the-secret")
    assert status == 401
    assert core.asks == [] and api.attempts("chat.postMessage") == []


async def test_stale_timestamp_is_rejected(bolt, api, core):
    status, _ = await slash(bolt, api, "q", timestamp=int(time.time()) - 10 * 60)  # correctly signed, replayed
    assert status == 401
    assert core.asks == []


async def test_generated_pings_are_escaped_in_the_posted_answer(bolt, api, core):
    core.answer = Answer(question="q", text="Attention <!channel>: @everyone must rotate keys <@U42>.")
    await event(bolt, mention("<@UBOT> keys?"))
    (reply,) = await api.wait_for("chat.postMessage")
    body = reply.body["blocks"][0]["text"]
    assert body["text"] == "Attention &lt;!channel&gt;: @everyone must rotate keys &lt;@U42&gt;."
    assert body["verbatim"] is True and "<!channel>" not in reply.body["text"]


async def test_pipeline_error_reaches_the_user_with_an_error_id(bolt, api, core, caplog):
    core.answer = RuntimeError("store exploded")
    await event(bolt, mention("<@UBOT> q"))
    (reply,) = await api.wait_for("chat.postMessage")
    error_id = re.search(r"error id `(\w+)`", reply.body["text"]).group(1)
    assert any(error_id in r.getMessage() for r in caplog.records)
    assert "exploded" not in reply.body["text"] and core.recorded == []
    await api.wait_for("reactions.remove")


async def test_llm_down_note_is_shown(bolt, api, core):
    core.answer = Answer(question="q", text="Backups last 30 days [1].", notes=("LLM unavailable: extractive answer",))
    await event(bolt, mention("<@UBOT> q"))
    (reply,) = await api.wait_for("chat.postMessage")
    assert "_Note: LLM unavailable: extractive answer_" in " ".join(all_texts(reply.body["blocks"]))


async def test_rate_limited_and_failing_posts_are_retried(bolt, api, core):
    api.fail("chat.postMessage", status=429, retry_after=0)
    api.fail("chat.postMessage", status=500)
    await event(bolt, mention("<@UBOT> q"))
    (reply,) = await api.wait_for("chat.postMessage")
    assert [c.status for c in api.attempts("chat.postMessage")] == [429, 500, 200]
    assert reply.body["thread_ts"] == "1700000100.000100"


async def test_a_post_that_slack_refuses_falls_back_to_a_short_message(bolt, api, core):
    api.fail("chat.postMessage", error="invalid_blocks")
    await event(bolt, mention("<@UBOT> q"))
    (reply,) = await api.wait_for("chat.postMessage")
    assert "Sorry, something went wrong" in reply.body["text"] and "blocks" not in reply.body


async def test_serve_slack_http_mode_runs_until_cancelled(core, slack_settings, api):
    port = free_port()
    task = asyncio.create_task(serve_slack(core, slack_settings.replace(port=port), host="127.0.0.1"))
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


async def test_serve_slack_without_tokens_says_what_is_missing(core, settings):
    with pytest.raises(ValueError, match="SLACK_BOT_TOKEN"):
        await serve_slack(core, settings)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def _until(condition, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("condition not met in time")
        await asyncio.sleep(0.02)


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


# ----------------------------------------------------------------------------------------------
# End to end with the real Core (bot.app.build): real index, real pipeline, real feedback store
# ----------------------------------------------------------------------------------------------

DOCS = {
    "backups.md": "# Backups\n\nBackups are kept for 30 days in the Frankfurt bucket. "
                  "The backup policy was adopted in 2019 by the platform team.\n",
    "oncall.md": "# On-call\n\nThe on-call rotation changes every Monday at 10:00. "
                 "Pages go to the primary first and to the secondary after 15 minutes.\n",
    "alerts.md": "# Alerts\n\nTo alert the whole channel about an outage, write <!channel> & @everyone "
                 "in the #ops channel. Outage alerts are announced by the incident commander.\n",
}


@pytest.fixture
async def real_core(tmp_path, slack_settings):
    from bot.app import build

    docs = tmp_path / "docs"
    docs.mkdir()
    for name, text in DOCS.items():
        (docs / name).write_text(text)
    s = slack_settings.replace(sources=f"t={docs}", verify=True, wikipedia="off", rate_limit_per_minute=0,
                               slack_admins="UADMIN")
    app = build(s, run_scheduler=False)
    await asyncio.to_thread(app.index_one, "t")
    yield app, s
    app.close()


async def test_end_to_end_with_the_real_core(real_core, api):
    core, s = real_core
    runner = await start_http(build_slack_app(core, s), "127.0.0.1", 0)
    url = f"http://127.0.0.1:{runner.addresses[0][1]}/slack/events"
    try:
        await event(url, mention("<@UBOT> How long are backups kept?"))
        (reply,) = await api.wait_for("chat.postMessage")
        texts = " ".join(all_texts(reply.body["blocks"]))
        assert reply.body["thread_ts"] == "1700000100.000100"
        assert "30 days" in texts and "*Sources*" in texts and "backups.md" in texts
        await event(url, reaction("reaction_added", "+1::skin-tone-3", reply.response["ts"]))
        await _until(lambda: core.feedback.stats()["up"] == 1)

        await event(url, mention("<@UBOT> How do I alert the whole channel about an outage?", ts="1700000600.000100"))
        replies = await api.wait_for("chat.postMessage", 2)
        posted = " ".join([*all_texts(replies[1].body["blocks"]), replies[1].body["text"]])
        assert "&lt;!channel&gt;" in posted and "<!channel>" not in posted

        await event(url, reaction("reaction_removed", "+1", reply.response["ts"]))
        await _until(lambda: core.feedback.stats()["votes"] == 0)
    finally:
        await runner.cleanup()
