"""Metrics: pure functions from rankings or labels to figures, one definition of each, shared by the
evaluation runners and both trainers (ranking quality, balanced accuracy, AUC, confusion, percentiles)."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence

import numpy as np

from pipeline.types import Label

# ---------------------------------------------------------------------------------------- ranking


def _relevant(qrels: Mapping[str, int]) -> dict[str, int]:
    return {d: int(g) for d, g in qrels.items() if int(g) > 0}


def ndcg_at_k(ranked: Sequence[str], qrels: Mapping[str, int], k: int = 10) -> float:
    """nDCG@k with linear gains (the trec_eval/BEIR definition); 0.0 when nothing is relevant."""
    rel = _relevant(qrels)
    if not rel:
        return 0.0
    dcg = sum(rel.get(d, 0) / math.log2(i + 2) for i, d in enumerate(ranked[:k]))
    ideal = sorted(rel.values(), reverse=True)[:k]
    idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
    return dcg / idcg


def recall_at_k(ranked: Sequence[str], qrels: Mapping[str, int], k: int) -> float:
    """Share of the relevant documents found in the top k."""
    rel = _relevant(qrels)
    if not rel:
        return 0.0
    return len(rel.keys() & set(ranked[:k])) / len(rel)


def mrr_at_k(ranked: Sequence[str], qrels: Mapping[str, int], k: int = 10) -> float:
    """1 / rank of the first relevant document in the top k, 0.0 if none."""
    rel = _relevant(qrels)
    for i, d in enumerate(ranked[:k]):
        if d in rel:
            return 1.0 / (i + 1)
    return 0.0


def is_judged(qrels: Mapping[str, int]) -> bool:
    """Whether a query has at least one relevant document."""
    return bool(_relevant(qrels))


def percentile(values: Sequence[float], q: float) -> float:
    """The q-th percentile (0..100, linear interpolation); 0.0 for no values."""
    return float(np.percentile(np.asarray(values, dtype=float), q)) if len(values) else 0.0


def first_occurrence(ids: Iterable[str]) -> list[str]:
    """`ids` without repeats, in first-occurrence order (chunk hits → document ranking)."""
    return list(dict.fromkeys(ids))


# ------------------------------------------------------------------------------ classification


def binary_metrics(gold: Sequence[bool], predicted: Sequence[bool]) -> dict[str, float]:
    """Balanced accuracy, precision and recall of the positive class (here: SUPPORTED).

    A class absent from `gold` is left out of the balanced accuracy; precision with no
    positive prediction is 0.0."""
    if len(gold) != len(predicted):
        raise ValueError(f"{len(gold)} gold labels but {len(predicted)} predictions")
    tp = sum(g and p for g, p in zip(gold, predicted, strict=True))
    fp = sum(not g and p for g, p in zip(gold, predicted, strict=True))
    fn = sum(g and not p for g, p in zip(gold, predicted, strict=True))
    tn = sum(not g and not p for g, p in zip(gold, predicted, strict=True))
    rates = [tp / (tp + fn)] if tp + fn else []
    rates += [tn / (tn + fp)] if tn + fp else []
    return {
        "balanced_accuracy": sum(rates) / len(rates) if rates else 0.0,
        "precision": tp / (tp + fp) if tp + fp else 0.0,
        "recall": tp / (tp + fn) if tp + fn else 0.0,
    }


def auc(y: Sequence[int] | np.ndarray, scores: Sequence[float] | np.ndarray) -> float:
    """ROC AUC of `scores` for the positive class of `y` (0/1); NaN when `y` has one class only."""
    from sklearn.metrics import roc_auc_score

    y = np.asarray(y)
    return float(roc_auc_score(y, scores)) if 0 < y.sum() < len(y) else float("nan")


def binary_figures(y: Sequence[int] | np.ndarray, predicted: Sequence[bool] | np.ndarray,
                   scores: Sequence[float] | np.ndarray) -> dict[str, float]:
    """The trainers' report of supported (1) vs not (0), rounded to 3 places: `n`, the balanced
    accuracy and SUPPORTED precision of `predicted` (`binary_metrics`), the AUC of `scores`, and the
    share labelled SUPPORTED of true claims (`true_kept_supported`) and of false ones
    (`false_labelled_supported`). A figure with nothing to measure it on is NaN."""
    y, predicted = np.asarray(y).astype(int), np.asarray(predicted).astype(bool)
    m = binary_metrics([bool(v) for v in y == 1], [bool(v) for v in predicted])
    nan = float("nan")
    return {
        "n": int(len(y)),
        "balanced_accuracy": round(m["balanced_accuracy"], 3) if 0 < y.sum() < len(y) else nan,
        "precision_supported": round(m["precision"], 3) if predicted.any() else nan,
        "auc": round(auc(y, np.asarray(scores)), 3),
        "true_kept_supported": round(m["recall"], 3) if (y == 1).any() else nan,
        "false_labelled_supported": round(float(predicted[y == 0].mean()), 3) if (y == 0).any() else nan,
    }


def confusion(gold: Sequence[str], predicted: Sequence[str]) -> dict[str, dict[str, int]]:
    """{gold label: {predicted label: count}} with every predicted Label present (zeros kept)."""
    out: dict[str, dict[str, int]] = {}
    for g, p in zip(gold, predicted, strict=True):
        out.setdefault(g, {label.value: 0 for label in Label})
        out[g][p] = out[g].get(p, 0) + 1
    return dict(sorted(out.items()))


def flag_recall(gold: Sequence[str], predicted: Sequence[str]) -> float | None:
    """Share of gold-refuted claims that were flagged (any label but SUPPORTED); None without any."""
    flags = [p != Label.SUPPORTED.value for g, p in zip(gold, predicted, strict=True) if g == "refuted"]
    return sum(flags) / len(flags) if flags else None
