"""LLM second opinion: ask the configured LLM, in one call per answer, about the claims the rules left UNCERTAIN.

Its one job: take the verdicts of one answer and, for the UNCERTAIN ones only, send each claim with
the evidence it was judged against (its aligned sentence and its best passage, trimmed) in a single
JSON-mode request, then apply the validated reply. An entry counts only when its id is one that was
sent, its label is `supported`, `contradicted` or `unknown`, and, for `supported`/`contradicted`, its
`quote` occurs (case- and whitespace-insensitively) in that claim's evidence as sent: no support or
contradiction on invented words. `supported` → SUPPORTED, `contradicted` → CONTRADICTED quoting the
source ("source says …"), `unknown` → unchanged. Verdicts that are not UNCERTAIN are never touched,
so a rule-based CONTRADICTED is never lowered. An `LLMError` or a malformed reply leaves every verdict
as it was. Changed verdicts carry `method = "llm-second-opinion"`.
"""

from __future__ import annotations

import dataclasses
import logging
import re
from collections.abc import Sequence
from typing import Any

from pipeline.llm import read_json
from pipeline.text import markdown_sentences
from pipeline.types import Label, Verdict
from pipeline.verify.rules import CONTRADICTED_CONFIDENCE

log = logging.getLogger(__name__)

METHOD = "llm-second-opinion"
MAX_CLAIMS = 12  # UNCERTAIN claims sent per answer; the rest keep their rule-based verdict
MAX_CLAIM_CHARS = 400
MAX_PASSAGE_CHARS = 700
MAX_SENTENCE_CHARS = 400

SYSTEM = (
    "You check numbered factual claims, each against its own numbered evidence. Answer only with JSON: "
    '{"verdicts": [{"id": <claim number>, "label": "supported" | "contradicted" | "unknown", '
    '"quote": "<the exact words of that claim\'s evidence that decide it>", "reason": "<one short sentence>"}]}, '
    'one entry per claim. "supported" only if the claim\'s evidence states the whole claim, with the same '
    'numbers, dates, names and meaning; "contradicted" if its evidence states something incompatible (another '
    'value, the opposite, a negation); otherwise "unknown". Judge each claim only against its own evidence, '
    "and copy the quote word for word from that evidence."
)
_LABELS = {"supported": Label.SUPPORTED, "contradicted": Label.CONTRADICTED, "unknown": None}


def second_opinion(
    verdicts: Sequence[Verdict],
    llm: Any,
    *,
    max_claims: int = MAX_CLAIMS,
    supported_confidence: float = 0.5,
) -> list[Verdict]:
    """The verdicts with the LLM's validated opinion applied to the UNCERTAIN ones (one `llm.complete`
    call at most; none without an LLM or an UNCERTAIN verdict that has evidence).

    `supported_confidence` is the confidence an upgraded claim gets at least (the settings'
    `supported_threshold`); a CONTRADICTED one gets at most `CONTRADICTED_CONFIDENCE`."""
    if max_claims < 1:
        raise ValueError(f"max_claims must be at least 1, got {max_claims!r}")
    out = list(verdicts)
    if llm is None:
        return out
    asked = [i for i, v in enumerate(out) if v.label is Label.UNCERTAIN and _evidence(v)][:max_claims]
    if not asked:
        return out
    evidence = {n: _evidence(out[i]) for n, i in enumerate(asked, 1)}
    prompt = _prompt([out[i].claim.text for i in asked], evidence)
    from pipeline.llm import LLMError

    try:
        raw = llm.complete(SYSTEM, prompt, max_tokens=min(2000, 80 + 160 * len(asked)), json_mode=True)
    except LLMError as e:  # its message names the endpoint and cause, never the key
        log.warning("LLM second opinion skipped, the LLM failed: %s", e)
        return out
    entries = parse_reply(raw, evidence)
    if entries is None:
        return out
    for n, (label, quote, passage) in entries.items():
        i = asked[n - 1]
        out[i] = _applied(out[i], label, quote, passage, supported_confidence)
    return out


def parse_reply(raw: str, evidence: dict[int, list[str]]) -> dict[int, tuple[Label, str, str]] | None:
    """Claim number → (label, the quote in the evidence's own words, the evidence text holding it) for
    every valid `supported`/`contradicted` entry of the reply; None (and a warning) when the reply as
    a whole is unusable. `evidence` maps each claim number sent to the texts sent with it."""
    try:
        reply = read_json(raw)
    except ValueError:
        log.warning("LLM second opinion ignored: the reply is not JSON (%d characters)", len(str(raw)))
        return None
    items = reply.get("verdicts") if isinstance(reply, dict) else None
    if not isinstance(items, list):
        log.warning("LLM second opinion ignored: the reply has no \"verdicts\" list")
        return None
    seen: dict[int, int] = {}
    valid: dict[int, tuple[Label, str, str]] = {}
    invalid = 0
    for item in items:
        entry = _entry(item, evidence)
        if entry is None:
            invalid += 1
            continue
        n, decided = entry
        seen[n] = seen.get(n, 0) + 1
        if decided is not None:
            valid[n] = decided
    duplicated = {n for n, count in seen.items() if count > 1}  # an id answered twice is ambiguous
    if invalid or duplicated:
        log.info("LLM second opinion: %d invalid entries ignored, %d claims answered twice ignored",
                 invalid, len(duplicated))
    return {n: v for n, v in valid.items() if n not in duplicated}


def _entry(item: Any, evidence: dict[int, list[str]]) -> tuple[int, tuple[Label, str, str] | None] | None:
    """(claim number, decision or None for `unknown`) of one reply entry, or None when it is invalid."""
    if not isinstance(item, dict):
        return None
    n, label, quote, reason = item.get("id"), item.get("label"), item.get("quote"), item.get("reason")
    if isinstance(n, str) and n.strip().isdigit():
        n = int(n.strip())
    if isinstance(n, bool) or not isinstance(n, int) or n not in evidence:
        return None
    if not isinstance(label, str) or label.strip().lower() not in _LABELS or not isinstance(reason, str):
        return None
    decided = _LABELS[label.strip().lower()]
    if decided is None:
        return n, None
    if not isinstance(quote, str):
        return None
    found = find_quote(quote, evidence[n])
    if found is None:
        return None
    return n, (decided, *found)


def find_quote(quote: str, texts: Sequence[str]) -> tuple[str, str] | None:
    """(the quote as the text words it, the text) for the first text holding `quote`, compared
    case- and whitespace-insensitively; None when no text holds it or it is too short to decide
    anything (fewer than two words and no digit)."""
    words = quote.strip().strip("\"'“”‘’«»`").rstrip(".,;:!?").split()
    if not words or (len(words) < 2 and not any(ch.isdigit() for ch in words[0])):
        return None
    pattern = re.compile(r"\s+".join(re.escape(w) for w in words), re.IGNORECASE)
    for text in texts:
        match = pattern.search(text)
        if match:
            return " ".join(match.group(0).split()), text
    return None


def _evidence(v: Verdict) -> list[str]:
    """The evidence texts a claim is judged against here: its aligned sentence and its best passage."""
    texts = []
    if v.sentence.strip():
        texts.append(_trim(v.sentence.strip(), MAX_SENTENCE_CHARS))
    if v.evidence is not None and v.evidence.checked_text.strip():
        passage = _trim(v.evidence.checked_text.strip(), MAX_PASSAGE_CHARS, around=v.sentence.strip())
        if passage not in texts:
            texts.append(passage)
    return texts


def _prompt(claims: Sequence[str], evidence: dict[int, list[str]]) -> str:
    blocks = []
    for n, claim in enumerate(claims, 1):
        lines = [f"Claim {n}: {_trim(' '.join(claim.split()), MAX_CLAIM_CHARS)}", f"Evidence for claim {n}:"]
        lines += [f"- {text}" for text in evidence[n]]
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)


def _trim(text: str, limit: int, around: str = "") -> str:
    """`text` cut to `limit` characters, centred on `around` when it holds it."""
    if len(text) <= limit:
        return text
    at = text.find(around) if around else -1
    start = 0 if at < 0 else max(0, min(at - (limit - len(around)) // 2, len(text) - limit))
    return ("…" if start else "") + text[start:start + limit].strip() + ("…" if start + limit < len(text) else "")


def _applied(v: Verdict, label: Label, quote: str, text: str, supported_confidence: float) -> Verdict:
    """`v` decided by the LLM: SUPPORTED, or CONTRADICTED quoting the source; its sentence becomes the
    evidence sentence holding the quote."""
    if v.label is not Label.UNCERTAIN:  # never reached from second_opinion; kept as the module's guarantee
        return v
    pattern = re.compile(r"\s+".join(re.escape(w) for w in quote.split()), re.IGNORECASE)
    sentence = v.sentence if pattern.search(v.sentence) else next(
        (s for s in markdown_sentences(text) if pattern.search(s)), v.sentence)
    if label is Label.SUPPORTED:
        return dataclasses.replace(v, label=Label.SUPPORTED, confidence=max(v.confidence, supported_confidence),
                                   method=METHOD, sentence=sentence, conflict="", unstated="", reason="")
    return dataclasses.replace(v, label=Label.CONTRADICTED, confidence=min(v.confidence, CONTRADICTED_CONFIDENCE),
                               method=METHOD, sentence=sentence, conflict=quote, unstated="",
                               reason=f"source says {quote} (LLM second opinion)")
