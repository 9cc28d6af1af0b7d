"""Platform-neutral rendering of an `Answer`: inline flags, footnotes, sources, summary, splitting."""

from __future__ import annotations

import re
from collections.abc import Callable

from pipeline.text import FENCE, SENTENCE_BREAK, fence_after
from pipeline.types import Answer, Label, Source, Verdict

FLAGS = {Label.UNCERTAIN: "⚠️", Label.UNSUPPORTED: "❌", Label.CONTRADICTED: "❌"}
_SUPERSCRIPT = str.maketrans("0123456789", "⁰¹²³⁴⁵⁶⁷⁸⁹")
_LABEL_WORDS = {Label.UNCERTAIN: "uncertain", Label.UNSUPPORTED: "unsupported", Label.CONTRADICTED: "contradicted"}


def marker(n: int, label: Label) -> str:
    """The inline flag placed right after a flagged claim, e.g. `⚠️¹`."""
    return FLAGS[label] + str(n).translate(_SUPERSCRIPT)


_MD_LINK = re.compile(r"\[([^\]\n]+)\]\(\s*<?([^)\s>]+)>?\s*\)")
_WEB_URL = re.compile(r"^(?:https?://|mailto:)[^\s<>|]+$", re.IGNORECASE)


def plain_link(url: str, text: str) -> str:
    """The terminal's form of a link: "text (url)", or the text alone when it is the address."""
    return text if text in (url, url.removeprefix("mailto:")) else f"{text} ({url})"


def links(text: str, escape: Callable[[str], str] = lambda s: s,
          link: Callable[[str, str], str] = plain_link, web_only: bool = False) -> str:
    """`text` with each Markdown link `[words](url)` given as `link(url, words)` and everything else
    escaped. With `web_only`, a link that is not http(s)/mailto (a file path) keeps only its words."""
    out, pos = [], 0
    for match in _MD_LINK.finditer(text):
        words, url = match.group(1), match.group(2)
        out.append(escape(text[pos:match.start()]))
        out.append(link(url, words) if _WEB_URL.match(url) or not web_only else escape(words))
        pos = match.end()
    out.append(escape(text[pos:]))
    return "".join(out)


def annotate(answer: Answer, escape: Callable[[str], str] = lambda s: s,
             link: Callable[[str, str], str] | None = None, web_only: bool = False) -> tuple[str, list[str]]:
    """The answer text with a flag after each flagged claim, and one footnote per flag.

    `escape` is applied to generated text (answer and evidence) but not to the flags themselves;
    with `link`, Markdown links in it are written as `link(url, words)` (see `links`)."""
    if link is not None:
        plain = escape
        escape = lambda s: links(s, plain, link, web_only)  # noqa: E731
    text, pieces, notes, pos = answer.text, [], [], 0
    flagged = sorted((v for v in answer.verdicts if v.flagged), key=lambda v: v.claim.end)
    for n, verdict in enumerate(flagged, start=1):
        end = max(pos, min(verdict.claim.end, len(text)))
        pieces.append(escape(text[pos:end]))
        pieces.append(" " + marker(n, verdict.label))
        pos = end
        notes.append(marker(n, verdict.label) + " " + footnote(verdict, escape))
    pieces.append(escape(text[pos:]))
    return "".join(pieces), notes


def footnote(verdict: Verdict, escape: Callable[[str], str] = lambda s: s) -> str:
    """"contradicted: source says 2018 — "…evidence…" (Title, link)"."""
    words = _LABEL_WORDS[verdict.label]
    if verdict.reason:
        words += f": {escape(verdict.reason)}"
    elif verdict.conflict:
        words += f": source says {escape(verdict.conflict)}"
    elif verdict.unstated:
        words += f": the sources never state {escape(verdict.unstated)}"
    elif verdict.label is Label.UNSUPPORTED:
        words += ": no source found that backs this"
    elif verdict.label is Label.UNCERTAIN:
        words += ": the sources only partly back this"
    if verdict.sentence and verdict.evidence:
        quote = verdict.sentence if len(verdict.sentence) <= 240 else verdict.sentence[:237] + "..."
        where = escape(verdict.evidence.title or "source")
        if verdict.evidence.link:
            where += ", " + escape(verdict.evidence.link)
        words += f' — "{escape(quote)}" ({where})'
    return words


def summary_line(answer: Answer) -> str:
    """One line: "4 of 5 claims verified; 1 uncertain" (or why nothing was verified)."""
    if answer.error:
        return "Not verified: no answer was produced."
    if answer.idk:
        return "Nothing to verify: no relevant documents were found."
    if not answer.verdicts:
        return "No checkable claims (no names, dates or numbers) in this answer."
    counts: dict[str, int] = {}
    for v in answer.verdicts:
        if v.flagged:
            key = "unsupported" if v.label is Label.UNSUPPORTED else _LABEL_WORDS[v.label]
            counts[key] = counts.get(key, 0) + 1
    ok = sum(not v.flagged for v in answer.verdicts)
    line = f"{ok} of {len(answer.verdicts)} claims verified"
    if counts:
        line += "; " + ", ".join(f"{n} {word}" for word, n in counts.items())
    checked = sorted({s for v in answer.verdicts for s in v.checked_against})
    if checked:
        line += " (checked against " + " and ".join("Wikipedia" if s == "wikipedia" else "the knowledge base" for s in checked) + ")"
    return line


def timings_line(answer: Answer) -> str:
    """"retrieve 120 ms · generate 4 ms · …" in pipeline order."""
    return " · ".join(f"{stage} {ms:.0f} ms" for stage, ms in answer.timings.items())


def plain_source(source: Source) -> str:
    """"[1] Title — link": a source as the terminal lists it."""
    return f"[{source.id}] {source.title}" + (f" — {source.link}" if source.link else "")


def answer_parts(answer: Answer, escape: Callable[[str], str] = lambda s: s, *,
                 link: Callable[[str, str], str] | None = None, web_only: bool = False, note: str = "Note: {}",
                 sources: str | None = "Sources:", source_line: Callable[[Source], str] = plain_source,
                 body: str | None = None) -> list[str]:
    """The blocks of an answer in the order every platform shows them: the text with its inline flags
    (`annotate`), the footnotes, the notes (each written as `note`), then the `sources` heading over
    one `source_line` per source. Footnotes, notes and sources appear only when there are some, the
    sources not at all when `sources` is None. `body` replaces the text and its footnotes (an apology instead of a failed answer)."""
    if body is None:
        body, footnotes = annotate(answer, escape, link=link, web_only=web_only)
    else:
        footnotes = []
    parts = [body]
    if footnotes:
        parts.append("\n".join(footnotes))
    if answer.notes:
        parts.append("\n".join(note.format(escape(n)) for n in answer.notes))
    if answer.sources and sources is not None:
        parts.append(sources + "\n" + "\n".join(source_line(s) for s in answer.sources))
    return parts


def to_text(answer: Answer) -> str:
    """The whole answer as plain text (terminal, fallbacks); links as "text (url)"."""
    return "\n\n".join([*answer_parts(answer, link=plain_link), summary_line(answer)])




FENCE_ROOM = 8  # what closing a code block at a cut and opening it again in the next piece adds


def balance_fences(pieces: list[str]) -> list[str]:
    """Pieces of one text, each a whole message: a code block cut between two pieces is closed at
    the end of the first and opened again at the start of the next, so that no message leaves a
    code block open (the rest of it, and everything after, would read as code). Adds at most
    FENCE_ROOM characters to a piece."""
    out, carried = [], ""
    for n, piece in enumerate(pieces, start=1):
        if carried:
            piece = f"{carried}\n{piece}"
        fence = ""
        for m in FENCE.finditer(piece):
            fence = fence_after(fence, m.group(1))
        out.append(f"{piece}\n{fence}" if fence and n < len(pieces) else piece)  # the text's own end stays as it is
        carried = fence
    return out


def split_text(text: str, limit: int) -> list[str]:
    """Split `text` into pieces of at most `limit` characters, at paragraph or sentence boundaries
    where possible, else at spaces, else hard. No piece is empty; joining loses only whitespace
    (and, where a cut falls inside a code block, the fences `balance_fences` adds)."""
    if limit < 1:
        raise ValueError(f"limit must be positive, got {limit}")
    if FENCE.search(text) and limit > 4 * FENCE_ROOM:
        return balance_fences(_split_text(text, limit - FENCE_ROOM))
    return _split_text(text, limit)


def _split_text(text: str, limit: int) -> list[str]:
    pieces: list[str] = []
    rest = text.strip()
    while len(rest) > limit:
        window = rest[: limit + 1]
        cut = max((m.end() for m in SENTENCE_BREAK.finditer(window) if m.start() <= limit and m.start() > 0), default=0)
        if cut == 0:
            cut = window.rfind(" ")
        if cut <= 0:
            cut = limit
        piece = rest[:cut].rstrip()
        if not piece:
            piece, cut = rest[:limit], limit
        pieces.append(piece)
        rest = rest[cut:].lstrip()
    if rest:
        pieces.append(rest)
    return pieces
