"""Discord adapter: pure rendering (known values + a hypothesis property) and end-to-end scenarios.

Scenarios run the real discord.py client (`AutoShardedClient`) against `tests.fakes.discord_api`,
a loopback fake of Discord's REST API and gateway: the client logs in over REST, fetches the
gateway URL from `GET /gateway/bot`, IDENTIFYs over a real websocket, and the test pushes real
MESSAGE_CREATE / MESSAGE_REACTION_ADD / MESSAGE_REACTION_REMOVE / INTERACTION_CREATE dispatches,
then reads what the client sent over HTTP. The Core is the real one (`bot.app.build`) over three
small markdown files, with Wikipedia off and no LLM (extractive answers).
"""

from __future__ import annotations

import asyncio
import re
from typing import Any

import discord
import pytest
from hypothesis import given
from hypothesis import settings as hyp_settings
from hypothesis import strategies as st

from adapters.discord import (
    ADMIN_REFUSED,
    EMBED_DESCRIPTION_LIMIT,
    EMBED_TOTAL_LIMIT,
    MESSAGE_LIMIT,
    SORRY,
    build_discord_client,
    inline_link,
    neutralise,
    render_answer,
    safe_url,
    serve_discord,
    source_line,
    sources_embed,
    vote_value,
)
from adapters.render import links, summary_line
from config.settings import load_settings
from pipeline.types import Answer, Claim, Evidence, Label, Source, Verdict
from tests.fakes.discord_api import (
    ADMIN_ROLE_ID,
    APP_ID,
    BOT_ID,
    CHANNEL_ID,
    GUILD_ID,
    THREAD_ID,
    FakeDiscord,
)

ZWSP = "\u200b"
MANAGE_GUILD = 1 << 5
PING = re.compile(r"@(everyone|here)|<@[!&]?\d+>", re.IGNORECASE)

# ------------------------------------------------------------------------------------------------
# Rendering: known values
# ------------------------------------------------------------------------------------------------

BACKUP_TEXT = "Backups are kept for 30 days [1]. The policy was adopted in 2019 [2]."


def backup_answer() -> Answer:
    first = BACKUP_TEXT.index("[1].") + 4
    evidence = Evidence(text="Adopted in 2018.", title="History", path="docs/history.md")
    return Answer(
        question="how long do we keep backups?",
        text=BACKUP_TEXT,
        sources=(Source(1, "Backups", url="https://wiki.example.com/backups?a=1&b=2"),
                 Source(2, "History", path="docs/history.md")),
        verdicts=(
            Verdict(Claim(BACKUP_TEXT[:first], 0, first), Label.SUPPORTED, 0.9, "default"),
            Verdict(Claim(BACKUP_TEXT[first + 1:], first + 1, len(BACKUP_TEXT)), Label.CONTRADICTED, 0.8,
                    "default", evidence=evidence, sentence="The policy was adopted in 2018.", conflict="2018",
                    checked_against=("kb",)),
        ),
    )


def test_neutralise_known_values():
    assert neutralise("@everyone look") == f"@{ZWSP}everyone look"
    assert neutralise("hi @here and @Everyone") == f"hi @{ZWSP}here and @{ZWSP}Everyone"
    assert neutralise("ask <@123> or <@!45> or <@&678> in <#9>") == \
        f"ask <{ZWSP}@123> or <{ZWSP}@!45> or <{ZWSP}@&678> in <{ZWSP}#9>"
    assert neutralise("[docs](https://evil.example) [1]") == f"[docs]{ZWSP}(https://evil.example) [1]"
    assert neutralise("mail me at a@example.com [1]. Fine.") == "mail me at a@example.com [1]. Fine."


def test_links_are_http_only_and_cannot_break_out():
    assert safe_url("javascript:alert(1)") == ""
    assert safe_url("https://x.example/a b)(c") == "https://x.example/a%20b%29%28c"
    assert source_line(1, "Backups", "https://w.example/b", "") == "**[1]** [Backups](https://w.example/b)"
    assert source_line(2, "a](https://evil) [b", "https://w.example/b", "") == \
        "**[2]** [a)(https://evil) (b](https://w.example/b)"
    assert source_line(3, "History", "", "docs/history.md") == "**[3]** History — docs/history.md"


def test_answer_renders_flags_footnotes_sources_and_summary():
    answer = backup_answer()
    [post] = render_answer(answer)
    body, footnote = post.content.split("\n\n")
    assert body == "Backups are kept for 30 days [1]. The policy was adopted in 2019 [2]. ❌¹"
    assert footnote.startswith("❌¹ contradicted: source says 2018")
    assert "(History, docs/history.md)" in footnote
    embed = post.embed.to_dict()
    assert embed["title"] == "Sources"
    assert embed["description"] == ("**[1]** [Backups](https://wiki.example.com/backups?a=1&b=2)\n"
                                    "**[2]** History — docs/history.md")
    assert embed["footer"]["text"] == summary_line(answer) == \
        "1 of 2 claims verified; 1 contradicted (checked against the knowledge base)"
    assert embed["color"] == discord.Colour.red().value


def test_5000_character_answer_is_split_at_sentence_boundaries():
    sentences = [f"Sentence number {i} explains one more detail of the backup policy in plain words." for i in range(62)]
    text = " ".join(sentences)
    assert 5000 <= len(text) <= 5400
    posts = render_answer(Answer(question="q", text=text, sources=(Source(1, "Doc", url="https://d.example"),)))
    assert len(posts) == 3
    assert all(len(p.content) <= MESSAGE_LIMIT for p in posts)
    assert all(p.content.endswith("words.") for p in posts)  # every cut is at the end of a sentence
    assert " ".join(p.content for p in posts) == text  # nothing lost, nothing doubled
    assert [p.embed is not None for p in posts] == [False, False, True]


def test_sources_embed_respects_discord_limits():
    sources = tuple(Source(i, "T" * 300, url=f"https://docs.example/{'p' * 150}/{i}") for i in range(1, 301))
    embed = sources_embed(Answer(question="q", text="x", sources=sources))
    assert len(embed.description) <= EMBED_DESCRIPTION_LIMIT
    assert len(embed) <= EMBED_TOTAL_LIMIT
    assert len(embed.fields) <= 25
    assert re.search(r"… and \d+ more$", embed.description)
    shown = embed.description.count("**[")
    assert embed.description.endswith(f"… and {300 - shown} more")


def test_vote_emoji():
    assert vote_value(discord.PartialEmoji(name="👍")) == 1
    assert vote_value(discord.PartialEmoji(name="👍🏽")) == 1
    assert vote_value(discord.PartialEmoji(name="👎")) == -1
    assert vote_value(discord.PartialEmoji(name="🎉")) is None
    assert vote_value(discord.PartialEmoji(name="thumbsup", id=123)) is None


# ------------------------------------------------------------------------------------------------
# Rendering: properties
# ------------------------------------------------------------------------------------------------

hostile = st.lists(st.sampled_from(["@everyone", "@here", "<@123>", "<@&77>", "[x](https://evil.example)",
                                    "] (", "\\", "[1]", ". ", "\n", " ", "word", "é", "🎉", "@", "<", "everyone"]),
                   max_size=400).map("".join)


@hyp_settings(max_examples=150, deadline=None)
@given(text=hostile | st.text(max_size=6000), title=st.text(max_size=300))
def test_rendered_text_never_pings_links_or_exceeds_limits(text, title):
    answer = Answer(question="q", text=text, sources=(Source(1, title, url="https://d.example/x"),))
    posts = render_answer(answer)
    assert posts and posts[-1].embed is not None
    for post in posts:
        assert 0 < len(post.content) <= MESSAGE_LIMIT
        assert not PING.search(post.content)
        assert not re.search(r"\]\s*\(", post.content)  # no masked link can form
    description = posts[-1].embed.description
    assert len(re.findall(r"\]\(", description)) == 1  # only our own source link
    assert len(posts[-1].embed) <= EMBED_TOTAL_LIMIT
    squeezed = "".join("".join(p.content for p in posts).replace(ZWSP, "").split())
    shown = links(text, link=inline_link, web_only=True).replace(ZWSP, "")  # Markdown links as "text (<url>)"
    assert squeezed == "".join(shown.split()) or not text.strip()  # nothing lost or reordered


# ------------------------------------------------------------------------------------------------
# Scenarios: the real client against the fake Discord, the real Core
# ------------------------------------------------------------------------------------------------

DOCS = {
    "backups.md": "# Backups\n\nDatabase backups are kept for 30 days in the Frankfurt region.\n"
                  "Restores are tested every month by the platform team.\n",
    "deploys.md": "# Deploys\n\nProduction deploys happen on Tuesdays.\n"
                  "Ping @everyone in the ops channel when the deploy window opens at 5 pm.\n",
    "oncall.md": "# On-call\n\nThe on-call rotation changes every Monday at 9 am.\n"
                 "Escalate to the incident commander after 15 minutes without an answer.\n",
}


@pytest.fixture(scope="module")
def core(tmp_path_factory, fake_embedder):
    """The real Core with the deterministic fake embedder (these scenarios test Discord, not the model)."""
    from bot.app import build

    root = tmp_path_factory.mktemp("discord")
    docs = root / "docs"
    docs.mkdir()
    for name, text in DOCS.items():
        (docs / name).write_text(text)
    settings = load_settings(env={}, data_dir=str(root / "data"), sources=f"t={docs}", wikipedia="off",
                             rate_limit_per_minute=0, reindex_interval_minutes=0,
                             discord_admin_roles=str(ADMIN_ROLE_ID))
    app = build(settings, run_scheduler=False, embedder=fake_embedder)
    app.index_one("t")
    yield app
    app.close()


@pytest.fixture
async def fake():
    server = await FakeDiscord().start()
    yield server
    await server.stop()


@pytest.fixture
def discord_settings(core, fake, monkeypatch):
    # build_discord_client sets the process-wide REST base; monkeypatch puts the default back after.
    monkeypatch.setattr(discord.http.Route, "BASE", discord.http.Route.BASE)
    return core.settings.replace(discord_token="test-token", discord_api_url=fake.api_url)


async def start(core, settings, fake) -> tuple[discord.Client, asyncio.Task]:
    client = build_discord_client(core, settings, guild_ready_timeout=0.05)  # one guild: no need to wait 2 s
    task = asyncio.create_task(client.start(settings.discord_token))
    await fake.wait_identified()
    await asyncio.wait_for(client.wait_until_ready(), 10)
    return client, task


@pytest.fixture
async def bot(core, discord_settings, fake):
    client, task = await start(core, discord_settings, fake)
    yield client
    await client.close()
    await asyncio.wait_for(task, 10)


async def until(condition, timeout: float = 20.0) -> None:
    """Wait for a condition that a worker thread makes true (votes have no HTTP side effect)."""
    async def poll():
        while not condition():
            await asyncio.sleep(0.02)
    await asyncio.wait_for(poll(), timeout)


def mention(text: str) -> str:
    return f"<@{BOT_ID}> {text}"


async def test_connects_with_only_the_needed_intents_and_fetches_the_gateway_over_rest(bot, fake):
    assert fake.identify["token"] == "test-token"
    assert fake.identify["intents"] == discord.Intents(
        guilds=True, guild_messages=True, dm_messages=True, message_content=True,
        guild_reactions=True, dm_reactions=True).value
    assert fake.find("GET", "/gateway/bot")
    assert not fake.find("PUT", "/applications/{app}/commands")  # commands are synced only when asked


async def test_mention_in_a_channel_is_answered_in_a_thread_on_the_question(bot, fake, core):
    question = fake.message_payload(mention("How long are database backups kept?"), mentions_bot=True)
    await fake.dispatch("MESSAGE_CREATE", question)
    [created] = await fake.wait_for("POST", "/channels/{c}/messages/{m}/threads")
    assert created.path == f"/channels/{CHANNEL_ID}/messages/{question['id']}/threads"
    assert created.body["name"] == "How long are database backups kept?"
    thread = question["id"]  # a thread started on a message has that message's id
    await fake.wait_for("PUT", "/channels/{c}/messages/{m}/reactions/{e}/@me", count=2)
    assert fake.find("POST", f"/channels/{thread}/typing")
    [answer] = fake.find("POST", f"/channels/{thread}/messages")
    assert "30 days" in answer.body["content"]
    assert answer.body["allowed_mentions"] == {"parse": []}
    embed = answer.body["embeds"][0]
    assert embed["title"] == "Sources" and "backups.md" in embed["description"]
    assert "claims verified" in embed["footer"]["text"] or "No checkable claims" in embed["footer"]["text"]
    assert not fake.find("POST", f"/channels/{CHANNEL_ID}/messages")  # nothing in the channel itself
    reactions = fake.find("PUT", "/channels/{c}/messages/{m}/reactions/{e}/@me")
    assert [r.path.split("/")[-2] for r in reactions] == ["👍", "👎"]


async def test_dm_and_existing_thread_are_answered_in_place(bot, fake):
    dm_channel = 810_000_000_000_000_001
    dm = fake.message_payload(mention("When do production deploys happen?"), mentions_bot=True,
                              channel_id=dm_channel, guild=False)
    in_thread = fake.message_payload(mention("When does the on-call rotation change?"), mentions_bot=True,
                                     channel_id=THREAD_ID)
    await fake.dispatch("MESSAGE_CREATE", dm)
    await fake.dispatch("MESSAGE_CREATE", in_thread)
    [dm_answer] = await fake.wait_for("POST", f"/channels/{dm_channel}/messages")
    [thread_answer] = await fake.wait_for("POST", f"/channels/{THREAD_ID}/messages")
    assert "Tuesday" in dm_answer.body["content"]
    assert int(dm_answer.body["message_reference"]["message_id"]) == int(dm["id"])
    assert "Monday" in thread_answer.body["content"]
    assert int(thread_answer.body["message_reference"]["message_id"]) == int(in_thread["id"])
    assert not fake.find("POST", "/channels/{c}/messages/{m}/threads")
    await fake.wait_for("PUT", "/channels/{c}/messages/{m}/reactions/{e}/@me", count=4)


async def test_everyone_mentions_bots_and_itself_are_ignored(bot, fake):
    await fake.dispatch("MESSAGE_CREATE", fake.message_payload("@everyone how long are backups kept?",
                                                               mention_everyone=True))
    await fake.dispatch("MESSAGE_CREATE", fake.message_payload(mention("backups?"), mentions_bot=True,
                                                               author_id=701, author_bot=True))
    await fake.dispatch("MESSAGE_CREATE", fake.message_payload(mention("backups?"), mentions_bot=True,
                                                               author_id=BOT_ID, author_bot=True))
    await fake.dispatch("MESSAGE_CREATE", fake.message_payload("backups without a mention?"))
    last = fake.message_payload(mention("How long are backups kept?"), mentions_bot=True)
    await fake.dispatch("MESSAGE_CREATE", last)  # events are handled in order: this one is the marker
    threads = await fake.wait_for("POST", "/channels/{c}/messages/{m}/threads")
    await fake.wait_for("PUT", "/channels/{c}/messages/{m}/reactions/{e}/@me", count=2)
    assert [t.path for t in threads] == [f"/channels/{CHANNEL_ID}/messages/{last['id']}/threads"]
    assert len(fake.find("POST", "/channels/{c}/messages")) == 1


async def test_generated_everyone_is_neutralised_and_no_mention_is_allowed(bot, fake):
    await fake.dispatch("MESSAGE_CREATE", fake.message_payload(mention("Whom do I ping when the deploy window opens?"),
                                                               mentions_bot=True))
    [answer] = await fake.wait_for("POST", "/channels/{c}/messages")
    await fake.wait_for("PUT", "/channels/{c}/messages/{m}/reactions/{e}/@me", count=2)
    content = answer.body["content"]
    assert f"@{ZWSP}everyone" in content  # the document's sentence made it into the answer, inert
    assert not PING.search(content)
    assert answer.body["allowed_mentions"] == {"parse": []}


async def test_ask_is_deferred_then_answered_in_a_followup(bot, fake, core):
    interaction = fake.interaction_payload("ask", [{"name": "question", "type": 3,
                                                    "value": "How often are restores tested?"}])
    await fake.dispatch("INTERACTION_CREATE", interaction)
    [followup] = await fake.wait_for("POST", f"/webhooks/{APP_ID}/{interaction['token']}")
    callbacks = fake.find("POST", f"/interactions/{interaction['id']}/{interaction['token']}/callback")
    assert [c.body["type"] for c in callbacks] == [5]  # DEFERRED_CHANNEL_MESSAGE_WITH_SOURCE, once
    assert fake.requests.index(callbacks[0]) < fake.requests.index(followup)
    assert "every month" in followup.body["content"]
    assert followup.body["allowed_mentions"] == {"parse": []}
    assert followup.body["embeds"][0]["title"] == "Sources"
    query = "select channel, thread, asker from answers where question = ?"
    await until(lambda: core.feedback._read(query, ["How often are restores tested?"]))
    assert core.feedback._read(query, ["How often are restores tested?"]) == [
        {"channel": str(CHANNEL_ID), "thread": "", "asker": "700"}]


async def test_reactions_on_an_answer_are_votes_and_removal_retracts(bot, fake, core):
    await fake.dispatch("MESSAGE_CREATE", fake.message_payload(mention("How long are backups kept?"),
                                                               mentions_bot=True))
    [answer] = await fake.wait_for("POST", "/channels/{c}/messages")
    await fake.wait_for("PUT", "/channels/{c}/messages/{m}/reactions/{e}/@me", count=2)
    reaction = fake.find("PUT", "/channels/{c}/messages/{m}/reactions/{e}/@me")[0]
    _, _, channel, _, answer_id = reaction.path.split("/")[:5]  # the answer carries the bot's 👍/👎
    before = core.feedback.stats()

    def votes() -> tuple[int, int]:
        s = core.feedback.stats()
        return s["up"] - before["up"], s["down"] - before["down"]

    # the bot's own 👍/👎 (echoed by the gateway) and other emoji are not votes
    for emoji in ("👍", "👎"):
        await fake.dispatch("MESSAGE_REACTION_ADD", fake.reaction_payload(answer_id, emoji, user_id=BOT_ID,
                                                                          channel_id=int(channel)))
    await fake.dispatch("MESSAGE_REACTION_ADD", fake.reaction_payload(answer_id, "🎉", user_id=702,
                                                                      channel_id=int(channel)))
    await fake.dispatch("MESSAGE_REACTION_ADD", fake.reaction_payload(answer_id, "👍", user_id=703,
                                                                      channel_id=int(channel)))
    await fake.dispatch("MESSAGE_REACTION_ADD", fake.reaction_payload(answer_id, "👎🏻", user_id=704,
                                                                      channel_id=int(channel)))
    await until(lambda: votes() == (1, 1))
    removal = fake.reaction_payload(answer_id, "👍", user_id=703, channel_id=int(channel))
    del removal["member"]  # Discord sends no member with removals
    await fake.dispatch("MESSAGE_REACTION_REMOVE", removal)
    await until(lambda: votes() == (0, 1))
    rows = core.feedback._read("select user, value from votes where message_id = ? order by user", [answer_id])
    assert rows == [{"user": "703", "value": None}, {"user": "704", "value": -1}]
    # 704 adds 👍 too (both held, 👍 counts), then removes 👍: the 👎 still held is the vote again
    await fake.dispatch("MESSAGE_REACTION_ADD", fake.reaction_payload(answer_id, "👍", user_id=704,
                                                                      channel_id=int(channel)))
    await until(lambda: votes() == (1, 0))
    removal = fake.reaction_payload(answer_id, "👍", user_id=704, channel_id=int(channel))
    del removal["member"]
    await fake.dispatch("MESSAGE_REACTION_REMOVE", removal)
    await until(lambda: votes() == (0, 1))


async def test_reaction_on_another_message_is_not_a_vote(bot, fake, core):
    other = fake.message_payload("just chatting")
    await fake.dispatch("MESSAGE_CREATE", other)
    before = core.feedback.stats()
    await fake.dispatch("MESSAGE_REACTION_ADD", fake.reaction_payload(other["id"], "👍", user_id=705))
    await until(lambda: core.feedback._read("select 1 from votes where message_id = ?", [other["id"]]) != [])
    after = core.feedback.stats()
    assert (after["up"], after["answers"]) == (before["up"], before["answers"])
    assert not core.vote("discord", other["id"], "705", 1)  # Core says: not a ravbot answer


def interaction_responses(fake: FakeDiscord, interaction: dict[str, Any]) -> tuple[list, list]:
    token = interaction["token"]
    return (fake.find("POST", f"/interactions/{interaction['id']}/{token}/callback"),
            fake.find("POST", f"/webhooks/{APP_ID}/{token}"))


async def test_admin_command_refused_without_permission_is_ephemeral(bot, fake):
    interaction = fake.interaction_payload("ravbot", [{"name": "status", "type": 1, "options": []}],
                                           user_id=706, permissions=0)
    await fake.dispatch("INTERACTION_CREATE", interaction)
    [callback] = await fake.wait_for("POST", f"/interactions/{interaction['id']}/{interaction['token']}/callback")
    assert callback.body["type"] == 4
    assert callback.body["data"]["content"] == ADMIN_REFUSED
    assert callback.body["data"]["flags"] & 64  # EPHEMERAL


async def test_admin_command_allowed_with_manage_server(bot, fake):
    interaction = fake.interaction_payload("ravbot", [{"name": "status", "type": 1, "options": []}],
                                           user_id=707, permissions=MANAGE_GUILD)
    await fake.dispatch("INTERACTION_CREATE", interaction)
    [followup] = await fake.wait_for("POST", f"/webhooks/{APP_ID}/{interaction['token']}")
    [callback], _ = interaction_responses(fake, interaction)
    assert callback.body == {"type": 5, "data": {"flags": 64}}  # deferred, ephemeral
    assert followup.body["flags"] & 64
    assert "Sorry" not in followup.body["content"] and "documents" in followup.body["content"].lower()


async def test_admin_role_reindex_answers_at_once_and_follows_up_when_done(bot, fake):
    interaction = fake.interaction_payload("ravbot", [{"name": "reindex", "type": 1,
                                                       "options": [{"name": "source", "type": 3, "value": "t"}]}],
                                           user_id=708, permissions=0, roles=(ADMIN_ROLE_ID,))
    await fake.dispatch("INTERACTION_CREATE", interaction)
    followups = await fake.wait_for("POST", f"/webhooks/{APP_ID}/{interaction['token']}", count=2, timeout=60)
    assert all(f.body["flags"] & 64 for f in followups)
    assert all(f.body["allowed_mentions"] == {"parse": []} for f in followups)
    assert followups[0].body["content"].startswith("Reindex of t started")
    assert followups[1].body["content"].startswith("Reindex of t finished")
    assert "3 unchanged" in followups[1].body["content"]  # incremental: the files did not change


async def test_a_failed_post_gets_a_short_error_reply(bot, fake):
    question = fake.message_payload(mention("How long are backups kept?"), mentions_bot=True)
    fake.fail("POST", f"/channels/{question['id']}/messages", status=403)
    await fake.dispatch("MESSAGE_CREATE", question)
    posts = await fake.wait_for("POST", f"/channels/{question['id']}/messages", count=2)
    assert posts[1].body["content"] == SORRY


async def test_thread_creation_failure_falls_back_to_replying_in_the_channel(bot, fake):
    fake.fail("POST", "/channels/{c}/messages/{m}/threads", status=403)
    question = fake.message_payload(mention("How long are backups kept?"), mentions_bot=True)
    await fake.dispatch("MESSAGE_CREATE", question)
    [answer] = await fake.wait_for("POST", f"/channels/{CHANNEL_ID}/messages")
    assert int(answer.body["message_reference"]["message_id"]) == int(question["id"])
    assert "30 days" in answer.body["content"]
    await fake.wait_for("PUT", "/channels/{c}/messages/{m}/reactions/{e}/@me", count=2)


async def test_commands_are_synced_to_configured_guilds_when_asked(core, discord_settings, fake):
    settings = discord_settings.replace(discord_sync_commands=True, discord_guild_ids=str(GUILD_ID))
    client, task = await start(core, settings, fake)
    [synced] = fake.find("PUT", "/applications/{app}/guilds/{g}/commands")
    assert synced.path == f"/applications/{APP_ID}/guilds/{GUILD_ID}/commands"
    assert sorted(c["name"] for c in synced.body) == ["ask", "ravbot"]
    ravbot = next(c for c in synced.body if c["name"] == "ravbot")
    assert sorted(o["name"] for o in ravbot["options"]) == ["reindex", "stats", "status"]
    await client.close()
    await asyncio.wait_for(task, 10)


async def test_serve_discord_runs_until_cancelled_and_closes(core, discord_settings, fake):
    task = asyncio.create_task(serve_discord(core, discord_settings))
    await fake.wait_identified()
    await fake.wait_for("GET", "/gateway/bot")
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await until(lambda: not fake._sockets)  # the gateway socket was closed


def test_serve_discord_needs_a_token(core):
    with pytest.raises(ValueError, match="discord_token"):
        asyncio.run(serve_discord(core, core.settings))


def test_api_url_must_be_http(core, monkeypatch):
    monkeypatch.setattr(discord.http.Route, "BASE", discord.http.Route.BASE)
    with pytest.raises(ValueError, match="ftp://x"):
        build_discord_client(core, core.settings.replace(discord_api_url="ftp://x"))



async def test_refused_question_gets_a_short_reply_and_no_thread(bot, fake):
    question = fake.message_payload(mention("???"), mentions_bot=True)
    await fake.dispatch("MESSAGE_CREATE", question)
    [reply] = await fake.wait_for("POST", f"/channels/{CHANNEL_ID}/messages")
    assert reply.body["content"] == "That doesn't look like a question; please ask in words."
    assert int(reply.body["message_reference"]["message_id"]) == int(question["id"])
    assert reply.body["allowed_mentions"] == {"parse": [], "replied_user": False}
    assert not fake.find("POST", "/channels/{c}/messages/{m}/threads")


async def test_unknown_slash_command_gets_an_ephemeral_unknown_command_reply(bot, fake):
    # e.g. a command removed from ravbot but still registered with Discord
    interaction = fake.interaction_payload("forget", [], user_id=709, permissions=0)
    await fake.dispatch("INTERACTION_CREATE", interaction)
    [callback] = await fake.wait_for("POST", f"/interactions/{interaction['id']}/{interaction['token']}/callback")
    assert callback.body["type"] == 4
    assert "unknown command" in callback.body["data"]["content"].lower()
    assert "/forget" in callback.body["data"]["content"]
    assert callback.body["data"]["flags"] & 64  # EPHEMERAL
