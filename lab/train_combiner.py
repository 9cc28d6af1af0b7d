"""Train the `default` verifier's combiner (pipeline/models/combiner.json) on the open data, reproducibly.

`python -m lab.train_combiner [--data DIR] [--out FILE] [--seed N]` reads claim–evidence
pairs from the open sets in ../shared/data (SciFact train rationales, Climate-FEVER evidence,
HealthVer dev, COVID-Fact, perturbed/open.jsonl; never the holdout), aligns and checks each
pair exactly as `pipeline.verify` does, and fits a logistic regression for P(supported) over
the cosine and symbolic features of the claim and its aligned evidence (see EMBEDDING_FEATURES).
Besides the open sets it trains on its own swaps (`make_swaps`: one number or entity changed in a
supported claim of the four claim sets). It
reports leave-one-dataset-out figures for `cosine` and `default` side by side and writes the
weights with a manifest (data files and sha256, seed, sizes, figures).
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import json
import random
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from lab.datasets import read_jsonl
from lab.metrics import binary_figures as figures
from lab.scoring import score_pairs
from pipeline import numbers, verify
from pipeline.text import NAME_LABELS
from pipeline.types import Label
from pipeline.verify.combiner import feature_matrix

DEFAULT_DATA = Path(__file__).resolve().parent.parent.parent / "shared" / "data"
# Pair-embedding features ("u", "v", "absdiff", "product") lowered the leave-one-dataset-out AUC on
# 4 of 5 sets (they learn each set's topics), so the shipped combiner uses the cosine and symbolic
# features only; `Combiner` still reads any of them from combiner.json.
EMBEDDING_FEATURES: tuple[str, ...] = ()
REGULARISATION_C = 0.1
FILES = {
    "scifact": ("scifact/claims_train.jsonl", "scifact/corpus.jsonl"),
    "climate-fever": ("climate-fever/claims.jsonl",),
    "healthver": ("healthver/healthver_dev.csv",),
    "covidfact": ("covidfact/COVIDFACT_dataset.jsonl",),
    "perturbed": ("perturbed/open.jsonl",),
}
CAPS = {"scifact_nei": 100, "climate_nei": 300, "healthver": 800, "covidfact": 900}


@dataclass(frozen=True)
class Pair:
    """One training/evaluation example. `kind`: support | contradict | nei | original | perturbed."""

    claim: str
    evidence: tuple[str, ...]
    dataset: str
    kind: str  # support | contradict | nei | original | perturbed (swapped: refuted)
    source: str = ""  # for perturbed rows: the set the claim came from
    original: str = ""  # for swapped rows: the claim before the swap

    @property
    def supported(self) -> int:
        return int(self.kind in ("support", "original"))


# --------------------------------------------------------------------------- data


def load_pairs(data_dir: Path, seed: int = 0) -> list[Pair]:
    """All pairs from the open sets, subsampled (seeded) where a set is large."""
    rng = random.Random(seed)
    pairs: list[Pair] = []
    # SciFact: claim vs its cited abstract
    corpus = {str(d["doc_id"]): d for d in read_jsonl(data_dir / FILES["scifact"][1])}
    nei = []
    for row in read_jsonl(data_dir / FILES["scifact"][0]):
        if not row["evidence"]:
            for doc_id in row.get("cited_doc_ids", [])[:1]:
                if str(doc_id) in corpus:
                    nei.append(Pair(row["claim"], (" ".join(corpus[str(doc_id)]["abstract"]),), "scifact", "nei"))
            continue
        for doc_id, sets in row["evidence"].items():
            if doc_id in corpus:
                kind = "support" if sets[0]["label"] == "SUPPORT" else "contradict"
                pairs.append(Pair(row["claim"], (" ".join(corpus[doc_id]["abstract"]),), "scifact", kind))
    pairs += rng.sample(nei, min(CAPS["scifact_nei"], len(nei)))
    # Climate-FEVER: claim vs each evidence sentence
    nei = []
    for row in read_jsonl(data_dir / FILES["climate-fever"][0]):
        for ev in row["evidences"]:
            kind = {"SUPPORTS": "support", "REFUTES": "contradict"}.get(ev["evidence_label"], "nei")
            pair = Pair(row["claim"], (ev["evidence"],), "climate-fever", kind)
            (nei if kind == "nei" else pairs).append(pair)
    pairs += rng.sample(nei, min(CAPS["climate_nei"], len(nei)))
    # HealthVer dev
    with (data_dir / FILES["healthver"][0]).open(encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f))
    kinds = {"Supports": "support", "Refutes": "contradict", "Neutral": "nei"}
    rows = rng.sample(rows, min(CAPS["healthver"], len(rows)))
    pairs += [Pair(r["claim"].strip(), (r["evidence"],), "healthver", kinds[r["label"]]) for r in rows if r["label"] in kinds]
    # COVID-Fact
    rows = read_jsonl(data_dir / FILES["covidfact"][0])
    rows = rng.sample(rows, min(CAPS["covidfact"], len(rows)))
    pairs += [
        Pair(r["claim"], tuple(r["evidence"]), "covidfact", "support" if r["label"] == "SUPPORTED" else "contradict")
        for r in rows
    ]
    # perturbed copies of supported claims
    for r in read_jsonl(data_dir / FILES["perturbed"][0]):
        kind = "original" if r["label"] == "supported" else "perturbed"
        pairs.append(Pair(r["claim"], tuple(r["evidence"]), "perturbed", kind, r.get("source", "")))
    return pairs


def make_swaps(pairs: Sequence[Pair], seed: int = 0, limit: int = 1200) -> list[Pair]:
    """Our own refuted copies of supported claims: one number/date changed or one named entity swapped.

    Made from the claims (not the evidence) of supported pairs of the four claim sets, so the
    combiner sees what a swapped fact looks like without learning "copied from the evidence".
    """
    from pipeline.claims import load_nlp

    rng = random.Random(seed)
    supported = [p for p in pairs if p.kind == "support"]
    rng.shuffle(supported)
    supported = supported[: limit * 2]
    docs = list(load_nlp().pipe(p.claim for p in supported))
    pool: dict[str, list[str]] = {}
    for doc in docs:
        for ent in doc.ents:
            if ent.label_ in NAME_LABELS:
                pool.setdefault(ent.label_, []).append(ent.text)
    out: list[Pair] = []
    for pair, doc in zip(supported, docs, strict=True):
        values = [v for v in numbers.extract_values(pair.claim) if v.kind in ("year", "number", "percent", "decade")]
        names = [e for e in doc.ents if e.label_ in pool and len(set(pool[e.label_])) > 1]
        claim = ""
        if values and (not names or rng.random() < 0.5):
            v = rng.choice(values)
            if v.kind in ("year", "decade"):
                new = int(v.value) + rng.choice([-1, 1]) * rng.choice([1, 2, 3, 5, 10] if v.kind == "year" else [10, 20])
                text = str(new) + ("s" if v.kind == "decade" else "")
            else:
                new = v.value * rng.choice([0.5, 1.5, 2, 3]) if v.value >= 4 else v.value + rng.choice([1, 2, 3])
                text = f"{new:g}" if new != int(new) else str(int(new))
                text += v.text[len(v.text.rstrip("%")):] if v.kind == "percent" else ""
                text = text if v.kind != "percent" or text.endswith("%") else text + " percent"
                if v.kind == "number" and v.text.lower().endswith(("million", "billion", "thousand")):
                    text = f"{new / (1e6 if 'million' in v.text else 1e9 if 'billion' in v.text else 1e3):g} " + v.text.split()[-1]
            claim = pair.claim[: v.start] + text + pair.claim[v.end :]
        elif names:
            ent = rng.choice(names)
            others = [t for t in set(pool[ent.label_]) if t.lower() != ent.text.lower() and t.lower() not in pair.claim.lower()]
            if others:
                claim = pair.claim[: ent.start_char] + rng.choice(sorted(others)) + pair.claim[ent.end_char :]
        if claim and claim != pair.claim:
            out.append(Pair(claim, pair.evidence, "swaps", "perturbed", pair.dataset, pair.claim))
        if len(out) >= limit:
            break
    return out


# --------------------------------------------------------------------------- embedding cache


class CachedEmbedder:
    """Wraps an Embedder; vectors persist in a cache file so reruns embed nothing twice."""

    def __init__(self, embedder, cache_file: Path):
        self.embedder = embedder
        self.cache_file = cache_file
        self.table: dict[str, np.ndarray] = {}
        if cache_file.is_file():
            data = np.load(cache_file, allow_pickle=False)
            self.table = dict(zip(data["texts"].tolist(), data["vectors"], strict=True))

    def encode(self, texts: list[str], **_: object) -> np.ndarray:
        missing = [t for t in dict.fromkeys(texts) if t not in self.table]
        if missing:
            for start in range(0, len(missing), 2048):
                batch = missing[start:start + 2048]
                self.table.update(zip(batch, self.embedder.encode(batch, batch_size=64), strict=True))
                self.save()
                print(f"  embedded {min(start + 2048, len(missing))}/{len(missing)}", file=sys.stderr, flush=True)
        return np.vstack([self.table[t] for t in texts]) if texts else np.zeros((0, 384), np.float32)

    def encode_cached(self, texts: list[str]) -> np.ndarray:
        return self.encode(texts)

    def save(self) -> None:
        texts = list(self.table)
        np.savez(self.cache_file, texts=np.array(texts), vectors=np.vstack([self.table[t] for t in texts]))


# --------------------------------------------------------------------------- training


def _fit(x: np.ndarray, y: np.ndarray, seed: int, c: float = REGULARISATION_C) -> dict:
    from sklearn.linear_model import LogisticRegression

    mean = x.mean(axis=0)
    scale = x.std(axis=0) + 1e-6
    model = LogisticRegression(C=c, class_weight="balanced", max_iter=2000, random_state=seed)
    model.fit((x - mean) / scale, y)
    return {"mean": mean, "scale": scale, "weights": model.coef_[0], "bias": float(model.intercept_[0])}


def _predict(fit: dict, x: np.ndarray) -> np.ndarray:
    z = ((x - fit["mean"]) / fit["scale"]) @ fit["weights"] + fit["bias"]
    return 1 / (1 + np.exp(-z))


def _combiner_spec(fit: dict) -> dict:
    return {
        "embedding_features": list(EMBEDDING_FEATURES),
        "symbolic_features": list(verify.SYMBOLIC_FEATURES),
        "mean": [round(float(v), 6) for v in fit["mean"]],
        "scale": [round(float(v), 6) for v in fit["scale"]],
        "weights": [round(float(v), 6) for v in fit["weights"]],
        "bias": round(fit["bias"], 6),
    }


def _holdout_mask(pairs: Sequence[Pair], held: str) -> tuple[np.ndarray, np.ndarray]:
    """Test = the held-out set; train = the rest minus rows sharing its claims (perturbed ↔ sources)."""
    test = np.array([p.dataset == held for p in pairs])
    held_claims = {p.claim for p in pairs if p.dataset == held}
    if held == "perturbed":
        held_claims |= {p.claim for p in pairs if p.dataset in ("scifact", "climate-fever")} & {
            p.claim for p in pairs if p.dataset == "perturbed"
        }
    source_name = {"scifact": "scifact-train", "climate-fever": "climate-fever"}.get(held)
    leak = np.array([
        p.claim in held_claims or p.original in held_claims or p.source == held
        or (source_name is not None and p.source == source_name)
        for p in pairs
    ])
    return ~test & ~leak, test


def train(data_dir: Path, out_path: Path, seed: int = 0) -> dict:
    """Fit the combiner on all open pairs, write it to `out_path`, and return the figures. Training
    leaves the runtime's caches alone: a process that already loaded a combiner keeps it."""
    from bot.app import stage_options
    from config.settings import load_settings
    from pipeline.embed import load_embedder

    random.seed(seed)
    np.random.seed(seed)
    settings = load_settings(env={})
    started = time.perf_counter()
    pairs = load_pairs(data_dir, seed)
    pairs += make_swaps(pairs, seed)
    print(f"{len(pairs)} pairs from {data_dir}", file=sys.stderr)
    cache = Path(tempfile.gettempdir()) / f"ravbot-combiner-embeddings-{seed}.npz"
    embedder = CachedEmbedder(load_embedder(""), cache)
    claims = [p.claim for p in pairs]
    evidences = [list(p.evidence) for p in pairs]
    t0 = time.perf_counter()
    cosine = score_pairs(claims, evidences, "cosine", embedder, settings)
    aligned = verify.analyse(claims, evidences, embedder)
    analyse_s = time.perf_counter() - t0
    x = feature_matrix(aligned, EMBEDDING_FEATURES, verify.SYMBOLIC_FEATURES)
    y = np.array([p.supported for p in pairs])
    datasets = sorted({p.dataset for p in pairs} - {"swaps"})
    results: dict[str, dict] = {}
    for held in datasets:
        train_mask, test_mask = _holdout_mask(pairs, held)
        fit = _fit(x[train_mask], y[train_mask], seed)
        probs = _predict(fit, x[test_mask])
        idx = np.flatnonzero(test_mask)
        decided = verify.decide([aligned[i] for i in idx], list(probs), stage_options(settings).verification)
        judged = np.array([pairs[i].kind != "nei" for i in idx])  # supports vs contradicts only
        yt = y[idx][judged]
        cos_sup = np.array([cosine[i].label is Label.SUPPORTED for i in idx])[judged]
        cos_conf = np.array([cosine[i].confidence for i in idx])[judged]
        def_sup = np.array([d.label is Label.SUPPORTED for d in decided])[judged]
        def_conf = np.array([d.confidence for d in decided])[judged]
        contradicted = np.array([d.label is Label.CONTRADICTED for d in decided])[judged]
        results[held] = {
            "cosine": figures(yt, cos_sup, cos_conf),
            "default": figures(yt, def_sup, def_conf),
            "default_contradicted_true": round(float(np.mean(contradicted[yt == 1])), 3),
            "default_contradicted_false": round(float(np.mean(contradicted[yt == 0])), 3),
            "trained_on": int(train_mask.sum()),
        }
    final = _fit(x, y, seed)
    in_sample = figures(y, _predict(final, x) >= settings.supported_threshold, _predict(final, x))
    manifest = {
        "trained": "python -m lab.train_combiner",
        "seed": seed,
        "data": {
            name: {f: hashlib.sha256((data_dir / f).read_bytes()).hexdigest() for f in files}
            for name, files in FILES.items()
        },
        "caps": CAPS,
        "pairs": {d: int(sum(p.dataset == d for p in pairs)) for d in [*datasets, "swaps"]},
        "leave_one_dataset_out": results,
        "in_sample_all": in_sample,
        "analyse_ms_per_pair": round(1000 * analyse_s / len(pairs), 1),
        "train_seconds": round(time.perf_counter() - started, 1),
        "thresholds": {"supported": settings.supported_threshold, "uncertain": settings.uncertain_threshold},
    }
    spec = _combiner_spec(final) | {"manifest": manifest}
    out_path.parent.mkdir(parents=True, exist_ok=True)
    out_path.write_text(json.dumps(spec, indent=None, separators=(",", ":")) + "\n")
    return manifest


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m lab.train_combiner", description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="the open data folder (../shared/data)")
    parser.add_argument("--out", type=Path, default=verify.COMBINER_PATH, help="where to write combiner.json")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    manifest = train(args.data, args.out, args.seed)
    print(json.dumps(manifest["leave_one_dataset_out"], indent=1))
    print(f"wrote {args.out} in {manifest['train_seconds']} s", file=sys.stderr)


if __name__ == "__main__":
    main()
