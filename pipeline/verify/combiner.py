"""The combiner: a logistic regression over pair-embedding and symbolic features, P(supported) per claim."""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from pipeline.verify.align import Alignment

COMBINER_PATH = Path(__file__).resolve().parent.parent / "models" / "combiner.json"


class Combiner:
    """A logistic regression over pair-embedding and symbolic features (weights from combiner.json)."""

    def __init__(self, spec: Mapping[str, Any]):
        self.spec = dict(spec)
        self.embedding = spec["embedding_features"]  # e.g. ["absdiff", "product"]
        self.symbolic = tuple(spec["symbolic_features"])
        self.mean = np.asarray(spec["mean"], dtype=np.float32)
        self.scale = np.asarray(spec["scale"], dtype=np.float32)
        self.weights = np.asarray(spec["weights"], dtype=np.float32)
        self.bias = float(spec["bias"])
        if not (len(self.mean) == len(self.scale) == len(self.weights)):
            raise ValueError("combiner: mean, scale and weights differ in length")

    def features(self, alignments: Sequence[Alignment]) -> np.ndarray:
        return feature_matrix(alignments, self.embedding, self.symbolic)

    def predict(self, alignments: Sequence[Alignment]) -> np.ndarray:
        if not alignments:
            return np.zeros(0, dtype=np.float32)
        x = (self.features(alignments) - self.mean) / self.scale
        return 1.0 / (1.0 + np.exp(-(x @ self.weights + self.bias)))


def feature_matrix(alignments: Sequence[Alignment], embedding: Sequence[str], symbolic: Sequence[str]) -> np.ndarray:
    """Rows of [embedding pair features..., symbolic features...] for the combiner."""
    rows = []
    for a in alignments:
        u, v = a.u, a.v
        parts = {"u": u, "v": v, "absdiff": np.abs(u - v), "product": u * v}
        emb = [parts[name] for name in embedding]
        sym = np.array([a.features.get(name, 0.0) for name in symbolic], dtype=np.float32)
        rows.append(np.concatenate([*emb, sym]).astype(np.float32) if emb else sym)
    return np.vstack(rows)


@functools.cache
def load_combiner(path: str = "") -> Combiner | None:
    """The shipped combiner, or None when it has not been trained yet (then a fixed rule is used)."""
    file = Path(path) if path else COMBINER_PATH
    if not file.is_file():
        return None
    try:
        return Combiner(json.loads(file.read_text()))
    except (KeyError, ValueError, TypeError) as exc:
        raise ValueError(f"combiner weights at {file} are invalid: {exc}") from exc


def _fallback_probability(a: Alignment) -> float:
    """Without trained weights: similarity, word coverage and conflicts in a fixed formula."""
    f = a.features
    z = 8 * (f.get("cos_best", 0) - 0.6) + 3 * (f.get("coverage", 0) - 0.7) - 1.5 * f.get("salient_absent", 0)
    z -= 3 * (f.get("num_conflict", 0) + f.get("ent_conflict", 0)) + 1.5 * f.get("negation_mismatch", 0)
    return 1 / (1 + math.exp(-z))


def probabilities(aligned: Sequence[Alignment]) -> np.ndarray:
    """P(supported) per alignment from the shipped combiner (or the fixed rule when none is shipped)."""
    combiner = load_combiner()
    if combiner is None:
        return np.array([_fallback_probability(a) for a in aligned])
    return combiner.predict(aligned)
