"""Which evidence texts a claim is compared with: the evidence sentences that share the most words
with it, two-sentence windows around the best of them, and a list read whole with its lead-in.
Plain strings in, plain strings out; `pipeline.verify.align` embeds and ranks them.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

from pipeline.text import (
    FENCE,
    FUNCTION_WORDS,
    LIST_ITEM,
    join_sentences,
    markdown_sentences,
    terms,
)

MAX_SENTENCES = 6  # evidence sentences per claim kept for alignment (by word overlap), before windows


def _overlap_key(word: str) -> str:
    """The form in which alignment compares a word: its first six letters. Not `pipeline.text.stem`:
    with Porter stems here, 5 of the 233 Climate-FEVER test claims changed label, all for the worse
    (their top evidence sentences changed), so this stays a measured exception (tests/test_text.py)."""
    return word[:6] if len(word) > 6 else word


def content_words(text: str) -> set[str]:
    """The comparison keys (`_overlap_key`) of `text`'s content words (three letters or more, no function word)."""
    return {_overlap_key(w) for w in terms(text) if len(w) > 2 and w not in FUNCTION_WORDS}


def evidence_candidates(claim: str, evidence: Sequence[str]) -> list[tuple[str, int]]:
    """Evidence sentences most like the claim (by shared words), plus two-sentence windows around them and
    the lists they lead in or belong to (`whole_list`)."""
    claim_words = content_words(claim)
    scored = []
    for ei, text in enumerate(evidence):
        sentences = markdown_sentences(text) or [text]
        for si, sentence in enumerate(sentences):
            if not any(ch.isalnum() for ch in sentence):
                continue  # a fence or a brace: no statement
            overlap = len(claim_words & content_words(sentence)) / (1 + math.log1p(len(sentence) / 80))
            scored.append((overlap, -len(scored), ei, si, sentences))
    scored.sort(reverse=True)
    keep = scored[:MAX_SENTENCES]
    out: dict[str, int] = {}
    for _, _, ei, si, sentences in keep:
        out.setdefault(sentences[si], ei)
    for rank, (_, _, ei, si, sentences) in enumerate(keep[:3]):
        if si + 1 < len(sentences):
            out.setdefault(join_sentences(sentences[si], sentences[si + 1]), ei)
        if si > 0 and (rank == 0 or _continues(sentences[si - 1], sentences[si])):
            out.setdefault(join_sentences(sentences[si - 1], sentences[si]), ei)
        if whole := whole_list(sentences, si):
            out.setdefault(whole, ei)
        if entry := field_entry(sentences, si):
            out.setdefault(entry, ei)
        if item := whole_item(sentences, si):
            out.setdefault(item, ei)
        if block := whole_block(sentences, si):
            out.setdefault(block, ei)
    return list(out.items())


def _continues(previous: str, sentence: str) -> bool:
    """Whether `sentence` goes on with the list item `previous` opens ("* Tier 3 - If possible its
    tests run nightly." before "Does not block shipping a release."): the item's label is the
    subject of both."""
    return bool(LIST_ITEM.match(previous)) and not LIST_ITEM.match(sentence)


LIST_MAX_CHARS = 800  # a list read whole, lead-in and items, up to this long


def whole_list(sentences: Sequence[str], si: int) -> str:
    """The list that sentence `si` leads in ("…message types:") or is an item of, read whole: its
    lead-in and every item, so that a claim that enumerates them ("on_connect, on_receive and
    on_disconnect") meets them together. '' when `si` is in no list of two items or more."""
    start = si
    while start > 0 and LIST_ITEM.match(sentences[start]):
        start -= 1
    if LIST_ITEM.match(sentences[start]) or not sentences[start].rstrip().endswith(":"):
        return ""
    end = start + 1
    while end < len(sentences) and LIST_ITEM.match(sentences[end]):
        end += 1
    whole = " ".join(sentences[start:end])
    return whole if end - start > 2 and len(whole) <= LIST_MAX_CHARS else ""


FIELD_MAX_CHARS = 80  # a short list item with a label is a field of an entry ("* Default: 2", "* Type: Number")
ENTRY_MAX_CHARS = 400
_FIELD = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+\W{0,2}[\w .-]{1,30}\W{0,2}:")  # "* Default: 2", "- **Type:** Number"


def _field(sentence: str) -> bool:
    return len(sentence) <= FIELD_MAX_CHARS and _FIELD.match(sentence) is not None


def field_entry(sentences: Sequence[str], si: int) -> str:
    """A reference entry read whole: sentence `si`, the short labelled list items after it (its fields), and the
    sentence that follows them (its description): "fetch-retries * Default: 2 * Type: Number The
    "retries" config for the `retry` module …", so that a claim joining a field to the description
    ("fetch-retries sets how many times it retries and defaults to 2") meets both. '' when no short
    item follows `si`."""
    end = si + 1
    while end < len(sentences) and _field(sentences[end]):
        end += 1
    if end == si + 1 or end == len(sentences):
        return ""
    whole = " ".join(sentences[si:end + 1])
    return whole if len(whole) <= ENTRY_MAX_CHARS else ""


ITEM_MAX_SENTENCES = 4  # a list item read whole, up to this many sentences …
ITEM_MAX_CHARS = 600  # … and this long


def whole_item(sentences: Sequence[str], si: int) -> str:
    """The list item sentence `si` opens or goes on with, read whole when it runs to three sentences or
    more ("* `historySize` {number} Maximum number of history lines retained. To disable … **Default:**
    `30`."): its last sentence gives the default the first one's name has. '' otherwise."""
    start = si
    while start > max(0, si - ITEM_MAX_SENTENCES + 1) and not LIST_ITEM.match(sentences[start]):
        start -= 1
    if not LIST_ITEM.match(sentences[start]):
        return ""
    end = start + 1
    while end < len(sentences) and end - start < ITEM_MAX_SENTENCES and not LIST_ITEM.match(sentences[end]):
        end += 1
    whole = " ".join(sentences[start:end])
    return whole if end - start >= 3 and len(whole) <= ITEM_MAX_CHARS else ""


BLOCK_MAX_CHARS = 700  # a code block read whole, lead-in and lines, up to this long


def whole_block(sentences: Sequence[str], si: int) -> str:
    """The fenced code block sentence `si` is a line of, or that sentence `si` leads in, read whole with
    its lead-in and without its fences or braces: "Output: "BatchSize": 5, "State": "Creating"", so that a
    claim about an example ("the response shows its State as Creating") meets the example whole, not
    one line of it. '' when `si` is neither, or the block is too long."""
    fences = [k for k, sentence in enumerate(sentences) if FENCE.match(sentence)]
    blocks = list(zip(fences[::2], fences[1::2], strict=False))
    for start, end in blocks:
        lead = start - 1 if start > 0 and not any(a <= start - 1 <= b for a, b in blocks) else start
        if lead <= si < end:
            lines = [t for t in sentences[start + 1:end] if any(ch.isalnum() for ch in t)]
            whole = " ".join([*sentences[lead:start], *lines])
            return whole if lines and len(whole) <= BLOCK_MAX_CHARS else ""
    return ""
