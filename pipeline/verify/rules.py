"""The decision rules, in order: from one claim's alignment and P(supported) to its label.

Every rule reads plain values (an `Alignment`'s features, conflict and sentence, a probability and
the thresholds of `VerifyOptions`), so the table test in tests/test_verify_rules.py drives them with
no model loaded.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pipeline.text import is_negation, terms
from pipeline.types import Label
from pipeline.verify.align import DOWN_WORDS, UP_WORDS, Alignment, direction, negated
from pipeline.verify.candidates import content_words

# A conflicting value only counts when the aligned sentence is about the claim (cosine at least this):
# a different number/date of the same kind → CONTRADICTED; a different name of the same type →
# not SUPPORTED, and CONTRADICTED once the sentence is a near-restatement. (Measured on the open sets:
# number conflicts at 0.5 flag 2× more false claims than true ones; entity conflicts are weaker.)
CONFLICT_MIN_SIMILARITY = 0.5
ENTITY_CONTRADICTS_SIMILARITY = 0.7
CONTRADICTED_CONFIDENCE = 0.15  # upper bound on the confidence of a CONTRADICTED verdict
# A claim that restates an evidence sentence (every content word present, aligned cosine at least
# this, no conflicting value, same negation and direction) is SUPPORTED whatever the combiner says:
# the combiner was trained on dataset claims, which are never copies of their evidence, and scores
# an exact quote (what an extractive answer is) as unsupported.
# (0.75: every content word must be there, so a swapped value or name, which is absent, never passes
# by this rule; on perturbed/open.jsonl it fires for 1.5% of true claims and 0.3% of swapped ones.)
RESTATEMENT_SIMILARITY = 0.75
RESTATEMENT_CONFIDENCE = 0.9
# A cited claim whose every content word (at least this many) its aligned sentence (and the next best
# aligned sentence or window) holds, with no conflict, flip, unstated number or added content found,
# restates that sentence in other order or with a pronoun for its subject ("it isn't necessary" for
# "the `egg` fragment is not necessary"), which lowers the cosine but changes nothing it says:
# SUPPORTED from this cosine up. (Cited only: on the open claim sets, whose claims are never cited,
# nothing changes.)
WORDED_MIN_WORDS = 4
WORDED_MIN_SIMILARITY = 0.5
WORDED_CANDIDATES = 2  # the best-aligned sentences and windows whose words count (the aligned one among them)
# A claim whose every name and value (two at least) one code example of its evidence holds ("the
# response shows its State as Updating" beside `"State": "Updating"`), with nothing else added, is
# SUPPORTED: the combiner reads a JSON line as unlike any English sentence.
CODE_BACKED_CONFIDENCE = 0.7
# A near-restatement (at least this share of the claim's content words in the evidence, aligned cosine
# at least this) whose negation or direction is the opposite of the aligned sentence's ("never" /
# "was", "increases" / "reduces") is CONTRADICTED. On perturbed/open.jsonl it fires for 1 of 331 true claims.
FLIP_MIN_COVERAGE = 0.8
FLIP_MIN_SIMILARITY = 0.7
# A claim with a name nowhere in the evidence, where the aligned sentence has a name the claim lacks,
# is at most UNCERTAIN when it otherwise restates that sentence (at least this share of its content
# words in the evidence). On perturbed/open.jsonl: no true claim lost, swaps passed 0.104 → 0.099.
NAME_SWAP_MIN_COVERAGE = 0.7


@dataclass(frozen=True)
class VerifyOptions:
    """What verification reads, each field the setting of the same name (built by `bot.app.stage_options`)."""

    supported_threshold: float
    uncertain_threshold: float
    numbers_must_appear: bool
    names_must_appear: bool
    details_must_appear: bool
    cosine_supported: float
    cosine_uncertain: float
    verifier_in_default: bool
    verifier_refutes: float
    nli_model: str


@dataclass(frozen=True)
class PairScore:
    """The decision on one claim against a list of evidence texts (see `score_pairs`)."""

    label: Label
    confidence: float
    conflict: str = ""
    sentence: str = ""
    evidence_index: int = -1
    method: str = "default"
    unstated: str = ""  # what the claim says that the evidence never does ("2001", "WMO"), for a flagged claim
    reason: str = ""  # why a flagged claim is flagged, as its footnote says it ("source says 2018")


def is_restatement(a: Alignment) -> bool:
    """The aligned evidence says what the claim says, word for word, every number of it included
    (see RESTATEMENT_SIMILARITY)."""
    f = a.features
    return (not a.conflict and not a.unconfirmed and f.get("cos_best", 0.0) >= RESTATEMENT_SIMILARITY
            and f.get("coverage", 0.0) >= 0.999
            and not f.get("negation_mismatch") and not f.get("direction_mismatch"))


def is_reworded(a: Alignment) -> bool:
    """The aligned sentence (with the next best-aligned sentence or window) holds every content word
    of a cited claim (WORDED_MIN_WORDS at least), nothing contradicts it and the claim adds nothing
    (see WORDED_MIN_SIMILARITY)."""
    f = a.features
    if not a.cited or f.get("cos_best", 0.0) < WORDED_MIN_SIMILARITY or a.conflict or a.extra or a.unconfirmed \
            or a.unnamed or f.get("salient_absent") or f.get("negation_mismatch") or f.get("direction_mismatch"):
        return False
    words = {w for w in content_words(a.claim) if not is_negation(w)}  # negation is compared on its own
    said = content_words(" ".join([a.sentence, *(text for text, _, _ in a.candidates[:WORDED_CANDIDATES])]))
    return len(words) >= WORDED_MIN_WORDS and words <= said


def _capped(a: Alignment, options: VerifyOptions) -> bool:
    """Whether the claim is at most UNCERTAIN: a number of it is nowhere in the evidence
    (options.numbers_must_appear), a name of it is nowhere in the evidence (options.names_must_appear,
    off by default), or it restates the aligned sentence closely but with a name that is nowhere in
    the evidence where the sentence has another (a swapped name the spaCy model did not type).
    Absence lowers support; only a conflicting value contradicts."""
    if a.unconfirmed and options.numbers_must_appear:
        return True
    if a.features.get("salient_absent") and options.names_must_appear:
        return True
    return bool(a.features.get("salient_conflict")) and a.features.get("coverage", 0.0) >= NAME_SWAP_MIN_COVERAGE


def is_flipped(a: Alignment) -> bool:
    """The aligned evidence says what the claim says, but negated or in the opposite direction."""
    f = a.features
    return (bool(f.get("negation_mismatch") or f.get("direction_mismatch"))
            and f.get("coverage", 0.0) >= FLIP_MIN_COVERAGE and f.get("cos_best", 0.0) >= FLIP_MIN_SIMILARITY)


def flip_quote(a: Alignment) -> str:
    """The aligned sentence's own word for what the claim flips: its direction verb or its negation ('' if none)."""
    words = terms(a.sentence)
    if a.features.get("direction_mismatch"):
        stems = UP_WORDS if direction(a.sentence) > 0 else DOWN_WORDS
        found = next((w for w in words if any(w.startswith(s.strip()) for s in stems)), "")
        if found:
            return found
    if negated(a.sentence):
        return next((w for w in words if is_negation(w)), "")
    return ""


def decide(aligned: Sequence[Alignment], probs: Sequence[float], options: VerifyOptions,
           method: str = "default") -> list[PairScore]:
    """One label per claim from its alignment and P(supported): `decide_one` for each."""
    return [decide_one(a, float(p), options, method) for a, p in zip(aligned, probs, strict=True)]


def _quote(sentence: str) -> str:
    """A source sentence as a footnote quotes it: whole up to 160 characters, else cut with "..."."""
    return sentence if len(sentence) <= 160 else sentence[:157] + "..."


def decide_one(a: Alignment, p: float, options: VerifyOptions, method: str = "default") -> PairScore:
    """The rules, in order; the first that applies decides.

    1. No evidence sentence at all → UNSUPPORTED.
    2. A name no document mentions, where the aligned evidence (or the sentence the claim restates)
       has another name in its place → CONTRADICTED, quoting the evidence's name and its sentence.
    3. A name no document mentions → UNSUPPORTED ("no document mentions `url_prefix`").
    4. A value (number, date, code) of the claim where the aligned evidence about it has another of
       the same kind → CONTRADICTED ("source says 2018").
    5. A name the evidence lacks where the aligned sentence has another between the same words →
       CONTRADICTED ("source says Google Meet").
    6. A predicate the evidence negates or reverses about the same subject → CONTRADICTED, quoting
       the evidence's words; so is a near-restatement whose negation or direction is opposite.
    7. A restatement of an evidence sentence → SUPPORTED; so is a cited claim whose every content word
       its aligned sentence holds, in other order or with a pronoun for its subject (`is_reworded`).
    7b. Every name and value of the claim in one code example of its evidence, nothing added →
       SUPPORTED (checked after 8 and 8b).
    8. A name of the same type that differs, in a less similar sentence → UNCERTAIN at most.
    8b. In a claim the answer attributes to a source: a negation or direction that differs from the
       sentence the claim is about ("slower than" / "more performant than"), where the claim also says
       more than that sentence (too little of it restated to call it a flip) → UNCERTAIN at most.
    9. A number (or, with names_must_appear, a name) no evidence states → UNCERTAIN at most.
    10. Content the claim adds that no evidence passage states, or a clause joined to it that no one
       evidence sentence states ("…, and it prints a warning") → UNCERTAIN at most.
    11. Otherwise P(supported) against supported_threshold and uncertain_threshold.
    """
    middle = (options.supported_threshold + options.uncertain_threshold) / 2
    contradicted = min(p, CONTRADICTED_CONFIDENCE)

    def verdict(label: Label, confidence: float, conflict: str = "", reason: str = "", unstated: str = "",
                at: tuple[str, int] = ("", -1)) -> PairScore:
        sentence, index = at if at[0] else (a.sentence, a.evidence_index)  # `at`: the sentence to quote
        return PairScore(label, confidence, conflict, sentence, index, method, unstated, reason)

    def capped(confidence: float, reason: str, unstated: str = "") -> PairScore:
        """UNCERTAIN at most: the score held to the middle of the thresholds, UNSUPPORTED below them."""
        confidence = min(confidence, middle)
        label = Label.UNCERTAIN if confidence >= options.uncertain_threshold else Label.UNSUPPORTED
        return verdict(label, confidence, reason=reason, unstated=unstated)

    if not a.sentence:
        if a.invented:
            return verdict(Label.UNSUPPORTED, 0.0, reason=f"no document mentions {a.invented}", unstated=a.invented)
        return verdict(Label.UNSUPPORTED, 0.0, reason="no evidence found")
    similarity = a.features.get("cos_best", 0.0)
    about = similarity >= CONFLICT_MIN_SIMILARITY
    if a.invented and a.name_rival and about and a.name == a.invented:
        return verdict(Label.CONTRADICTED, contradicted, a.name_rival, f"source says {a.name_rival}", at=a.rival_at)
    if a.invented:
        return verdict(Label.UNSUPPORTED, min(p, options.uncertain_threshold / 2),
                       reason=f"no document mentions {a.invented}", unstated=a.invented)
    if a.conflict and about and (a.conflict_kind == "number" or similarity >= ENTITY_CONTRADICTS_SIMILARITY):
        return verdict(Label.CONTRADICTED, contradicted, a.conflict, f"source says {a.conflict}")
    if a.name_rival and about:
        return verdict(Label.CONTRADICTED, contradicted, a.name_rival, f"source says {a.name_rival}", at=a.rival_at)
    if a.flip and about:
        return verdict(Label.CONTRADICTED, contradicted, a.flip, f"source says {a.flip}")
    if is_flipped(a):  # the source's direction word ("reduces"), or its negated sentence
        quote = flip_quote(a) if a.features.get("direction_mismatch") else ""
        quote = quote or _quote(a.sentence)
        return verdict(Label.CONTRADICTED, contradicted, quote, f"source says {quote}")
    if is_restatement(a):
        return verdict(Label.SUPPORTED, max(p, RESTATEMENT_CONFIDENCE))
    if is_reworded(a):
        return verdict(Label.SUPPORTED, max(p, RESTATEMENT_CONFIDENCE))
    unstated = a.unconfirmed or a.unnamed
    if a.conflict and about:  # a differing name in a less similar sentence
        return capped(p, "the sources only partly back this", unstated)
    if a.cited and (a.features.get("negation_mismatch") or a.features.get("direction_mismatch")) \
            and similarity >= FLIP_MIN_SIMILARITY:
        return capped(p, f"the source says otherwise: {_quote(a.sentence)}", unstated)
    if a.code_backed and not a.extra:  # a code example's names and values, in the answer's words
        return verdict(Label.SUPPORTED, max(p, CODE_BACKED_CONFIDENCE))
    if _capped(a, options):
        return capped(p, f"the sources never state {unstated}" if unstated else "the sources only partly back this",
                      unstated)
    if a.extra and options.details_must_appear:
        return capped(p, f"the documents don't say {a.extra}", a.extra)
    if p >= options.supported_threshold:
        return verdict(Label.SUPPORTED, p)
    label = Label.UNCERTAIN if p >= options.uncertain_threshold else Label.UNSUPPORTED
    return verdict(label, p, reason="the sources only partly back this", unstated=unstated)
