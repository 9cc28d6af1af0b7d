"""Slack adapter: a Bolt `AsyncApp` that turns `/ask`, mentions, reactions and `/ask-admin` into
`Core` calls and renders each `Answer` as a threaded Block Kit reply.

Read top-down: rendering (pure functions), then the app and its listeners, then serving
(Socket Mode or HTTP mode). Pipeline calls run in worker threads; the event loop only talks
to Slack.
"""

from __future__ import annotations

import asyncio
import logging
import random
import re
import uuid
from collections import OrderedDict
from collections.abc import Callable
from functools import partial
from typing import Any, Literal

from aiohttp import web
from slack_bolt.async_app import AsyncApp
from slack_bolt.logger.messages import warning_client_prioritized_and_token_skipped
from slack_bolt.response import BoltResponse
from slack_sdk.errors import SlackApiError
from slack_sdk.http_retry.builtin_async_handlers import (
    AsyncConnectionErrorRetryHandler,
    AsyncRateLimitErrorRetryHandler,
    AsyncServerErrorRetryHandler,
)
from slack_sdk.http_retry.builtin_interval_calculators import BackoffRetryIntervalCalculator
from slack_sdk.http_retry.jitter import Jitter
from slack_sdk.web.async_client import AsyncWebClient

from adapters.core import Core
from adapters.render import FENCE_ROOM, answer_parts, balance_fences, summary_line, timings_line
from pipeline.types import Answer, Question

log = logging.getLogger(__name__)

PLATFORM = "slack"
EVENTS_PATH = "/slack/events"
DEFAULT_API_URL = "https://slack.com/api/"
SECTION_LIMIT = 3000  # characters in one section's text (Block Kit)
BLOCK_LIMIT = 50  # blocks in one message (Block Kit)
TEXT_LIMIT = 12000  # the plain-text fallback; Slack truncates at 40,000
_FENCE_INFO = re.compile(r"^([ \t]*)(?:`{3,}|~{3,})[\w+#.-]*[ \t]*$", re.M)
WORKING_REACTION = "eyes"
USAGE = "Ask me about our documents: `/ask how long do we keep backups?`"
MENTION_USAGE = "Ask me a question after the mention, e.g. `@ravbot how long do we keep backups?`"
UP_VOTES = {"+1", "thumbsup"}
DOWN_VOTES = {"-1", "thumbsdown"}

# ----------------------------------------------------------------------------------------------
# Rendering: Answer -> (Block Kit blocks, plain-text fallback). Pure functions.
# ----------------------------------------------------------------------------------------------


def escape(text: str) -> str:
    """Escape `& < >` so text can neither ping (`<!channel>`, `<@U1>`) nor forge `<url|links>`."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def unescape(text: str) -> str:
    """Undo Slack's escaping of `& < >` in text Slack sends us."""
    return text.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")


_SAFE_URL = re.compile(r"^(https?|mailto):[^\s<>|]+$", re.IGNORECASE)


def slack_link(url: str, title: str) -> str:
    """`<url|title>` for a web URL; other schemes or odd URLs are shown as escaped text."""
    title = escape(title or url)
    if not _SAFE_URL.match(url):
        return f"{title} — {escape(url)}"
    return f"<{url.replace('&', '&amp;')}|{title}>"


def source_line(n: int, title: str, url: str, path: str) -> str:
    """"[1] <url|Title>", or "[1] Title — path/of/file.md" when there is no URL."""
    if url:
        return f"[{n}] {slack_link(url, title)}"
    return f"[{n}] {escape(title or path)}" + (f" — {escape(path)}" if path and title else "")


def split_escaped(text: str, limit: int) -> list[str]:
    """Split escaped text into pieces of at most `limit` chars, never inside an `&amp;` entity; a
    code block cut between pieces is closed and opened again (`render.balance_fences`)."""
    if limit < 16:
        raise ValueError(f"limit must be at least 16, got {limit}")
    if "```" in text and limit > 4 * FENCE_ROOM:
        return balance_fences(_split_escaped(text, limit - FENCE_ROOM))
    return _split_escaped(text, limit)


def bare_fences(text: str) -> str:
    """Code fences as Slack writes them: "```" with no language ("```python" would show the word as
    code) and never "~~~" (strikethrough in Slack)."""
    return _FENCE_INFO.sub(r"\1```", text)


def _split_escaped(text: str, limit: int) -> list[str]:
    pieces: list[str] = []
    rest = text.strip()
    while len(rest) > limit:
        cut = _cut_point(rest, limit)
        pieces.append(rest[:cut].rstrip())
        rest = rest[cut:].lstrip()
    if rest:
        pieces.append(rest)
    return [p for p in pieces if p]


def _cut_point(text: str, limit: int) -> int:
    window = text[:limit]
    for sep in ("\n\n", "\n", ". ", " "):  # separators never fall inside an entity
        at = window.rfind(sep, limit // 2)
        if at > 0:
            return at + 1 if sep == ". " else at
    cut = limit
    amp = text.rfind("&", cut - 4, cut)  # an entity is at most 5 chars: &amp;
    if amp > 0 and ";" not in text[amp:cut]:
        cut = amp
    return cut


def _section(text: str) -> dict[str, Any]:
    # verbatim: Slack must not auto-link names or turn "@channel" into a mention.
    return {"type": "section", "text": {"type": "mrkdwn", "text": text, "verbatim": True}}


def _sections(text: str) -> list[dict[str, Any]]:
    return [_section(piece) for piece in split_escaped(text, SECTION_LIMIT)]


def error_message(error_id: str) -> str:
    return f"Sorry, something went wrong while answering. (error id `{escape(error_id)}`)"


def render_answer(answer: Answer, error_id: str = "", show_timings: bool = False) -> tuple[list[dict[str, Any]], str]:
    """Block Kit blocks and the plain-text fallback for `answer`; all generated text is escaped and
    its Markdown links written as `<url|text>`.

    Layout: answer text with inline flags, footnotes, notes, sources, then one context block
    with the verification summary (and the timings with `show_timings`). At most 50 blocks,
    3000 chars per section.
    """
    apology = None
    if answer.error:  # the core's own apology (with its error id) when it wrote one, else ours
        apology = escape(answer.text) if answer.text else error_message(error_id)
    parts = answer_parts(answer, escape, link=slack_link, web_only=True, note="_Note: {}_", sources="*Sources*",
                         source_line=lambda s: source_line(s.id, s.title, s.url, s.path), body=apology)

    parts[0] = bare_fences(parts[0])
    sections: list[dict[str, Any]] = []
    for part in parts:
        sections.extend(_sections(part))
    if len(sections) > BLOCK_LIMIT - 1:
        sections = sections[: BLOCK_LIMIT - 2] + [_section("_…answer shortened to fit in one Slack message._")]
    context = " · ".join(x for x in (escape(summary_line(answer)), escape(timings_line(answer)) if show_timings else "") if x)
    blocks = sections + [
        {"type": "context", "elements": [{"type": "mrkdwn", "text": context[:SECTION_LIMIT], "verbatim": True}]}
    ]
    text = "\n\n".join([*parts, context])
    if len(text) > TEXT_LIMIT:
        text = split_escaped(text, TEXT_LIMIT - 1)[0] + "…"
    return blocks, text


# ----------------------------------------------------------------------------------------------
# The Bolt app
# ----------------------------------------------------------------------------------------------


def slack_mode(settings: Any) -> Literal["socket", "http"] | None:
    """"socket" with a bot + app token, "http" with a bot token + signing secret, else None."""
    if not settings.slack_bot_token:
        return None
    if settings.slack_app_token:
        return "socket"
    if settings.slack_signing_secret:
        return "http"
    return None


class _ProportionalJitter(Jitter):
    """Up to half the wait again, at random: retries of many posts spread out, at any backoff."""

    def recalculate(self, duration: float) -> float:
        return duration * (1 + random.random() / 2)


def make_client(settings: Any) -> AsyncWebClient:
    """The Web API client: `SLACK_API_URL` as base URL; retries on connection errors and 500/503
    after `slack_retry_backoff` seconds, doubling each time, and on 429 after Slack's Retry-After."""
    base_url = settings.slack_api_url or DEFAULT_API_URL
    if not base_url.endswith("/"):
        base_url += "/"
    backoff = BackoffRetryIntervalCalculator(float(settings.slack_retry_backoff), _ProportionalJitter())
    return AsyncWebClient(
        token=settings.slack_bot_token or None,
        base_url=base_url,
        retry_handlers=[
            AsyncConnectionErrorRetryHandler(max_retry_count=2, interval_calculator=backoff),
            AsyncRateLimitErrorRetryHandler(max_retry_count=3),
            AsyncServerErrorRetryHandler(max_retry_count=3, interval_calculator=backoff),
        ],
    )


class _DropFalseTokenWarning(logging.Filter):
    """Bolt reads SLACK_BOT_TOKEN from the environment itself when `token` is not given, then warns
    "As you gave `client` as well, `token` will be unused" on every start of a normal deployment.
    The client ravbot gives it carries that same token (from settings), so the warning is false:
    drop exactly that message, nothing else Bolt says."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.getMessage() != warning_client_prioritized_and_token_skipped()


bolt_log = logging.getLogger(f"{__name__}.bolt")  # what Bolt itself logs
bolt_log.addFilter(_DropFalseTokenWarning())


class _Seen:
    """Event ids already handled (bounded), so Slack's retried deliveries are answered once."""

    def __init__(self, size: int = 2000):
        self._ids: OrderedDict[str, None] = OrderedDict()
        self._size = size

    def first_time(self, event_id: str) -> bool:
        if event_id in self._ids:
            return False
        self._ids[event_id] = None
        if len(self._ids) > self._size:
            self._ids.popitem(last=False)
        return True


def _mention_question(text: str, bot_user_id: str | None) -> str:
    if bot_user_id:
        text = re.sub(rf"<@{re.escape(bot_user_id)}(\|[^>]*)?>", " ", text)
    return unescape(" ".join(text.split()))


def _is_id(value: object) -> bool:
    """A usable Slack id or timestamp: a non-empty string (malformed payloads carry lists, None...)."""
    return isinstance(value, str) and bool(value.strip())


def _vote_value(reaction: str) -> int | None:
    name = reaction.split("::", 1)[0]  # "+1::skin-tone-2" -> "+1"
    return 1 if name in UP_VOTES else -1 if name in DOWN_VOTES else None


def build_slack_app(core: Core, settings: Any, client: AsyncWebClient | None = None) -> AsyncApp:
    """A Bolt AsyncApp wired to `core`: `/ask`, `/ask-admin`, mentions and 👍/👎 reactions.

    Request signatures are verified (HTTP mode); the bot's own events are ignored by Bolt. Each
    listener below is a module-level function: Bolt passes its own arguments (`ack`, `command`,
    `event`, `context`, ...) by name, and the keyword-only ones are bound here.
    """
    client = client or make_client(settings)
    app = AsyncApp(
        client=client,
        signing_secret=settings.slack_signing_secret,
        request_verification_enabled=True,
        name="ravbot",
        logger=bolt_log,
    )
    app.middleware(partial(drop_retried_events, seen=_Seen()))
    app.command("/ask")(partial(ask_command, core=core, settings=settings, client=client))
    app.event("app_mention")(partial(on_mention, core=core, settings=settings, client=client))
    app.event("reaction_added")(partial(on_reaction_added, core=core))
    app.event("reaction_removed")(partial(on_reaction_removed, core=core))
    app.command("/ask-admin")(partial(admin_command, core=core, client=client))
    return app


async def drop_retried_events(body: dict, next: Callable, *, seen: _Seen) -> BoltResponse | None:
    """Middleware: a delivery of an event already handled (Slack retries) is acknowledged and dropped."""
    event_id = body.get("event_id") if body.get("type") == "event_callback" else None
    if event_id and not seen.first_time(str(event_id)):
        log.info("slack: ignoring a retried delivery of event %s", event_id)
        return BoltResponse(status=200, body="")
    return await next()


async def post(client: AsyncWebClient, channel: str, thread_ts: str, blocks: list | None, text: str) -> str:
    """Post a message (in a thread when `thread_ts` is set) with no unfurling or mention parsing; its ts."""
    resp = await client.chat_postMessage(
        channel=channel, thread_ts=thread_ts or None, blocks=blocks, text=text,
        unfurl_links=False, unfurl_media=False, link_names=False, parse="none",
    )
    return str(resp["ts"])


async def answer_in_thread(question: Question, channel: str, thread_ts: str, *, core: Core, settings: Any,
                           client: AsyncWebClient) -> None:
    """Ask the core in a worker thread, post the answer in the thread, remember it for votes."""
    error_id = ""
    try:
        answer = await core.ask_async(question)
    except Exception:
        error_id = uuid.uuid4().hex[:8]
        log.exception("slack: pipeline failed (error id %s)", error_id)
        answer = Answer(question=question.text, text="", error="pipeline raised")
    if answer.error and not error_id:
        error_id = uuid.uuid4().hex[:8]
        log.error("slack: no answer for a question (error id %s): %s", error_id, answer.error[:300])
    blocks, text = render_answer(answer, error_id, settings.show_timings)
    try:
        ts = await post(client, channel, thread_ts, blocks, text)
    except Exception:
        error_id = uuid.uuid4().hex[:8]
        log.exception("slack: posting an answer failed (error id %s)", error_id)
        await post(client, channel, thread_ts, None, error_message(error_id))
        return
    if not answer.error:
        await asyncio.to_thread(core.record_answer, PLATFORM, channel, ts, thread_ts, question.asker, answer)


# --- /ask -----------------------------------------------------------------------------------


async def ask_command(ack: Callable, command: dict, respond: Callable, *, core: Core, settings: Any,
                      client: AsyncWebClient) -> None:
    """`/ask question`: acknowledged at once; the question is posted in the channel and answered in its thread."""
    text = unescape(" ".join(str(command.get("text") or "").split()))
    if not text:
        await ack(text=USAGE, response_type="ephemeral")
        return
    await ack()
    user, channel = command.get("user_id"), command.get("channel_id")
    if not (_is_id(user) and _is_id(channel)):  # issue 10: malformed command, nobody to answer
        log.warning("slack: ignoring a malformed /ask (user_id=%.40r channel_id=%.40r)", user, channel)
        return
    question = Question(text=text, asker=user, platform=PLATFORM, channel=channel)
    refusal = await asyncio.to_thread(core.check_question, question)
    if refusal:
        await respond(text=escape(refusal), response_type="ephemeral")
        return
    try:
        parent = await post(client, channel, "", None, f"Question from <@{user}>: {escape(text)}")
    except SlackApiError as e:
        log.warning("slack: cannot post in %s (%s); answering privately", channel, e.response.get("error"))
        answer = await core.ask_async(question)
        blocks, fallback = render_answer(answer, uuid.uuid4().hex[:8], settings.show_timings)
        await respond(blocks=blocks, text=fallback, response_type="ephemeral")
        return
    question = Question(text=text, asker=user, platform=PLATFORM, channel=channel, thread=parent)
    await answer_in_thread(question, channel, parent, core=core, settings=settings, client=client)


# --- mentions -------------------------------------------------------------------------------


async def on_mention(event: dict, context: dict, *, core: Core, settings: Any, client: AsyncWebClient) -> None:
    """`@ravbot question`: answered in the mention's thread, with 👀 on the mention while it works."""
    own = event.get("user") == context.get("bot_user_id") or (
        event.get("bot_id") and event.get("bot_id") == context.get("bot_id"))
    allow_bots = bool(getattr(settings, "slack_allow_bots", False))
    if own or ((event.get("bot_id") or event.get("subtype") == "bot_message") and not allow_bots):
        return
    channel, user, ts = event.get("channel"), event.get("user", ""), event.get("ts")
    if not (_is_id(channel) and _is_id(ts) and isinstance(user, str)):  # issue 10: malformed event
        log.warning("slack: ignoring a malformed app_mention (channel=%.40r ts=%.40r)", channel, ts)
        return
    thread_ts = event.get("thread_ts") if _is_id(event.get("thread_ts")) else ts
    text = _mention_question(str(event.get("text") or ""), context.get("bot_user_id"))
    if not text:
        await client.chat_postEphemeral(channel=channel, user=user, thread_ts=thread_ts, text=MENTION_USAGE)
        return
    question = Question(text=text, asker=user, platform=PLATFORM, channel=channel, thread=thread_ts)
    refusal = await asyncio.to_thread(core.check_question, question)
    if refusal:
        await client.chat_postEphemeral(channel=channel, user=user, thread_ts=thread_ts, text=escape(refusal))
        return
    await _react(client.reactions_add, channel, ts)
    try:
        await answer_in_thread(question, channel, thread_ts, core=core, settings=settings, client=client)
    finally:
        await _react(client.reactions_remove, channel, ts)


async def _react(method: Callable, channel: str, ts: str) -> None:
    try:
        await method(channel=channel, timestamp=ts, name=WORKING_REACTION)
    except SlackApiError as e:  # progress display only: never let it stop an answer
        log.warning("slack: reaction %s failed: %s", WORKING_REACTION, e.response.get("error"))


# --- votes ----------------------------------------------------------------------------------


async def on_reaction_added(event: dict, context: dict, *, core: Core) -> None:
    """👍/👎 on one of ravbot's answers: the user's vote."""
    await _vote(event, context, core, lambda v: v)


async def on_reaction_removed(event: dict, context: dict, *, core: Core) -> None:
    """A vote reaction taken back: the vote is retracted (the other held reaction stays the vote)."""
    await _vote(event, context, core, lambda v: None)


async def _vote(event: dict, context: dict, core: Core, value_if_vote: Callable[[int], int | None]) -> None:
    item = event.get("item") if isinstance(event.get("item"), dict) else {}  # issue 10: malformed events
    value = _vote_value(str(event.get("reaction") or ""))
    if value is None or item.get("type") != "message" or not item.get("ts"):
        return
    if event.get("item_user") and event["item_user"] != context.get("bot_user_id"):
        return  # not a message of ours
    if event.get("user") == context.get("bot_user_id"):
        return
    added = value_if_vote(value)
    await asyncio.to_thread(core.vote, PLATFORM, str(item["ts"]), str(event["user"]), added,
                            removed=None if added is not None else value)


# --- admin ----------------------------------------------------------------------------------


async def admin_command(ack: Callable, command: dict, respond: Callable, *, core: Core, client: AsyncWebClient) -> None:
    """`/ask-admin reindex|status|stats|help`: the core checks the signed user; a reindex's end is posted later."""
    await ack()
    user, channel = command["user_id"], command["channel_id"]  # the signed user id, nothing else
    loop = asyncio.get_running_loop()

    def notify(text: str) -> None:  # called from the reindex worker thread
        asyncio.run_coroutine_threadsafe(_notify(client, channel, user, text), loop)

    is_workspace_admin = await _is_workspace_admin(client, user)
    reply = await asyncio.to_thread(core.admin, PLATFORM, user, (), str(command.get("text") or "").strip(),
                                    is_workspace_admin, notify)
    await respond(text=escape(reply), response_type="ephemeral")


async def _notify(client: AsyncWebClient, channel: str, user: str, text: str) -> None:
    for target in (channel, user):  # the channel, else a DM to the admin who asked
        try:
            await client.chat_postMessage(channel=target, text=escape(text), link_names=False, parse="none")
            return
        except Exception:
            log.exception("slack: could not post an admin notice to %s", target)


async def _is_workspace_admin(client: AsyncWebClient, user: str) -> bool:
    """Asked of Slack (users.info), never taken from the request payload."""
    try:
        info = await client.users_info(user=user)
    except Exception as e:
        log.warning("slack: users.info failed for %s (%s); treating as non-admin", user, type(e).__name__)
        return False
    profile = info.get("user") or {}
    return bool(profile.get("is_admin") or profile.get("is_owner"))


# ----------------------------------------------------------------------------------------------
# Serving
# ----------------------------------------------------------------------------------------------


async def start_http(app: AsyncApp, host: str, port: int) -> web.AppRunner:
    """Start Bolt's aiohttp handler on `host:port` at /slack/events; returns the runner to clean up."""
    runner = web.AppRunner(app.web_app(path=EVENTS_PATH, port=port), access_log=None)
    await runner.setup()
    await web.TCPSite(runner, host, port).start()
    return runner


async def serve_slack(core: Core, settings: Any, host: str = "0.0.0.0") -> None:
    """Run the Slack app until cancelled: Socket Mode or HTTP mode (see `slack_mode`)."""
    mode = slack_mode(settings)
    if mode is None:
        raise ValueError("Slack needs SLACK_BOT_TOKEN plus SLACK_APP_TOKEN (Socket Mode) "
                         "or SLACK_SIGNING_SECRET (HTTP mode)")
    app = build_slack_app(core, settings)
    if mode == "socket":
        from slack_bolt.adapter.socket_mode.async_handler import AsyncSocketModeHandler

        handler = AsyncSocketModeHandler(app, settings.slack_app_token)
        try:
            await handler.connect_async()
            log.info("slack: connected in Socket Mode")
            await asyncio.Event().wait()
        finally:
            await handler.close_async()
    else:
        runner = await start_http(app, host, settings.port)
        log.info("slack: HTTP mode listening on %s:%s%s", host, settings.port, EVENTS_PATH)
        try:
            await asyncio.Event().wait()
        finally:
            await runner.cleanup()
