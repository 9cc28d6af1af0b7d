"""Verdicts: decide, claim by claim, whether the gathered evidence supports what the answer says.

Methods (the `verify_method` setting; `method` of `verify_claims`):
- `cosine`: the published baseline. Max cosine (all-MiniLM-L6-v2) of the claim against the
  evidence passages; ≥ `cosine_supported` SUPPORTED, ≥ `cosine_uncertain` UNCERTAIN, else UNSUPPORTED.
- `combiner`: align the claim with evidence sentences and two-sentence windows, check what it
  asserts against them (numbers, dates, percentages, named entities, negation, direction), and
  combine the signals with the shipped combiner (pipeline/models/combiner.json, a logistic
  regression trained by `lab.train_combiner` on the open data) into P(supported). A value
  of the same kind that differs where the claim's value should be makes the claim CONTRADICTED
  and the verdict quotes the evidence's value.
- `model`: the same alignment and rules, but P(supported) comes from ravbot's own cross-encoder
  (`pipeline.verifier_model`, trained by `lab.train_verifier`), which reads the claim with each
  of its top aligned sentences/windows, all in one batch per call, calibrated on the dev split.
- `default`: `model` when a trained verifier is present (the `verifier` given: the `verifier_model`
  setting, else the shipped pipeline/models/verifier) and `verifier_in_default` holds (it does by default: averaged
  with the combiner, the model is ahead of the combiner alone on held-out claims of all four claim
  sets, docs/verifier.md); otherwise `combiner`.
- `llm`: the configured LLM reads claim and numbered evidence sentences and answers in validated
  JSON; on any failure or invalid answer the `default` verdict stands.
- `nli`: a sentence-transformers NLI CrossEncoder at `nli_model` scores the aligned sentences.

`verify_claims` works on pipeline `Claim`/`Evidence` objects (`lab.scoring.score_pairs` is the same
decision on plain strings, for evaluation). Everything is embedded once per call, in one batch.

The package: `align` (claim ↔ evidence sentence, symbolic signals), `rules` (the decision rules, in
order, and `VerifyOptions`, the settings they read), `combiner` and `model` (P(supported)), and this
module (the methods and entry points).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from pipeline.text import markdown_sentences
from pipeline.types import Claim, Evidence, Label, Verdict
from pipeline.verifier_model import TrainedVerifier
from pipeline.verify.align import (
    SYMBOLIC_FEATURES,
    Alignment,
    acronyms,
    analyse,
    content_words,
    name_present,
)
from pipeline.verify.combiner import (
    COMBINER_PATH,
    Combiner,
    load_combiner,
    probabilities,
)
from pipeline.verify.model import (
    CALIBRATION_FEATURES,
    MODEL_CANDIDATES,
    calibrated,
    calibration_features,
    decide_with_model,
    model_signals,
)
from pipeline.verify.rules import (
    CONFLICT_MIN_SIMILARITY,
    CONTRADICTED_CONFIDENCE,
    RESTATEMENT_CONFIDENCE,
    RESTATEMENT_SIMILARITY,
    PairScore,
    VerifyOptions,
    decide,
    is_flipped,
    is_restatement,
)

__all__ = [
    "CALIBRATION_FEATURES", "COMBINER_PATH", "CONFLICT_MIN_SIMILARITY", "CONTRADICTED_CONFIDENCE", "METHODS",
    "MODEL_CANDIDATES", "RESTATEMENT_CONFIDENCE", "RESTATEMENT_SIMILARITY", "SYMBOLIC_FEATURES",
    "Alignment", "Combiner", "PairScore", "VerifyOptions", "acronyms", "analyse", "content_words",
    "name_present", "calibrated", "calibration_features", "decide", "decide_with_model",
    "is_flipped", "is_restatement", "load_combiner", "model_signals", "probabilities",
    "verify_claims",
]

METHODS = ("default", "cosine", "combiner", "model", "llm", "nli")


# --------------------------------------------------------------------------- public entry points


def verify_claims(
    claims: Sequence[Claim],
    evidence: Sequence[Sequence[Evidence]],
    *,
    method: str,
    embedder: Any,
    options: VerifyOptions,
    verifier: TrainedVerifier | None,
    llm: Any = None,
    chunk_vectors: Mapping[str, np.ndarray] | None = None,
    invented: Sequence[Sequence[str]] | None = None,
    given: str = "",
    cited: Sequence[bool] | None = None,
    cited_passages: Sequence[int] | None = None,
) -> list[Verdict]:
    """One Verdict per claim, judged against that claim's evidence list.

    `verifier` is the trained verifier model that `default` and `model` use (None: there is none,
    so `default` is the combiner and `model` refuses). `invented` lists, per claim, its names that
    no document of the knowledge base mentions (the caller looks them up: `Store.mentioned`);
    `given` is the question, whose words an answer may repeat without stating anything new; `cited`
    says, per claim, whether the answer cites a source for it (only a cited claim is held to its
    sources' wording: see `align.analyse`); `cited_passages`, how many of its evidence passages, from the
    first, are the chunks it cites (None: not known).

    `chunk_vectors` (chunk_id → stored, normalised embedding) lets the `cosine` method reuse
    knowledge-base vectors instead of re-embedding chunks; evidence sentences are embedded here.
    """
    if len(claims) != len(evidence):
        raise ValueError(f"got {len(claims)} claims but {len(evidence)} evidence lists")
    texts = [[e.checked_text for e in ev] for ev in evidence]
    scores = _score(
        [c.text for c in claims], texts, method, embedder, options, verifier, llm,
        entities=[c.entities for c in claims],
        vectors=[[(chunk_vectors or {}).get(e.chunk_id) if e.chunk_id else None for e in ev] for ev in evidence],
        invented=invented, given=given, cited=cited, cited_passages=cited_passages,
    )
    verdicts = []
    for claim, ev, s in zip(claims, evidence, scores, strict=True):
        best = ev[s.evidence_index] if 0 <= s.evidence_index < len(ev) else None
        origins = tuple(dict.fromkeys(e.origin for e in ev))
        verdicts.append(Verdict(claim, s.label, s.confidence, s.method, best, s.sentence, s.conflict, origins, s.unstated,
                                s.reason if s.label.flagged else ""))
    return verdicts


def _score(claims, evidences, method, embedder, options: VerifyOptions, verifier: TrainedVerifier | None, llm,
           entities=None, vectors=None, invented=None, cited=None, given="", cited_passages=None) -> list[PairScore]:
    if method not in METHODS:
        raise ValueError(f"unknown verify method {method!r}; expected one of {', '.join(METHODS)}")
    if method == "cosine":
        return _cosine(claims, evidences, embedder, options, vectors)
    aligned = analyse(claims, evidences, embedder, entities=entities, invented=invented, given=given, cited=cited,
                      cited_passages=cited_passages)
    # `default` uses the trained verifier when one is present and verifier_in_default holds
    # (decided on held-out figures, docs/verifier.md); `verify_method = "model"` uses it regardless.
    wants_model = method == "model" or (method != "combiner" and options.verifier_in_default)
    model = _loaded(verifier, required=method == "model") if wants_model else None
    if model is None:
        default = decide(aligned, probabilities(aligned), options, "combiner" if method == "combiner" else "default")
    else:
        default = decide_with_model(aligned, model, options, "model" if method == "model" else "default")
    if method in ("combiner", "model"):
        return default
    if method == "llm" and llm is not None:
        return [_llm_verdict(a, evidences[i], d, llm) for i, (a, d) in enumerate(zip(aligned, default, strict=True))]
    if method == "nli":
        return _nli(aligned, evidences, default, options)
    return default


def _loaded(verifier: TrainedVerifier | None, required: bool):
    """The loaded verifier model, or None when there is none (ValueError when `required`)."""
    model = verifier.load() if verifier is not None else None
    if model is None and required:
        raise ValueError("verify method 'model' needs a trained verifier: run `ravbot train-verifier` or set verifier_model")
    return model


# --------------------------------------------------------------------------- cosine baseline


def _cosine(claims, evidences, embedder, options: VerifyOptions, vectors=None) -> list[PairScore]:
    unique = list(dict.fromkeys([*claims, *(t for ev in evidences for t in ev)]))
    table = dict(zip(unique, embedder.encode(unique), strict=True)) if unique else {}
    out = []
    for i, (claim, ev) in enumerate(zip(claims, evidences, strict=True)):
        if not ev:
            out.append(PairScore(Label.UNSUPPORTED, 0.0, method="cosine"))
            continue
        given = vectors[i] if vectors else [None] * len(ev)
        sims = [float(table[claim] @ (g if g is not None else table[t])) for t, g in zip(ev, given, strict=True)]
        j = int(np.argmax(sims))
        best = sims[j]
        label = (
            Label.SUPPORTED if best >= options.cosine_supported
            else Label.UNCERTAIN if best >= options.cosine_uncertain
            else Label.UNSUPPORTED
        )
        out.append(PairScore(label, float(min(1.0, max(0.0, best))), "", ev[j], j, "cosine"))
    return out



# --------------------------------------------------------------------------- llm


_LLM_SYSTEM = (
    "You check one factual claim against numbered evidence sentences. Answer only with JSON: "
    '{"label": "supported" | "contradicted" | "unknown", "evidence_id": <number of the sentence that decides, or 0>, '
    '"reason": "<one short sentence>"}. "supported" only if the evidence states the claim, with the same numbers, '
    'dates and names; "contradicted" if the evidence states something incompatible; otherwise "unknown".'
)
_LLM_LABELS = {
    "supported": Label.SUPPORTED, "supports": Label.SUPPORTED, "contradicted": Label.CONTRADICTED,
    "refuted": Label.CONTRADICTED, "contradicts": Label.CONTRADICTED, "unknown": Label.UNSUPPORTED,
    "unsupported": Label.UNSUPPORTED, "not enough info": Label.UNSUPPORTED, "uncertain": Label.UNCERTAIN,
}


def _llm_verdict(a: Alignment, evidence: Sequence[str], fallback: PairScore, llm: Any) -> PairScore:
    from pipeline.llm import LLMError, read_json

    sentences = [(s, ei) for ei, text in enumerate(evidence) for s in (markdown_sentences(text) or [text])][:40]
    if not sentences:
        return fallback
    listing = "\n".join(f"[{i}] {s}" for i, (s, _) in enumerate(sentences, 1))
    user = f"Claim: {a.claim}\n\nEvidence:\n{listing}"
    try:
        raw = llm.complete(_LLM_SYSTEM, user, max_tokens=200, json_mode=True)
        reply = read_json(raw)
        label = _LLM_LABELS[str(reply["label"]).strip().lower()]
        eid = int(reply.get("evidence_id") or 0)
    except (LLMError, ValueError, KeyError, TypeError, AttributeError):
        return fallback
    if not 0 <= eid <= len(sentences):
        return fallback
    sentence, ei = sentences[eid - 1] if eid else (fallback.sentence, fallback.evidence_index)
    confidence = {Label.SUPPORTED: 0.9, Label.UNCERTAIN: 0.4, Label.UNSUPPORTED: 0.2, Label.CONTRADICTED: 0.05}[label]
    conflict = (a.conflict or fallback.conflict) if label is Label.CONTRADICTED else ""
    return PairScore(label, confidence, conflict, sentence, ei, "llm")


# --------------------------------------------------------------------------- nli


@functools.cache
def load_nli(path: str):
    """A sentence-transformers CrossEncoder for NLI from a local path (no hub downloads)."""
    if not path:
        raise ValueError("verify method 'nli' needs settings.nli_model: a local path to a CrossEncoder NLI model")
    if not Path(path).expanduser().exists():
        raise ValueError(f"nli_model {path!r} does not exist (a local directory of a CrossEncoder is expected)")
    try:
        from sentence_transformers import CrossEncoder

        model = CrossEncoder(str(Path(path).expanduser()), device="cpu", local_files_only=True)
    except Exception as exc:  # noqa: BLE001 - any loading failure is reported with the path
        raise ValueError(f"nli_model {path!r} could not be loaded as a CrossEncoder: {exc}") from exc
    labels = {int(k): str(v).lower() for k, v in getattr(model.config, "id2label", {}).items()}
    return model, labels


def _nli(aligned: Sequence[Alignment], evidences, default: Sequence[PairScore], options: VerifyOptions) -> list[PairScore]:
    model, labels = load_nli(options.nli_model)
    index = {name: i for i, name in labels.items()}
    ent = next((i for n, i in index.items() if n.startswith("entail")), 1)
    con = next((i for n, i in index.items() if n.startswith("contra")), 0)
    pairs = [(a.sentence, a.claim) for a in aligned if a.sentence]
    logits = np.asarray(model.predict(pairs, convert_to_numpy=True)) if pairs else np.zeros((0, 3))
    out, k = [], 0
    for a, d in zip(aligned, default, strict=True):
        if not a.sentence:
            out.append(d)
            continue
        z = logits[k] - logits[k].max()
        k += 1
        probs = np.exp(z) / np.exp(z).sum()
        p_ent, p_con = float(probs[ent]), float(probs[con])
        if p_con > 0.5 or (a.conflict and p_ent < options.supported_threshold):
            label, conflict = Label.CONTRADICTED, a.conflict
        elif p_ent >= options.supported_threshold:
            label, conflict = Label.SUPPORTED, ""
        elif p_ent >= options.uncertain_threshold:
            label, conflict = Label.UNCERTAIN, ""
        else:
            label, conflict = Label.UNSUPPORTED, ""
        out.append(PairScore(label, p_ent, conflict, a.sentence, a.evidence_index, "nli"))
    return out
