"""Discord adapter: mentions and `/ask` in, threaded verified answers out, 👍/👎 reactions as votes.

Everything ravbot does goes through the `Core` it is given; this module only translates between
Discord events and `Question`/`Answer`, renders answers within Discord's limits, and keeps the
event loop free: every Core call runs in a worker thread, so the gateway heartbeat never waits.

Read top-down: rendering (pure functions), then the client (events and slash commands), then
`serve_discord`, which `ravbot serve` runs when a Discord token is set.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import re
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any, TypeVar
from urllib.parse import quote

import discord
from discord import app_commands

from adapters.core import Core
from adapters.render import annotate, split_text, summary_line, timings_line
from pipeline.types import Answer, Label, Question

log = logging.getLogger(__name__)
T = TypeVar("T")

MESSAGE_LIMIT = 2000
EMBED_DESCRIPTION_LIMIT = 4096
EMBED_FOOTER_LIMIT = 2048
EMBED_TOTAL_LIMIT = 6000
THREAD_NAME_LIMIT = 100
NO_MENTIONS = discord.AllowedMentions.none()
VOTES = {"👍": 1, "👎": -1}
SORRY = "Sorry, something went wrong while answering. Please try again in a minute."
USAGE = "Ask me a question after the mention, e.g. `@ravbot how do I rotate the API keys?`"
ADMIN_REFUSED = ("Sorry, ravbot admin commands need the Manage Server permission "
                 "or a user/role listed in ravbot's Discord admin settings.")


# --- rendering: pure functions -------------------------------------------------------------------

@dataclass(frozen=True)
class Post:
    """One Discord message to send: `content` ≤ 2000 characters and an optional embed."""

    content: str
    embed: discord.Embed | None = None


_ZWSP = "\u200b"
_MASS_PING = re.compile(r"@(everyone|here)", re.IGNORECASE)
_ID_MENTION = re.compile(r"<(@[!&]?|#|/)")  # <@id> <@!id> <@&role> <#channel> </command:id>
_MASKED_LINK = re.compile(r"\]\s*\(")  # the joint of [text](url)


def neutralise(text: str) -> str:
    """Generated text made inert: no @everyone/@here, user/role/channel mentions or masked links.

    A zero-width space breaks each pattern (`@\u200beveryone`, `<\u200b@123>`, `]\u200b(`), so the
    text reads the same. It is one character and not whitespace, so cutting the result anywhere
    (as `split_text` may) cannot re-form a pattern. Sending with `AllowedMentions.none()` is the
    second guard: even a missed pattern cannot ping.
    """
    text = _MASS_PING.sub(lambda m: "@" + _ZWSP + m.group(1), text)
    text = _ID_MENTION.sub(lambda m: "<" + _ZWSP + m.group(1), text)
    return _MASKED_LINK.sub("]" + _ZWSP + "(", text)


def safe_url(url: str) -> str:
    """`url` fit for a markdown link target, or "" when it is not plain http(s)."""
    url = url.strip()
    if len(url) > 1000 or not re.match(r"https?://[^\s/]", url, re.IGNORECASE):
        return ""
    return quote(url, safe=":/?#@!$&'*+,;=%~-._[]")


def inline_link(url: str, words: str) -> str:
    """A link in answer text: "words (<url>)"; the angle brackets keep Discord from embedding it."""
    link = safe_url(url)
    return f"{neutralise(words)} (<{link}>)" if link else neutralise(words)


def source_line(number: int, title: str, url: str, path: str) -> str:
    """"**[1]** [Title](url)" when there is a web link, else "**[1]** Title — path"."""
    title = neutralise((title or "source").replace("[", "(").replace("]", ")").replace("\n", " "))[:200]
    link = safe_url(url)
    if link:
        return f"**[{number}]** [{title}]({link})"
    where = neutralise(path or url)[:500]
    return f"**[{number}]** {title}" + (f" — {where}" if where else "")


def verification_colour(answer: Answer) -> discord.Colour:
    """Green when every claim is verified, amber with uncertain claims, red with unsupported or
    contradicted ones, grey when nothing was verified."""
    labels = {v.label for v in answer.verdicts}
    if answer.error or answer.idk or not labels:
        return discord.Colour.light_grey()
    if labels & {Label.UNSUPPORTED, Label.CONTRADICTED}:
        return discord.Colour.red()
    if Label.UNCERTAIN in labels:
        return discord.Colour.gold()
    return discord.Colour.green()


def sources_embed(answer: Answer, show_timings: bool = False) -> discord.Embed:
    """Sources with links in the description, the verification summary (and with `show_timings`
    the timings) in the footer, within Discord's limits (description 4096, footer 2048, 6000 in
    all); sources that do not fit are counted ("… and 3 more")."""
    title = "Sources" if answer.sources else ""
    summary = summary_line(answer) + (" · " + timings_line(answer) if show_timings and answer.timings else "")
    footer = neutralise(summary)[:EMBED_FOOTER_LIMIT]
    room = min(EMBED_DESCRIPTION_LIMIT, EMBED_TOTAL_LIMIT - len(title) - len(footer))
    lines = [source_line(s.id, s.title, s.url, s.path) for s in answer.sources]
    kept: list[str] = []
    reserve = len("\n… and 9999 more")
    for i, line in enumerate(lines):
        budget = room if i == len(lines) - 1 else room - reserve
        if len("\n".join([*kept, line])) > budget:
            kept.append(f"… and {len(lines) - i} more")
            break
        kept.append(line)
    description = "\n".join(kept) or None
    return discord.Embed(title=title or None, description=description, colour=verification_colour(answer)) \
        .set_footer(text=footer)


def answer_text(answer: Answer) -> str:
    """The message text: the answer with inline flags, one footnote per flag, then any notes.
    (`answer.text` is user-facing even when `answer.error` is set; the error is for the log.)"""
    body, footnotes = annotate(answer, escape=neutralise, link=inline_link, web_only=True)
    parts = [body.strip(), "\n".join(footnotes), "\n".join(f"*Note: {neutralise(n)}*" for n in answer.notes)]
    return "\n\n".join(p for p in parts if p)


def render_answer(answer: Answer, show_timings: bool = False) -> list[Post]:
    """The answer as Discord messages: text split at sentence boundaries into ≤ 2000-character
    messages; the last one carries the sources embed and the verification summary."""
    pieces = split_text(answer_text(answer), MESSAGE_LIMIT) or ["(no answer text)"]
    return [Post(p) for p in pieces[:-1]] + [Post(pieces[-1], sources_embed(answer, show_timings))]


def question_text(content: str, bot_id: int) -> str:
    """The question in a message that mentions the bot: its mention removed, whitespace tidied."""
    return re.sub(rf"<@!?{bot_id}>", " ", content).strip()


def thread_name(question: str) -> str:
    name = " ".join(question.split()) or "question"
    return name if len(name) <= THREAD_NAME_LIMIT else name[: THREAD_NAME_LIMIT - 1] + "…"


def vote_value(emoji: discord.PartialEmoji) -> int | None:
    """+1 for 👍, -1 for 👎 (any skin tone), None for any other emoji."""
    if not emoji.is_unicode_emoji():
        return None
    base = re.sub("[\U0001F3FB-\U0001F3FF\ufe0f]", "", emoji.name or "")
    return VOTES.get(base)


# --- the client ------------------------------------------------------------------------------------

def intents() -> discord.Intents:
    """Only what ravbot uses. `message_content` is privileged: enable it in the developer portal."""
    return discord.Intents(guilds=True, guild_messages=True, dm_messages=True, message_content=True,
                           guild_reactions=True, dm_reactions=True)


def use_api_url(url: str) -> None:
    """Send all of discord.py's REST calls to `url` (e.g. a rate-limit proxy), API version included:
    `https://proxy.example/api/v10`.

    discord.py keeps its REST base in the class attribute `discord.http.Route.BASE`, shared by every
    client in the process and by interaction webhooks, so this is process-wide on purpose. The
    gateway URL then comes from that endpoint's `GET /gateway/bot` (see `RavbotClient`).
    """
    if not re.match(r"https?://[^\s/]", url):
        raise ValueError(f"discord_api_url must be an http(s) URL, got {url!r}")
    discord.http.Route.BASE = url.rstrip("/")


def guard_parsers(parsers: dict[str, Callable[[Any], None]]) -> None:
    """Make each gateway dispatch parser drop a malformed event (logged) instead of raising.

    discord.py lets a parser's exception escape the shard's read loop, which then terminates
    the whole client: one malformed INTERACTION_CREATE would take the bot offline (issue 10).
    The dict is discord.py's own `ConnectionState.parsers`, which the gateway reads by event name.
    """
    def guarded(event: str, parse: Callable[[Any], None]) -> Callable[[Any], None]:
        def parse_or_drop(data: Any) -> None:
            try:
                parse(data)
            except Exception:
                log.exception("dropped a malformed Discord %s dispatch", event)
        return parse_or_drop

    for event, parse in list(parsers.items()):
        parsers[event] = guarded(event, parse)


class RavbotClient(discord.AutoShardedClient):
    """The Discord connection, its slash-command tree and the worker threads for pipeline calls.

    An `AutoShardedClient` (one shard for most bots) because it asks `GET /gateway/bot` for the
    gateway URL and shard count, which `discord_api_url` relies on; a plain `Client` always dials
    `wss://gateway.discord.gg`.
    """

    def __init__(self, core: Core, settings: Any, **options: Any):
        super().__init__(intents=intents(), allowed_mentions=NO_MENTIONS, **options)
        self.core = core
        self.settings = settings
        self.tree = app_commands.CommandTree(self)
        self.tree.on_error = on_command_error  # type: ignore[method-assign]
        for command in slash_commands():
            self.tree.add_command(command)
        guard_parsers(self._connection.parsers)

    async def setup_hook(self) -> None:
        if self.settings.discord_sync_commands:
            await sync_commands(self.tree, self.settings.list("discord_guild_ids"))

    # mentions
    async def on_message(self, message: discord.Message) -> None:
        me = self.user
        if me is None or message.author.bot or message.author.id == me.id or me not in message.mentions:
            return  # @everyone/@here do not put the bot in `message.mentions`
        await self.answer_mention(message, question_text(message.content, me.id))

    async def answer_mention(self, message: discord.Message, text: str) -> None:
        where: discord.abc.Messageable = message.channel
        try:
            if not text:
                await reply(message, USAGE)
                return
            question = Question(text, asker=str(message.author.id), platform="discord",
                                channel=str(message.channel.id))
            refusal = await asyncio.to_thread(self.core.check_question, question)
            if refusal:
                await reply(message, neutralise(refusal))
                return
            where = await answer_place(message, text)
            if isinstance(where, discord.Thread):
                question = dataclasses.replace(question, thread=str(where.id))
            async with progress(where):
                answer = await self.core.ask_async(question)
            in_place = where is message.channel
            sent = await post_answer(where, answer, reference=message if in_place else None,
                                     show_timings=bool(self.settings.show_timings))
            await self.remember(sent, where, question, answer)
        except Exception:
            log.exception("answering Discord message %s failed", message.id)
            await send_quietly(where, SORRY)

    async def remember(self, sent: list[discord.Message], where: Any, question: Question, answer: Answer) -> None:
        """Record the answer under its LAST message (the one with the sources and summary, which gets
        the 👍/👎 reactions), so each answer is one row however many messages it took."""
        last = sent[-1]
        await asyncio.to_thread(self.core.record_answer, "discord", str(where.id), str(last.id),
                                question.thread, question.asker, answer)
        for emoji in VOTES:
            try:
                await last.add_reaction(emoji)
            except discord.HTTPException as e:  # e.g. no Add Reactions permission: votes still work
                log.warning("could not add %s to answer %s: %s", emoji, last.id, e)
                break

    # reactions
    async def on_raw_reaction_add(self, payload: discord.RawReactionActionEvent) -> None:
        if payload.member is not None and payload.member.bot:
            return
        await self.vote(payload, vote_value(payload.emoji))

    async def on_raw_reaction_remove(self, payload: discord.RawReactionActionEvent) -> None:
        if (removed := vote_value(payload.emoji)) is not None:
            await self.vote(payload, None, removed)

    async def vote(self, payload: discord.RawReactionActionEvent, value: int | None, removed: int | None = None) -> None:
        if self.user is None or payload.user_id == self.user.id:
            return
        if payload.event_type == "REACTION_ADD" and value is None:
            return
        try:
            await asyncio.to_thread(self.core.vote, "discord", str(payload.message_id), str(payload.user_id), value,
                                    removed=removed)
        except Exception:
            log.exception("recording a vote on message %s failed", payload.message_id)


async def reply(message: discord.Message, text: str) -> discord.Message:
    return await message.reply(text, mention_author=False, allowed_mentions=NO_MENTIONS)


async def answer_place(message: discord.Message, question: str) -> Any:
    """A new thread on the question in a guild text channel; the channel itself in a thread or DM
    (or when the thread cannot be created)."""
    if not isinstance(message.channel, discord.TextChannel):
        return message.channel
    try:
        return await message.create_thread(name=thread_name(question), auto_archive_duration=1440)
    except discord.HTTPException as e:
        log.warning("could not create a thread on message %s (%s); answering in the channel", message.id, e)
        return message.channel


@asynccontextmanager
async def progress(channel: Any) -> AsyncIterator[None]:
    """The typing indicator while the pipeline works; a failure to show it never stops the answer."""
    typing = channel.typing()
    try:
        await typing.__aenter__()
    except discord.HTTPException as e:
        log.warning("typing indicator failed in %s: %s", channel.id, e)
        typing = None
    try:
        yield
    finally:
        if typing is not None:
            await typing.__aexit__(None, None, None)


async def post_answer(where: Any, answer: Answer, reference: discord.Message | None = None,
                      show_timings: bool = False) -> list[discord.Message]:
    sent = []
    for i, post in enumerate(render_answer(answer, show_timings)):
        kwargs: dict[str, Any] = {"allowed_mentions": NO_MENTIONS}
        if post.embed is not None:
            kwargs["embed"] = post.embed
        if i == 0 and reference is not None:
            kwargs |= {"reference": reference, "mention_author": False}
        sent.append(await where.send(post.content, **kwargs))
    return sent


async def send_quietly(where: Any, text: str) -> None:
    """Best effort: used for error replies, where a second failure can only be logged."""
    try:
        await where.send(text, allowed_mentions=NO_MENTIONS)
    except Exception:
        log.exception("could not send an error reply to %s", getattr(where, "id", where))


# --- slash commands --------------------------------------------------------------------------------

def slash_commands() -> list[app_commands.Command[Any, Any, Any] | app_commands.Group]:
    """`/ask question:` and the `/ravbot` admin group, fresh objects for each client's tree.

    The admin group sets no `default_permissions`: visibility is not security, and configured
    admin roles must be able to see it. The real check is `Core.is_admin`, asked by `run_admin`."""

    @app_commands.command(name="ask", description="Ask ravbot a question about the team's documents")
    @app_commands.describe(question="Your question")
    async def ask(interaction: discord.Interaction, question: str) -> None:
        await interaction.response.defer(thinking=True)  # at once: Discord allows 3 seconds
        client: RavbotClient = interaction.client  # type: ignore[assignment]
        q = Question(question.strip(), asker=str(interaction.user.id), platform="discord",
                     channel=str(interaction.channel_id or ""))
        refusal = await asyncio.to_thread(client.core.check_question, q)
        if refusal:
            await interaction.followup.send(neutralise(refusal), allowed_mentions=NO_MENTIONS)
            return
        answer = await client.core.ask_async(q)
        sent = []
        for post in render_answer(answer, bool(client.settings.show_timings)):
            kwargs: dict[str, Any] = {"embed": post.embed} if post.embed is not None else {}
            sent.append(await interaction.followup.send(post.content, allowed_mentions=NO_MENTIONS, wait=True, **kwargs))
        await asyncio.to_thread(client.core.record_answer, "discord", str(interaction.channel_id or ""),
                                str(sent[-1].id), "", q.asker, answer)

    admin = app_commands.Group(name="ravbot", description="ravbot administration (Manage Server or configured admins)")

    @admin.command(name="reindex", description="Reindex one source, or all sources")
    @app_commands.describe(source="Source name (empty = all)")
    async def reindex(interaction: discord.Interaction, source: str | None = None) -> None:
        await run_admin(interaction, f"reindex {source}".strip() if source else "reindex")

    @admin.command(name="status", description="Index and service status")
    async def status(interaction: discord.Interaction) -> None:
        await run_admin(interaction, "status")

    @admin.command(name="stats", description="Answer and feedback statistics")
    async def stats(interaction: discord.Interaction) -> None:
        await run_admin(interaction, "stats")

    return [ask, admin]


def admin_identity(interaction: discord.Interaction) -> tuple[str, tuple[str, ...], bool]:
    """(user id, role ids, has Manage Server here). Permissions are Discord's resolved ones for this
    member in this channel, sent with the interaction, not the command's default_permissions."""
    roles = tuple(str(r.id) for r in getattr(interaction.user, "roles", ()))
    perms = interaction.permissions
    manages = interaction.guild_id is not None and (perms.manage_guild or perms.administrator)
    return str(interaction.user.id), roles, manages


async def run_admin(interaction: discord.Interaction, command: str) -> None:
    """Check, answer ephemerally at once, run the command in a thread; a reindex's end is a follow-up."""
    client: RavbotClient = interaction.client  # type: ignore[assignment]
    user, roles, manages = admin_identity(interaction)
    if not client.core.is_admin("discord", user, roles, is_platform_admin=manages):
        await interaction.response.send_message(ADMIN_REFUSED, ephemeral=True)
        return
    await interaction.response.defer(ephemeral=True, thinking=True)
    loop = asyncio.get_running_loop()

    def notify(text: str) -> None:  # called from Core's worker thread when a reindex ends
        try:
            asyncio.run_coroutine_threadsafe(tell_later(interaction, text), loop)
        except RuntimeError:  # the client has shut down meanwhile
            log.warning("reindex finished after shutdown; not reported on Discord: %s", text)

    text = await asyncio.to_thread(client.core.admin, "discord", user, roles, command,
                                   is_platform_admin=manages, notify=notify)
    for piece in split_text(neutralise(text), MESSAGE_LIMIT) or ["(done)"]:
        await interaction.followup.send(piece, ephemeral=True, allowed_mentions=NO_MENTIONS)


async def tell_later(interaction: discord.Interaction, text: str) -> None:
    """A late, private follow-up (a reindex's outcome). Interaction tokens last 15 minutes; after
    that the admin gets a DM instead."""
    text = neutralise(text)[:MESSAGE_LIMIT]
    try:
        await interaction.followup.send(text, ephemeral=True, allowed_mentions=NO_MENTIONS)
    except discord.HTTPException as e:
        log.warning("follow-up failed (%s); sending the reindex result by DM", e)
        await send_quietly(interaction.user, text)


def unknown_command(error: app_commands.CommandNotFound) -> str:
    """The reply to a slash command ravbot does not have (e.g. still registered from an older version)."""
    name = " ".join([*error.parents, error.name])
    return (f"Unknown command `/{neutralise(name)}`. ravbot's commands: `/ask question:` and "
            "`/ravbot reindex`, `/ravbot status`, `/ravbot stats`.")


async def on_command_error(interaction: discord.Interaction, error: app_commands.AppCommandError) -> None:
    """Any failure in a slash command becomes a short ephemeral reply, never silence."""
    if isinstance(error, app_commands.CommandNotFound):
        log.warning("Discord sent an unknown command /%s", " ".join([*error.parents, error.name]))
        text = unknown_command(error)
    else:
        log.error("Discord command %s failed", interaction.command and interaction.command.qualified_name,
                  exc_info=error)
        text = SORRY
    try:
        if interaction.response.is_done():
            await interaction.followup.send(text, ephemeral=True, allowed_mentions=NO_MENTIONS)
        else:
            await interaction.response.send_message(text, ephemeral=True, allowed_mentions=NO_MENTIONS)
    except discord.HTTPException:
        log.exception("could not report the failure to the user")


async def sync_commands(tree: app_commands.CommandTree, guild_ids: list[str]) -> None:
    """Register the slash commands with Discord: per guild (instant) when ids are given, else global
    (can take up to an hour to appear). Done only when asked (`discord_sync_commands`)."""
    if not guild_ids:
        synced = await tree.sync()
        log.info("synced %d global Discord commands", len(synced))
        return
    for gid in guild_ids:
        guild = discord.Object(id=int(gid))
        tree.copy_global_to(guild=guild)
        synced = await tree.sync(guild=guild)
        log.info("synced %d Discord commands to guild %s", len(synced), gid)


# --- entry points ----------------------------------------------------------------------------------

def build_discord_client(core: Core, settings: Any, **options: Any) -> discord.Client:
    """The configured client, not yet connected. Sets discord.py's REST base URL when
    `settings.discord_api_url` is given (process-wide, see `use_api_url`). `options` go to
    `discord.AutoShardedClient` (e.g. `guild_ready_timeout`)."""
    if settings.discord_api_url:
        use_api_url(settings.discord_api_url)
    return RavbotClient(core, settings, **options)


async def serve_discord(core: Core, settings: Any) -> None:
    """Connect and serve until cancelled or the connection fails for good; always closes cleanly."""
    if not settings.discord_token:
        raise ValueError("discord_token is empty: set DISCORD_TOKEN to serve Discord")
    client = build_discord_client(core, settings)
    try:
        await client.start(settings.discord_token)
    finally:
        if not client.is_closed():
            await client.close()
