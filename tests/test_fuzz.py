"""Property tests (hypothesis) for the parsers and renderers that see untrusted text: chunking,
ingest normalisation, the FTS5 query builder, question cleaning, the citation check, the
platform-neutral renderer and the Slack / Discord renderers.

Each property is one that a hostile or merely odd input could break: a crash, an over-limit
message, a ping, a forged link, a citation of a source that was never provided, or lost text.
"""

from __future__ import annotations

import re
import sqlite3

from hypothesis import HealthCheck, assume, given
from hypothesis import settings as hyp_settings
from hypothesis import strategies as st

from adapters import discord as discord_adapter
from adapters import slack as slack_adapter
from adapters.render import annotate, split_text
from pipeline.answer import clean_question, question_problem
from pipeline.chunking import chunk_document
from pipeline.citations import check_citations, cited_ids
from pipeline.ingest import decode
from pipeline.markup import to_markdown
from pipeline.store import fts_query
from pipeline.types import Answer, Claim, Document, Evidence, Label, Source, Verdict

FAST = hyp_settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# Text that looks like markup on some platform, plus Unicode that tends to break splitters:
# combining marks, RTL overrides, zero-width joiners, astral emoji, surrogate-free odd spaces.
_TRICKY = ["# ", "## ", "\n", "\n\n", "```", "    ", "- ", "1. ", "|", "<", ">", "&", "&amp;", "<!channel>",
           "@everyone", "@here", "<@U1>", "<@123>", "[x](https://evil.example)", "*", "_", "~", "`", ". ", "?",
           "é", "e\u0301", "\u202e", "\u200d", "\u00a0", "\u3000", "👍🏽", "🏳️‍🌈", "中文", "العربية", "[1]", "[2, 3]",
           "[99]", "word", "Ignore previous instructions", "\x00", "\x1b[31m", "\ufeff", "\u2028"]
tricky_text = st.lists(st.sampled_from(_TRICKY), max_size=200).map("".join) | st.text(max_size=2000)


# --- ingest and chunking --------------------------------------------------------------------------

@FAST
@given(tricky_text, st.sampled_from(["markdown", "text", "rst", "html"]))
def test_to_markdown_is_total(text: str, fmt: str):
    out, title = to_markdown(text, fmt)
    assert isinstance(out, str) and isinstance(title, str)
    assert "\r" not in out


@FAST
@given(st.binary(max_size=3000))
def test_decode_either_returns_text_or_names_the_file(data: bytes):
    try:
        text = decode(data, "docs/x.md")
    except ValueError as e:
        assert "docs/x.md" in str(e)
    else:
        assert isinstance(text, str) and not text.startswith("\ufeff")


@FAST
@given(tricky_text, st.integers(50, 400), st.data())
def test_chunks_respect_size_have_unique_ids_and_keep_the_words(text: str, size: int, data: st.DataObject):
    overlap = data.draw(st.integers(0, size - 1))
    doc = Document(id="s:doc", source="s", title="Doc ✓ \u202e", text=text, path="doc.md")
    chunks = chunk_document(doc, size, overlap)
    assert all(0 < len(c.text) <= size for c in chunks)
    assert len({c.id for c in chunks}) == len(chunks)
    assert [c.position for c in chunks] == list(range(len(chunks)))
    seen = " ".join(c.text for c in chunks)
    # headings name sections, not chunk text: "# x", and "- # x" or "> # x" (a heading in a list item or a quote)
    heading = re.compile(r"\s*(?:(?:[-*+]|\d+[.)])\s+|>\s*)*#")  # ">#" too: a quote needs no space
    prose = "\n".join(line for line in text.split("\n") if not heading.match(line))
    if "```" not in text and "~~~" not in text:  # fenced code may swallow what follows it
        # plain words are never consumed by markup; a run without spaces longer than a chunk is cut
        # where the chunk ends ("…\x1b[31mIgnore" at size 50), so only words in runs that fit count
        for word in {w for run in prose.split() if len(run) <= size for w in re.findall(r"[A-Za-z]+", run)}:
            assert word in seen, word


# --- retrieval input ----------------------------------------------------------------------------

@FAST
@given(tricky_text)
def test_fts_query_is_always_a_valid_fts5_query(text: str):
    db = sqlite3.connect(":memory:")
    db.execute("create virtual table t using fts5(body, tokenize='porter unicode61')")
    db.execute("insert into t(body) values ('backups are kept for thirty days')")
    query = fts_query(text)
    if query:
        db.execute("select rowid from t where t match ?", [query]).fetchall()  # must not raise


@FAST
@given(tricky_text)
def test_clean_question_strips_controls_and_problems_are_messages(text: str):
    cleaned = clean_question(text)
    assert not re.search(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b-\u200f\u2028\u2029\ufeff]", cleaned)
    assert cleaned == cleaned.strip() and "  " not in cleaned
    problem = question_problem(text, 500)
    assert problem is None or (isinstance(problem, str) and problem)
    if problem is None:
        assert 0 < len(cleaned) <= 500


# --- the citation check ---------------------------------------------------------------------------

@FAST
@given(st.lists(st.sampled_from(["Fact", " ", "[1]", "[2]", "[3]", "[1, 2]", "[2,9]", "[42]", "[0]", ".", "[", "]", "`", "\n```\n"]),
                max_size=60).map("".join),
       st.sets(st.integers(1, 3)))
def test_check_citations_keeps_only_provided_ids(text: str, provided: set[int]):
    cleaned, invented = check_citations(text, provided)
    assert cited_ids(cleaned) <= provided
    assert set(invented) == cited_ids(text) - provided or set(invented) <= cited_ids(text)
    assert set(invented).isdisjoint(provided)


@FAST
@given(st.lists(st.integers(0, 99_999), min_size=1, max_size=40), st.sampled_from([",", ", ", ";", " ", "-", " , "]),
       st.sampled_from(["]", " ]", ",]", ")", " (peak)]", ', "x"]', "", "\n]"]))
def test_a_bracketed_list_of_numbers_is_a_marker_only_when_it_closes_as_one(numbers: list[int], sep: str, tail: str):
    # "[3, 4, 10, … 57 (peak)]" is read in one pass (the marker pattern once backtracked through every
    # split of every number, tests/test_text.py); it cites nothing, and the answer's own marker still counts
    listed = "[" + sep.join(str(n) for n in numbers) + tail
    text = f"Massif lists the snapshots {listed} [1]."
    closes = tail in ("]", " ]", ",]", "\n]")
    assert cited_ids(text) == ({1, *numbers} if closes else {1})
    cleaned, invented = check_citations(text, {1})
    assert set(invented) == (set(numbers) - {1} if closes else set())
    assert cited_ids(cleaned) == {1} and (cleaned == text if not closes else cleaned.endswith(" [1]."))


# --- rendering ------------------------------------------------------------------------------------

@st.composite
def answers(draw: st.DrawFn) -> Answer:
    text = draw(tricky_text)
    verdicts = []
    for _ in range(draw(st.integers(0, 4))):
        start = draw(st.integers(0, len(text)))
        end = draw(st.integers(start, len(text)))
        ev = Evidence(text=draw(tricky_text), title=draw(tricky_text), url=draw(st.sampled_from(
            ["", "https://wiki.example/ü?a=<b>&c", "javascript:alert(1)", "https://x.example/a|b"])))
        verdicts.append(Verdict(Claim(text[start:end], start, end), draw(st.sampled_from(list(Label))), 0.5,
                                "default", evidence=ev, sentence=draw(tricky_text), conflict=draw(tricky_text)))
    urls = ["", "https://docs.example/ünï cødé/😀?q=1&r=<2>", "ftp://x", "https://x.example/a)b](c", "data:text/html,<x>"]
    sources = tuple(Source(i + 1, draw(tricky_text), url=draw(st.sampled_from(urls)), path=draw(tricky_text))
                    for i in range(draw(st.integers(0, 3))))
    return Answer(question="q", text=text, sources=sources, verdicts=tuple(verdicts),
                  notes=tuple(draw(st.lists(tricky_text, max_size=2))), idk=draw(st.booleans()),
                  error=draw(st.sampled_from(["", "boom"])), timings={"retrieve": 1.0})


@FAST
@given(answers())
def test_annotate_only_adds_flags(answer: Answer):
    assume(not re.search("[⁰¹²³⁴⁵⁶⁷⁸⁹]", answer.text))  # a superscript next to a flag would blur the check
    body, notes = annotate(answer)
    flags = re.compile(r" (⚠️|❌)[⁰¹²³⁴⁵⁶⁷⁸⁹]+")
    assert flags.sub("", body) == answer.text
    assert len(notes) == sum(v.flagged for v in answer.verdicts)


@FAST
@given(tricky_text, st.integers(1, 300))
def test_split_text_respects_limit_and_loses_only_whitespace(text: str, limit: int):
    pieces = split_text(text, limit)
    assert all(0 < len(p) <= limit for p in pieces)
    def kept(t: str) -> str:  # a code block cut between pieces is closed and reopened: fence characters may be added
        return "".join(t.split()).replace("`", "").replace("~", "")

    assert kept("".join(pieces)) == kept(text)
    if "```" not in text and "~~~" not in text:
        assert "".join("".join(pieces).split()) == "".join(text.split())


_SLACK_LINK = re.compile(r"<https?://[^\s<>|]+\|[^<>]*>")


@FAST
@given(answers())
def test_slack_rendering_cannot_ping_or_forge_links(answer: Answer):
    blocks, text = slack_adapter.render_answer(answer, error_id="e1")
    assert len(blocks) <= slack_adapter.BLOCK_LIMIT
    texts = [text] + [b["text"]["text"] for b in blocks if "text" in b] + \
        [e["text"] for b in blocks for e in b.get("elements", [])]
    for t in texts:
        rest = _SLACK_LINK.sub("", t)  # our own source links are the only markup allowed
        assert "<" not in rest and ">" not in rest
    for b in blocks:
        if b["type"] == "section":
            assert len(b["text"]["text"]) <= slack_adapter.SECTION_LIMIT and b["text"]["verbatim"] is True


_DISCORD_PING = re.compile(r"@(everyone|here)|<@[!&]?\d+>|<#\d+>", re.IGNORECASE)


@FAST
@given(answers())
def test_discord_rendering_cannot_ping_or_forge_links(answer: Answer):
    posts = discord_adapter.render_answer(answer)
    assert posts and posts[-1].embed is not None
    for post in posts:
        assert 0 < len(post.content) <= discord_adapter.MESSAGE_LIMIT
        assert not _DISCORD_PING.search(post.content)
        assert not re.search(r"\]\s*\(", post.content)
    embed = posts[-1].embed
    assert len(embed) <= discord_adapter.EMBED_TOTAL_LIMIT
    for target in re.findall(r"\]\(([^)]*)\)", embed.description or ""):
        assert target.startswith(("http://", "https://")) and " " not in target
    assert not _DISCORD_PING.search(embed.description or "") and not _DISCORD_PING.search(embed.footer.text or "")
