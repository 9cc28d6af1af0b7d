"""The verifier's training data: the NLI sets and the open claim sets read into `Example`s, split by claim
(train / dev / test by a seeded hash), with contrastive pairs made from each split's own claims and,
optionally, pairs authored from open documents (`lab.paraphrase_pairs`). Never reads ../shared/holdout.

(The claim sets are read here as the shipped verifier was trained on them, which differs from the
evaluation's reading in `lab.datasets`: e.g. a SciFact rationale is joined in annotation order.)
"""

from __future__ import annotations

import csv
import hashlib
import json
import random
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from lab.datasets import read_jsonl
from pipeline.verifier_model import LABELS

DEFAULT_DATA = Path(__file__).resolve().parent.parent.parent / "shared" / "data"
SUPPORTS, REFUTES, NEI = 0, 1, 2
OPEN_SETS = ("scifact", "climate-fever", "healthver", "covidfact", "perturbed")
AUTHORED = "authored"  # pairs authored from open documents (lab.paraphrase_pairs)
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
        rows = [r for f in NLI_FILES[name] for r in read_jsonl(data_dir / f)]
        add(name, [(r["premise"], r["hypothesis"], _NLI_LABEL.get(r["label"])) for r in rows])
    rows = [r for f in NLI_FILES["cad-snli"] for r in _tsv(data_dir / f)]
    add("cad-snli", [(r["sentence1"], r["sentence2"], _NLI_LABEL.get(r["gold_label"])) for r in rows])
    rows = [r for f in NLI_FILES["rte"] for r in _tsv(data_dir / f)]
    add("rte", [(r["sentence1"], r["sentence2"], _NLI_LABEL.get(r["label"])) for r in rows])
    rows = [r for f in NLI_FILES["fever-symmetric"] for r in read_jsonl(data_dir / f)]
    add("fever-symmetric", [
        (r.get("evidence_sentence") or r.get("evidence") or "", r["claim"], _NLI_LABEL.get(r["label"].lower())) for r in rows
    ])
    rows = [r for f in NLI_FILES["vitaminc"] for r in read_jsonl(data_dir / f)]
    add("vitaminc", [(r["evidence"], r["claim"], _NLI_LABEL.get(r["label"].lower())) for r in rows])
    pairs = []
    for f in NLI_FILES["sufficient-facts"]:
        for r in read_jsonl(data_dir / f):
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
    corpus = {str(d["doc_id"]): d for d in read_jsonl(data_dir / OPEN_FILES["scifact"][1])}
    for row in read_jsonl(data_dir / OPEN_FILES["scifact"][0]):
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
    for row in read_jsonl(data_dir / OPEN_FILES["climate-fever"][0]):
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
    rows = read_jsonl(data_dir / OPEN_FILES["covidfact"][0])
    rows = rng.sample(rows, min(OPEN_CAPS["covidfact"], len(rows)))
    for r in rows:  # refuted claims are counter-claims of a supported one on the same evidence: group by evidence
        evidence = [e for e in r["evidence"] if e.strip()]
        label = SUPPORTS if r["label"] == "SUPPORTED" else REFUTES
        out.append(Example(r["claim"], " ".join(evidence[:3]), label, "covidfact", _norm(evidence[0] if evidence else r["claim"]), tuple(evidence)))
    for r in read_jsonl(data_dir / OPEN_FILES["perturbed"][0]):
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
    from lab.train_combiner import Pair, make_swaps

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


# --------------------------------------------------------------------------- the splits


def load_authored(data_dir: Path, seed: int, exclude: set[str] = frozenset(), cache_dir: Path | None = AUTHORED_CACHE,
                  pairs_file: Path | None = None, log=print) -> list[Example]:
    """Pairs authored from open documents (`lab.paraphrase_pairs`), grouped by their source sentence;
    sources whose text is in `exclude` (the dev / test evidence of the open sets) are left out. The pairs
    are cached in `cache_dir` under a key of the sources' hashes, the seed and the authoring code;
    `pairs_file` pins a file of them instead (to measure two models on the very same pairs)."""
    from lab import paraphrase_pairs

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
