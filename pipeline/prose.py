"""The sentences of a chunk's prose, in reading order: wrapped lines joined, list items kept apart
with their lead-in, code blocks, headings and table rows left out (each sentence knows whether a
code block follows it, and keeps that block when it is short enough to show), and each as the
sentence an answer quotes (`as_sentence`). The extractive answer (`pipeline.generate`) quotes them;
`pipeline.sentence_vectors` embeds them. Pure text; no I/O.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from pipeline.examples import code_blocks
from pipeline.text import ENDS_SENTENCE, FENCE, LIST_ITEM, split_sentences

# A reference entry's default field ("* Default: 15", "- **Default:** `false`"): the value belongs to
# the entry's sentences ("The maximum number of connections to use per origin.").
DEFAULT_FIELD = re.compile(r"^[*_]*defaults?(?: value)?[*_]*\s*:[*_]*\s*(?=\S)", re.I)  # `.sub("", …)` leaves the value


@dataclass(frozen=True)
class Unit:
    """One sentence of a chunk's prose; a list item's sentences know their list's lead-in (an index
    into the same unit list, or -1): a nested list's is the item it is nested in, when that item ends
    on its colon ("* For each affected branch:" over its steps)."""

    text: str
    item: bool = False
    lead: int = -1
    first: bool = True  # the first sentence of its paragraph or list item
    code: bool = False  # a code block follows it
    example: str = ""  # that block, when it is fenced and short enough to show (`pipeline.examples.code_blocks`)


_TRAILING_ASIDE = re.compile(r"^\([^()]*[^()\s.!?\"'”’]\)[.!?]*$")  # "(6 months or 1 year).", not "(See below.)"


def _whole(pieces: list[str]) -> list[str]:
    """Sentences rejoined where the rule-based split cut one: inside a code span (an odd number of
    backticks so far), before a parenthesis that only closes the sentence before it ("How long is
    the term? (6 months or 1 year)."), or before a default that completes it ("… retained.
    Default: `30`.")."""
    out: list[str] = []
    for piece in pieces:
        if out and (out[-1].count("`") % 2 or _TRAILING_ASIDE.match(piece) or DEFAULT_FIELD.match(piece)):
            out[-1] = f"{out[-1]} {piece}"
        else:
            out.append(piece)
    return out


# A task list's box and an escaped step number ("[ ] 2\\. **Review of Reports:**"), and a table of
# contents' entry ("[7. Propose release on GitHub](#7-propose-release-on-github)").
_TASK_BOX = re.compile(r"^\[[ xX]\]\s+(?:\d+\\?\.\s+)?")
_TOC_ENTRY = re.compile(r"^(?:\[[^\]\n]*\]\([^)\s#]*#[^)\s]*\)\s*)+$")  # (#anchor), or (page.md#anchor) once resolved


def prose_units(text: str) -> list[Unit]:
    """The sentences of a chunk's prose in reading order: wrapped lines joined, list items kept
    apart (each with its lead-in), code, headings and table rows dropped."""
    units: list[Unit] = []
    buffer: list[str] = []
    block: list[str] = []  # the fenced block being read, fences included
    state = {"item": False, "list": False, "lead": -1, "blank": False, "fence": "", "heading": False, "led": -1}
    levels: list[tuple[int, int]] = []  # the open lists, outermost first: (indentation of their items, lead-in)

    def flush() -> None:
        if buffer:
            for k, sentence in enumerate(_whole(split_sentences(" ".join(" ".join(buffer).split())))):
                units.append(Unit(sentence, state["item"], state["lead"] if state["item"] else -1, k == 0))
            buffer.clear()

    def code_follows() -> None:
        if units and not state["heading"]:
            units[-1] = replace(units[-1], code=True)

    for line in text.split("\n"):
        if match := FENCE.match(line):
            flush()
            if not state["fence"]:
                code_follows()
                state["led"] = len(units) - 1 if units and not state["heading"] else -1
                block.clear()
            block.append(line)
            mark = match.group(1)
            state["fence"] = "" if state["fence"] and mark[0] == state["fence"][0] else (state["fence"] or mark)
            if not state["fence"] and state["led"] >= 0 and (shown := code_blocks("\n".join(block))):
                units[state["led"]] = replace(units[state["led"]], example=shown[0])
            continue
        if state["fence"]:
            block.append(line)
            continue
        if not line.strip():
            flush()
            state["blank"] = True
            continue
        indented = line.startswith(("    ", "\t"))
        state["heading"] = False
        if line.lstrip().startswith(("#", "|")) and not indented:
            flush()
            state.update(list=False, item=False, heading=True)
        elif LIST_ITEM.match(line) and (state["list"] or not indented):
            flush()
            last = units[-1] if units else None
            depth = len(line) - len(line.lstrip())
            if not state["list"]:
                levels = [(depth, len(units) - 1 if last and not last.item and last.text.endswith(":") else -1)]
            elif depth > levels[-1][0]:  # a nested list: led by its item when that item ends on its colon
                levels.append((depth, len(units) - 1 if last and last.item and last.text.endswith(":") else levels[-1][1]))
            while len(levels) > 1 and depth < levels[-1][0]:
                levels.pop()
            state["lead"] = levels[-1][1]
            state.update(list=True, item=True)
            item = _TASK_BOX.sub("", LIST_ITEM.sub("", line))
            if not _TOC_ENTRY.match(item):  # a table of contents' entry is navigation, not prose
                buffer.append(item)
        elif indented and not state["list"] and (state["blank"] or not buffer):
            flush()  # an indented code block
            code_follows()
        else:
            if state["blank"] and not indented and state["list"]:
                flush()
                state.update(list=False, item=False)
            buffer.append(line.strip())
        state["blank"] = False
    flush()
    return [u for u in units if len(u.text) >= 3]


# Markdown's escapes of characters that mean nothing to Markdown mid-sentence ("March 2023\.",
# "0 \- Central Office") are read as the characters. Those that mean something where an answer is
# shown (an escaped asterisk, underscore, backtick, bracket, angle bracket or bar) stay escaped.
_INERT_ESCAPE = re.compile(r"\\([.\-!\"'(),:;?/=+&#{}])")


def _unescape_inert(text: str) -> str:
    """`text` without `_INERT_ESCAPE`'s escapes, outside its code spans."""
    return "".join(part if part.startswith("`") else _INERT_ESCAPE.sub(r"\1", part)
                   for part in re.split(r"(`[^`\n]*`)", text))


_PARENTHESISED = re.compile(r"^\(([A-Z`\[][^()]*(?:\([^()]*\)[^()]*)*)\)([.!?]?)$")


def as_sentence(unit: Unit) -> str:
    """A unit as a sentence of the answer: one that opens its paragraph or list item in lower case
    (a list item, a table row, a quoted excerpt: "only Zoom for Government may be used…") is
    capitalised, and any unit without closing punctuation gets a full stop. (A chunk's first
    sentence cut mid-way never gets here: `_candidates` leaves it out.)"""
    text = _unescape_inert(unit.text)
    if whole := _PARENTHESISED.match(text):  # "(The `git node metadata` command can do it for you)."
        text = whole.group(1) + whole.group(2)
    lead = len(text) - len(text.lstrip("[*_"))  # "[thanks.dev](https://thanks.dev)": its first letter
    if unit.first and text[lead:lead + 1].islower():
        text = text[:lead] + text[lead].upper() + text[lead + 1:]
    text = re.sub(r"\s*[,;]$", "", text)  # a list item that ends "…, or" its list's comma
    return text if ENDS_SENTENCE.search(text.rstrip("*_")) else text + "."
