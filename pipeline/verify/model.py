"""The verifier model's part in a decision: its signals over a claim's aligned sentences, their
calibration, and the labels they lead to through the same rules as the combiner's."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from pipeline.text import words
from pipeline.types import Label
from pipeline.verify.align import Alignment
from pipeline.verify.candidates import content_words
from pipeline.verify.combiner import probabilities
from pipeline.verify.rules import (
    CONFLICT_MIN_SIMILARITY,
    PairScore,
    VerifyOptions,
    decide,
    decide_one,
)

MODEL_CANDIDATES = 3  # distinct aligned sentences/windows per claim the verifier model reads (best cosine first; `distinct`)
# Pairs per forward pass. An answer's dozen pairs differ in length, and a batch is padded to its
# longest: in batches of 4 (sorted by length) the same probabilities came ~25% sooner than in one
# batch of 12 (1 thread, 240 answer-check pairs; identical to 5e-7).
MODEL_BATCH = 4
RESTATED_EXTRA_WORDS = 4  # `distinct`: an earlier candidate with at most this many words around it is read once


def distinct(candidates: Sequence[tuple[str, int, float]], n: int) -> list[tuple[str, int]]:
    """The first n of a claim's aligned sentences/windows (best first) that restate none of those
    before them: a sentence an earlier window holds, or an earlier sentence again with a few words
    around it (a code fence, a closing bracket, a short heading), is the same evidence read twice.
    A window that adds a neighbouring sentence to an earlier one is new evidence."""
    chosen: list[tuple[str, int]] = []
    seen: list[tuple[str, int]] = []  # (" the words ", how many), so that containment is of whole words
    for text, ei, _ in candidates:
        ws = words(text)
        bare = f" {' '.join(ws)} "
        if any(bare in s or (s in bare and len(ws) - k <= RESTATED_EXTRA_WORDS) for s, k in seen):
            continue
        chosen.append((text, ei))
        seen.append((bare, len(ws)))
        if len(chosen) == n:
            break
    return chosen


def with_most_words(claim: str, candidates: Sequence[tuple[str, int, float]],
                    chosen: list[tuple[str, int]]) -> list[tuple[str, int]]:
    """`chosen`, and the candidate about the claim (cosine at least CONFLICT_MIN_SIMILARITY) that
    holds the most of the claim's content words, when that is more than every chosen one holds (of
    several, the best aligned): a sentence that names what the claim names ("a `commit-queue-failed` label is
    added") may rank below shorter ones that share its topic ("add `commit-queue` label")."""
    words = content_words(claim)
    if not words:
        return chosen
    def held(text: str) -> int:
        return len(words & content_words(text))
    about = [(text, ei) for text, ei, cos in candidates if cos >= CONFLICT_MIN_SIMILARITY]
    counts = [held(text) for text, _ in about]
    most = max((held(text) for text, _ in chosen), default=0)
    if not counts or max(counts) <= most:
        return chosen
    return [*chosen, about[counts.index(max(counts))]]


def model_signals(aligned: Sequence[Alignment], verifier: Any,
                  skip: Sequence[bool] = ()) -> list[tuple[float, str, int, float, str, int] | None]:
    """Per claim: (P(supports), its sentence, its evidence index, P(refutes), its sentence, its index),
    the maxima over the claim's top aligned sentences/windows, all scored in one batch; None without
    any, and for the claims `skip` marks (the model is not run for them)."""
    pairs, owner = [], []
    for i, a in enumerate(aligned):
        if i < len(skip) and skip[i]:
            continue
        for text, ei in with_most_words(a.claim, a.candidates, distinct(a.candidates, MODEL_CANDIDATES)):
            pairs.append((a.claim, text))
            owner.append((i, text, ei))
    probs = verifier.predict(pairs, batch_size=MODEL_BATCH) if pairs else np.zeros((0, 3))
    best: dict[int, list] = {}
    for (i, text, ei), (p_sup, p_ref, _) in zip(owner, probs, strict=True):
        row = best.setdefault(i, [-1.0, "", -1, -1.0, "", -1])
        if p_sup > row[0]:
            row[0:3] = [float(p_sup), text, ei]
        if p_ref > row[3]:
            row[3:6] = [float(p_ref), text, ei]
    return [tuple(best[i]) if i in best and a.sentence else None for i, a in enumerate(aligned)]


CALIBRATION_FEATURES = ("logit_supports", "logit_refutes", "cos_best", "coverage", "salient_frac_absent",
                        "salient_absent", "ent_absent", "num_absent", "ent_conflict", "num_conflict")


def calibration_features(a: Alignment, p_sup: float, p_ref: float) -> list[float]:
    """The inputs of the verifier's calibration (see `calibrated`), in CALIBRATION_FEATURES order."""
    def logit(p: float) -> float:
        p = min(max(p, 1e-4), 1 - 1e-4)
        return math.log(p / (1 - p))

    f = a.features
    return [logit(p_sup), logit(p_ref), *(float(f.get(name, 0.0)) for name in CALIBRATION_FEATURES[2:])]


def calibrated(verifier: Any, a: Alignment, p_sup: float, p_ref: float) -> float:
    """P(supported) from the verifier's calibration (a logistic regression fitted on the dev split by
    `pipeline.train_verifier --calibrate`, stored in its manifest), or P(supports) when it has none."""
    spec = (getattr(verifier, "manifest", None) or {}).get("calibration")
    if not spec:
        return p_sup
    z = float(np.dot(spec["weights"], calibration_features(a, p_sup, p_ref)) + spec["bias"])
    return 1.0 / (1.0 + math.exp(-max(-30.0, min(30.0, z))))


def decide_with_model(aligned: Sequence[Alignment], verifier: Any, options: VerifyOptions,
                      method: str = "default") -> list[PairScore]:
    """Labels from the verifier model: the mean of its calibrated P(supported) (`calibrated`, over the
    claim's top aligned sentences and windows, `model_signals`) and the combiner's goes through the
    same rules as the combiner's alone (`decide`: conflicts, flips, restatements, numbers the
    evidence nowhere states). (On the dev split the mean beat the combiner on all five open sets and
    passed fewer perturbed claims than the model alone, 0.12 against 0.19.) A claim left
    UNSUPPORTED that the model reads as refuted (P(refutes) ≥ verifier_refutes and above
    P(supports)) by evidence about it (cosine ≥ CONFLICT_MIN_SIMILARITY) is CONTRADICTED, with the
    refuting sentence as its evidence.

    The model only reads the claims whose label it can change (`settled`): a claim that restates
    its evidence, or that a conflicting value, name or flip contradicts, keeps the combiner's
    probability as its confidence. (An extractive answer is all restatements.)"""
    combined = probabilities(aligned)  # the combiner weighs absent names and numbers, which the model underrates
    done = [settled(a, options) for a in aligned]
    signals = model_signals(aligned, verifier, skip=done)
    probs = [(calibrated(verifier, a, s[0], s[3]) + float(c)) / 2 if s else float(c) if d else 0.0
             for a, s, c, d in zip(aligned, signals, combined, done, strict=True)]
    out = decide(aligned, probs, options, method)
    refutes = options.verifier_refutes
    for i, (verdict, s) in enumerate(zip(out, signals, strict=True)):
        about = aligned[i].features.get("cos_best", 0.0) >= CONFLICT_MIN_SIMILARITY  # the model reads unrelated text as refuting
        if s is not None and verdict.label is Label.UNSUPPORTED and about and s[3] >= refutes and s[3] > s[0]:
            out[i] = PairScore(Label.CONTRADICTED, verdict.confidence, "", s[4], s[5], method)
    return out


def settled(a: Alignment, options: VerifyOptions) -> bool:
    """Whether the rules give `a` the same label whatever P(supported) is, and one the model's
    P(refutes) cannot turn into CONTRADICTED (that is, not UNSUPPORTED). The rule that applies never
    depends on P, and within a rule the label only rises with it, so the same label at P = 0 and
    P = 1 is the label at every P."""
    low, high = decide_one(a, 0.0, options).label, decide_one(a, 1.0, options).label
    return low is high and low is not Label.UNSUPPORTED
