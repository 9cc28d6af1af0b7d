"""Citation markers in an answer: which source ids it cites, and removing the markers of ids that
were never provided. Brackets in code are code, never markers."""

from __future__ import annotations

import logging

from pipeline.text import MARK, cited_numbers, code_spans, marked_numbers

log = logging.getLogger(__name__)


def check_citations(text: str, provided: set[int]) -> tuple[str, list[int]]:
    """Remove citations of ids that were never provided; returns (clean text, invented ids).

    Nothing else changes: a marker citing only provided ids is kept as written, one citing some
    is rewritten with those ids only, and one citing none is removed with the spaces before it
    (or, at the start of a line, after it). Brackets in code are code, never markers: `items[0]`,
    a regex's `[0-9]`."""
    invented: list[int] = []
    out: list[str] = []
    pos = 0
    code = code_spans(text)
    for match in MARK.finditer(text):
        if any(a <= match.start() < b for a, b in code):
            continue
        ids = marked_numbers(match.group(0))
        valid = [i for i in ids if i in provided]
        if len(valid) == len(ids):
            continue
        invented.extend(i for i in ids if i not in provided)
        start, end = match.start(), match.end()
        if not valid:
            gap = text[pos:start]
            before = len(gap) - len(gap.rstrip(" \t"))
            if start - before == 0 or text[start - before - 1] == "\n":
                end += len(text[end:]) - len(text[end:].lstrip(" \t"))  # at a line's start
            else:
                start -= before
        out.append(text[pos:start])
        if valid:
            out.append("[" + ", ".join(str(i) for i in valid) + "]")
        elif next((o for o in reversed(out) if o), "")[-1:] == "`" and text[end:end + 1] == "`":
            out.append(" ")  # "`a`[9]`b`": joined, the backticks would make another code span
        pos = end
    out.append(text[pos:])
    if invented:
        log.warning("removed citations of ids never provided: %s", invented)
    return "".join(out), invented


def cited_ids(text: str) -> set[int]:
    """The ids that `text`'s markers cite, outside code."""
    for start, end in reversed(code_spans(text)):
        text = text[:start] + " " + text[end:]
    return set(cited_numbers(text))
