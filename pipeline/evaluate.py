"""Evaluation harness behind `ravbot eval`: metrics, dataset loaders, the perturbation generator, the runners.

Read top-down: metrics (pure functions on ranked ids and labels) → datasets (each native format
read into `Pair`s or corpus/queries/qrels) → perturbation (change exactly one number, date or named
entity of a claim, seeded) → runners, one per `ravbot eval` subcommand. Each runner returns
`(summary, rows)`: `summary` is the JSON object the CLI prints, `rows` the per-item records that
plots are drawn from.
"""

from __future__ import annotations

import csv
import difflib
import json
import math
import random
import re
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from pipeline.types import Claim, Document, Evidence, Label, Verdict, content_hash

# --------------------------------------------------------------------------------------- metrics


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


def percentile(values: Sequence[float], q: float) -> float:
    """The q-th percentile (0..100, linear interpolation); 0.0 for no values."""
    return float(np.percentile(np.asarray(values, dtype=float), q)) if len(values) else 0.0


def first_occurrence(ids: Iterable[str]) -> list[str]:
    """`ids` without repeats, in first-occurrence order (chunk hits → document ranking)."""
    return list(dict.fromkeys(ids))


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


# -------------------------------------------------------------------------------------- datasets

GOLD = ("supported", "refuted", "nei", "partial")
DATASETS = ("scifact", "climate-fever", "healthver", "covidfact", "wice", "perturbed")


@dataclass(frozen=True)
class Pair:
    """A claim with its (gold) evidence sentences and gold label, one of GOLD."""

    claim: str
    evidence: tuple[str, ...]
    label: str
    id: str = ""
    doc_ids: tuple[str, ...] = ()  # corpus documents the claim cites (SciFact), for retrieved evidence
    perturbation: str = "none"  # none | number | date | entity
    original_claim: str = ""
    source: str = ""


def read_jsonl(path: str | Path) -> list[dict]:
    """The JSON objects of a JSONL file; a bad line names the file and line number."""
    rows = []
    with Path(path).open(encoding="utf-8") as f:
        for n, line in enumerate(f, start=1):
            if line.strip():
                try:
                    rows.append(json.loads(line))
                except json.JSONDecodeError as e:
                    raise ValueError(f"{path}:{n}: not JSON ({e.msg})") from None
    return rows


def load_corpus(path: str | Path) -> dict[str, tuple[str, str]]:
    """{doc id: (title, text)} from a SciFact corpus (`doc_id`, `title`, `abstract` list) or a BEIR
    corpus.jsonl (`_id`, `title`, `text`)."""
    out: dict[str, tuple[str, str]] = {}
    for row in read_jsonl(path):
        if "doc_id" in row:
            abstract = row.get("abstract") or []
            text = " ".join(s.strip() for s in abstract) if isinstance(abstract, list) else str(abstract)
            out[str(row["doc_id"])] = (row.get("title", ""), text)
        elif "_id" in row:
            out[str(row["_id"])] = (row.get("title", ""), row.get("text", ""))
        else:
            raise ValueError(f"{path}: rows need `doc_id` (SciFact) or `_id` (BEIR), got {sorted(row)[:6]}")
    return out


def load_queries(path: str | Path) -> dict[str, str]:
    """{query id: text} from SciFact claims (`id`, `claim`) or BEIR queries.jsonl (`_id`, `text`)."""
    out: dict[str, str] = {}
    for row in read_jsonl(path):
        if "claim" in row and "id" in row:
            out[str(row["id"])] = row["claim"]
        elif "_id" in row:
            out[str(row["_id"])] = row["text"]
        else:
            raise ValueError(f"{path}: rows need `id`+`claim` (SciFact) or `_id`+`text` (BEIR), got {sorted(row)[:6]}")
    return out


def load_qrels(path: str | Path) -> dict[str, dict[str, int]]:
    """{query id: {doc id: grade}} from a BEIR qrels TSV (`query-id corpus-id score`, header optional)."""
    out: dict[str, dict[str, int]] = {}
    with Path(path).open(encoding="utf-8") as f:
        for n, line in enumerate(f, start=1):
            parts = line.split()
            if not parts or (n == 1 and not parts[-1].lstrip("-").isdigit()):
                continue
            if len(parts) < 3:
                raise ValueError(f"{path}:{n}: expected `query-id corpus-id score`, got {line.strip()!r}")
            out.setdefault(parts[0], {})[parts[1]] = int(parts[-1])
    return out


def load_scifact(path: str | Path, corpus: str | Path | None = None) -> list[Pair]:
    """SciFact claims against each cited abstract with a label: one Pair per (claim, abstract),
    SUPPORT → supported, CONTRADICT → refuted; evidence = the rationale sentences (needs the
    corpus; defaults to corpus.jsonl next to the claims file). Claims without evidence are skipped."""
    corpus_path = Path(corpus) if corpus else Path(path).with_name("corpus.jsonl")
    rows = read_jsonl(corpus_path)
    if rows and not isinstance(rows[0].get("abstract"), list):
        raise ValueError(f"{corpus_path}: SciFact rationales need the SciFact corpus schema "
                         "(`doc_id`, `abstract` as a list of sentences)")
    abstracts = {str(r["doc_id"]): r["abstract"] for r in rows}
    pairs = []
    for row in read_jsonl(path):
        for doc_id, sets in (row.get("evidence") or {}).items():
            sentences = abstracts.get(str(doc_id))
            if sentences is None or not sets:
                continue
            indices = sorted({i for s in sets for i in s.get("sentences", [])})
            label = {"SUPPORT": "supported", "CONTRADICT": "refuted"}.get(sets[0].get("label", ""))
            if label is None:
                continue
            evidence = tuple(sentences[i].strip() for i in indices if i < len(sentences))
            pairs.append(Pair(row["claim"], evidence, label, id=f"{row['id']}:{doc_id}",
                              doc_ids=(str(doc_id),), source="scifact"))
    return pairs


def load_climate_fever(path: str | Path) -> list[Pair]:
    """Climate-FEVER evidence pairs: each (claim, evidence sentence) with its per-evidence label
    (SUPPORTS → supported, REFUTES → refuted, NOT_ENOUGH_INFO → nei)."""
    mapping = {"SUPPORTS": "supported", "REFUTES": "refuted", "NOT_ENOUGH_INFO": "nei"}
    return [
        Pair(row["claim"], (ev["evidence"],), mapping[ev["evidence_label"]],
             id=f"{row['claim_id']}:{ev['evidence_id']}", source="climate-fever")
        for row in read_jsonl(path)
        for ev in row.get("evidences", [])
        if ev.get("evidence_label") in mapping
    ]


def load_healthver(path: str | Path) -> list[Pair]:
    """HealthVer CSV (`id, evidence, claim, label, …`): Supports / Refutes / Neutral."""
    mapping = {"supports": "supported", "refutes": "refuted", "neutral": "nei"}
    pairs = []
    with Path(path).open(encoding="utf-8", newline="") as f:
        for row in csv.DictReader(f):
            label = mapping.get((row.get("label") or "").strip().lower())
            if label is None:
                raise ValueError(f"{path}: unknown HealthVer label {row.get('label')!r} (id {row.get('id')})")
            pairs.append(Pair(row["claim"].strip(), (row["evidence"].strip(),), label, id=row["id"], source="healthver"))
    return pairs


def load_covidfact(path: str | Path) -> list[Pair]:
    """COVID-Fact JSONL (`claim`, `label` SUPPORTED/REFUTED, `evidence` list of sentences)."""
    mapping = {"SUPPORTED": "supported", "REFUTED": "refuted"}
    return [
        Pair(row["claim"], tuple(row.get("evidence") or ()), mapping[row["label"]], id=str(n), source="covidfact")
        for n, row in enumerate(read_jsonl(path))
        if row.get("label") in mapping
    ]


def load_wice(path: str | Path) -> list[Pair]:
    """WiCE claims with their gold supporting sentences (the first annotated set):
    supported → supported, partially_supported → partial. not_supported claims have no gold
    sentences, so they are not oracle pairs and are skipped."""
    mapping = {"supported": "supported", "partially_supported": "partial"}
    pairs = []
    for n, row in enumerate(read_jsonl(path)):
        label = mapping.get(row.get("label", ""))
        sets = [s for s in row.get("supporting_sentences") or [] if s]
        if label is None or not sets:
            continue
        page = row.get("evidence") or []
        evidence = tuple(page[i] for i in sets[0] if i < len(page))
        pairs.append(Pair(row["claim"], evidence, label, id=str(n), source="wice"))
    return pairs


def load_perturbed(path: str | Path) -> list[Pair]:
    """A perturbation set (`claim`, `evidence` string or list, `label` supported/refuted,
    `perturbation`, optional `original_claim`, `source`), as `ravbot eval perturb --write` saves it."""
    pairs = []
    for n, row in enumerate(read_jsonl(path)):
        label = str(row.get("label", "")).lower()
        if label not in GOLD:
            raise ValueError(f"{path}: row {n + 1} has label {row.get('label')!r}; expected one of {', '.join(GOLD)}")
        evidence = row.get("evidence") or ()
        evidence = (evidence,) if isinstance(evidence, str) else tuple(evidence)
        pairs.append(Pair(row["claim"], evidence, label, id=str(row.get("id", n)),
                          perturbation=row.get("perturbation", "none"),
                          original_claim=row.get("original_claim", ""), source=row.get("source", "")))
    return pairs


def load_pairs(dataset: str, path: str | Path, corpus: str | Path | None = None) -> list[Pair]:
    """The claim–evidence pairs of a dataset in its native format."""
    loaders: dict[str, Callable[[str | Path], list[Pair]]] = {
        "scifact": lambda p: load_scifact(p, corpus),
        "climate-fever": load_climate_fever,
        "healthver": load_healthver,
        "covidfact": load_covidfact,
        "wice": load_wice,
        "perturbed": load_perturbed,
    }
    if dataset not in loaders:
        raise ValueError(f"unknown dataset {dataset!r}; expected one of {', '.join(loaders)}")
    if not Path(path).is_file():
        raise ValueError(f"{dataset} file {str(path)!r} does not exist")
    return loaders[dataset](path)


def load_halueval(path: str | Path) -> list[dict[str, str]]:
    """HaluEval QA rows: `knowledge`, `question`, `right_answer`, `hallucinated_answer`."""
    rows = read_jsonl(path)
    for n, row in enumerate(rows, start=1):
        missing = {"knowledge", "question", "right_answer", "hallucinated_answer"} - set(row)
        if missing:
            raise ValueError(f"{path}: row {n} lacks {', '.join(sorted(missing))}")
    return rows


def load_golden(path: str | Path) -> list[dict[str, Any]]:
    """A golden set: JSONL of {"question", "relevant": [source ids, paths or URLs], "expected_answer"?}."""
    rows = read_jsonl(path)
    for n, row in enumerate(rows, start=1):
        if not str(row.get("question", "")).strip():
            raise ValueError(f"{path}: row {n} has no question")
        if not isinstance(row.get("relevant", []), list):
            raise ValueError(f"{path}: row {n}: `relevant` must be a list, got {row['relevant']!r}")
    return rows


def pair_record(pair: Pair) -> dict[str, Any]:
    """A pair as one line of a perturbation JSONL file."""
    return {"claim": pair.claim, "evidence": list(pair.evidence), "label": pair.label,
            "perturbation": pair.perturbation, "original_claim": pair.original_claim or pair.claim,
            "source": pair.source}


# ---------------------------------------------------------------------------------- perturbation

ENTITY_LABELS = ("PERSON", "ORG", "GPE", "LOC", "NORP", "FAC", "PRODUCT", "EVENT", "WORK_OF_ART", "LAW", "LANGUAGE")
# Replacements when the data set itself offers no other entity of the same kind.
FALLBACK_ENTITIES = {
    "PERSON": ["Maria Lopez", "John Carter", "Wei Zhang", "Amara Okafor", "Henrik Larsen"],
    "ORG": ["the World Bank", "Siemens", "Harvard University", "UNESCO", "Toyota"],
    "GPE": ["Brazil", "Canada", "Kenya", "Norway", "Vietnam", "Chile"],
    "LOC": ["the Sahara", "the Pacific Ocean", "the Alps", "Antarctica", "the Amazon basin"],
    "NORP": ["Canadian", "German", "Brazilian", "Japanese", "Nigerian"],
    "FAC": ["Heathrow Airport", "the Golden Gate Bridge", "Wembley Stadium"],
    "PRODUCT": ["Windows", "iPhone", "Boeing 747"],
    "EVENT": ["the Olympic Games", "World War I", "the Cold War"],
    "WORK_OF_ART": ["Hamlet", "the Mona Lisa", "Don Quixote"],
    "LAW": ["the Clean Air Act", "the Kyoto Protocol", "the Patriot Act"],
    "LANGUAGE": ["French", "Spanish", "Mandarin"],
}
MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August",
          "September", "October", "November", "December")
# A number that is a value, not part of a name: not after a letter ("p53", "COVID-19", "B12").
_NUMBER = re.compile(r"(?<![\w.,])(?<![A-Za-z]-)(\d{1,3}(?:,\d{3})+|\d+)(\.\d+)?(?![\d,.]*\d)(?![A-Z])")


@dataclass(frozen=True)
class Perturbation:
    """`claim` is `original` with `original[start:end]` (= `old`) replaced by `new`."""

    original: str
    claim: str
    kind: str  # number | date | entity
    old: str
    new: str
    start: int
    end: int


def _new_numbers(text: str, percent: bool, year: bool, avoid: str, decade: bool = False) -> list[str]:
    """Different numbers written like `text` (same decimals and thousands separators), none in `avoid`."""
    digits, _, decimals = text.replace(",", "").partition(".")
    value = float(digits + ("." + decimals if decimals else ""))
    if decade:
        options = [value + d for d in (-30, -20, -10, 10, 20)]
    elif year:
        options = [value + d for d in (-5, -4, -3, -2, -1, 1, 2, 3, 4, 5)]
    else:
        options = [value * 2, value * 3, value / 2, value + 1, value + 2, value - 1, value * 10]
    if percent:
        options = [v for v in options if v <= 100]
    places = len(decimals)
    written: list[str] = []
    for v in options:
        if v <= 0 or (not places and v != int(v)):
            continue
        s = f"{v:,.{places}f}" if "," in text else f"{v:.{places}f}"
        if s != text and s not in written and not re.search(rf"(?<![\d.,]){re.escape(s)}(?!\d)", avoid):
            written.append(s)
    return written


def _shape(text: str) -> str:
    if text.isupper():
        return "acronym"
    return "lower" if text[:1].islower() else ("multi" if " " in text else "word")


def entity_pool(texts: Iterable[str], nlp=None) -> dict[str, list[str]]:
    """{spaCy label: sorted distinct entity texts} found in `texts` (replacement candidates)."""
    nlp = nlp or _nlp()
    pool: dict[str, set[str]] = {}
    for doc in nlp.pipe(texts):
        for ent in doc.ents:
            if ent.label_ in ENTITY_LABELS and not any(c.isdigit() for c in ent.text):
                pool.setdefault(ent.label_, set()).add(ent.text)
    return {label: sorted(values) for label, values in pool.items()}


def _nlp():
    from pipeline.claims import load_nlp

    return load_nlp()


def perturb_claim(
    claim: str,
    *,
    seed: int = 0,
    evidence: Sequence[str] = (),
    pool: Mapping[str, Sequence[str]] | None = None,
    nlp=None,
) -> Perturbation | None:
    """Change exactly one number, date or named entity of `claim`; None when it has none that can change.

    Deterministic for a given (claim, seed, pool). The new value never appears in the claim or
    the evidence (so the changed claim is not accidentally true) and never equals the old one."""
    nlp = nlp or _nlp()
    doc = nlp(claim)
    rng = random.Random(f"{seed}:{claim}")
    avoid = (claim + "\n" + "\n".join(evidence)).lower()
    named = [e for e in doc.ents if e.label_ in ENTITY_LABELS]
    dates = [e for e in doc.ents if e.label_ in ("DATE", "TIME")]
    options: list[tuple[str, int, int, list[str]]] = []  # (kind, start, end, replacements)

    for m in _NUMBER.finditer(claim):
        start, end = m.span()
        if any(e.start_char <= start < e.end_char for e in named):
            continue  # a number inside a name ("Apollo 11") is part of the name
        in_date = any(e.start_char <= start < e.end_char for e in dates)
        text = m.group(0)
        year = in_date or (len(text) == 4 and text.isdigit() and 1500 <= int(text) <= 2100)
        percent = bool(re.match(r"\s*(%|percent|per cent)", claim[end:]))
        decade = text.endswith("0") and claim[end:end + 1] == "s"
        options.append(("date" if year else "number", start, end, _new_numbers(text, percent, year, avoid, decade)))
    for m in re.finditer(r"\b(" + "|".join(MONTHS) + r")\b", claim):
        if any(e.start_char <= m.start() < e.end_char for e in dates):
            options.append(("date", m.start(), m.end(), [x for x in MONTHS if x.lower() not in avoid]))
    for ent in named:
        if any(c.isdigit() for c in ent.text):
            continue
        old = ent.text.lower()

        def usable(candidates: Iterable[str], old: str = old) -> list[str]:
            return [c for c in dict.fromkeys(candidates)
                    if c.lower() not in avoid and old not in c.lower() and c.lower() not in old]

        fresh = usable((pool or {}).get(ent.label_, ())) or usable(FALLBACK_ENTITIES.get(ent.label_, []))
        alike = [c for c in fresh if _shape(c) == _shape(ent.text)]
        options.append(("entity", ent.start_char, ent.end_char, alike or fresh))

    rng.shuffle(options)
    for kind, start, end, replacements in options:
        if replacements:
            new = rng.choice(replacements)
            return Perturbation(claim, claim[:start] + new + claim[end:], kind, claim[start:end], new, start, end)
    return None


def perturbation_set(pairs: Sequence[Pair], *, seed: int = 0, nlp=None) -> list[Pair]:
    """From the supported pairs: each original (label supported) followed by its one-value change
    (label refuted) where one exists. Entity replacements come from the entities of these claims."""
    nlp = nlp or _nlp()
    supported = [p for p in pairs if p.label == "supported" and p.evidence]
    pool = entity_pool((p.claim for p in supported), nlp)
    out: list[Pair] = []
    for p in supported:
        change = perturb_claim(p.claim, seed=seed, evidence=p.evidence, pool=pool, nlp=nlp)
        if change is None:
            continue
        out.append(replace(p, perturbation="none", original_claim=p.claim))
        out.append(replace(p, claim=change.claim, label="refuted", perturbation=change.kind,
                           original_claim=p.claim, id=f"{p.id}:perturbed"))
    return out


def write_jsonl(path: str | Path, records: Iterable[Mapping[str, Any]]) -> int:
    """Write one JSON object a line; returns the number written."""
    n = 0
    with Path(path).open("w", encoding="utf-8") as f:
        for record in records:
            f.write(json.dumps(record, ensure_ascii=False) + "\n")
            n += 1
    return n


# ---------------------------------------------------------------------------------- the indexes


def corpus_documents(corpus: Mapping[str, tuple[str, str]], source: str) -> list[Document]:
    """Corpus entries as Documents with id `<source>:<corpus id>`."""
    return [Document(id=f"{source}:{cid}", source=source, title=title, text=text, path=cid)
            for cid, (title, text) in corpus.items()]


def corpus_store(corpus_path: str | Path, embedder, settings, *, progress: Callable[[int, int], None] | None = None):
    """An EmbeddedStore holding `corpus_path`, cached under `<data dir>/eval/` so that a second run
    embeds nothing. Returns (store, source name, {document id: corpus id})."""
    from pipeline.index import index_documents
    from pipeline.store import EmbeddedStore

    path = Path(corpus_path).resolve()
    stat = path.stat()
    key = content_hash(f"{path}|{stat.st_size}|{stat.st_mtime_ns}|{settings.chunk_size}|"
                       f"{settings.chunk_overlap}|{getattr(embedder, 'name', '')}")
    source = f"eval-{path.stem}"
    docs = corpus_documents(load_corpus(path), source)
    store = EmbeddedStore(settings.data_path / "eval" / f"{path.stem}-{key}.db")
    if store.counts()["documents"] != len(docs):
        index_documents(store, embedder, source, docs, chunk_size=settings.chunk_size,
                        chunk_overlap=settings.chunk_overlap, progress=progress)
    return store, source, {d.id: d.path for d in docs}


# ------------------------------------------------------------------------------ eval retrieval

VARIANTS = ("bm25", "dense", "rrf", "rrf+rerank")


def run_retrieval(
    store,
    embedder,
    settings,
    queries: Mapping[str, str],
    qrels: Mapping[str, Mapping[str, int]],
    *,
    variants: Sequence[str] = VARIANTS,
    doc_of: Callable[[str], str] = lambda doc_id: doc_id.split(":", 1)[-1],
    depth: int = 400,
    candidates: int | None = None,
) -> tuple[dict, list[dict]]:
    """nDCG@10, Recall@5/20/100, MRR@10 and latency per retrieval variant over the judged queries.

    Chunk hits become a document ranking (first occurrence). Everything but Recall@100 is measured
    on retrieval as configured (`candidates` per ranker, default the setting), which is also what
    is timed; Recall@100 needs a deeper list, so a second, untimed call asks for `depth` chunks
    from `depth` candidates per ranker (a document has several chunks)."""
    from pipeline.retrieve import retrieve

    judged = [(qid, text) for qid, text in queries.items() if _relevant(qrels.get(qid, {}))]
    if not judged:
        raise ValueError("no query has a relevance judgement: check that query ids match the qrels")
    n = settings.candidates if candidates is None else candidates
    retrieve(judged[0][1], store=store, embedder=embedder, settings=settings, k=1)  # warm up
    vectors = embedder.encode([text for _, text in judged])  # for the untimed deep calls
    summary: dict[str, Any] = {"variants": {}, "queries": len(judged)}
    rows = []
    for variant in variants:
        scores: dict[str, list[float]] = {m: [] for m in ("ndcg@10", "recall@5", "recall@20", "recall@100", "mrr@10")}
        times = []
        for (qid, text), vector in zip(judged, vectors, strict=True):
            t0 = time.perf_counter()
            hits = retrieve(text, store=store, embedder=embedder, settings=settings, variant=variant,
                            k=2 * n, candidates=n)
            times.append((time.perf_counter() - t0) * 1000)
            ranked = first_occurrence(doc_of(h.chunk.doc_id) for h in hits)
            deep = retrieve(text, store=store, embedder=embedder, settings=settings, variant=variant,
                            k=depth, candidates=max(n, depth), query_vector=vector)
            rel = qrels[qid]
            scores["ndcg@10"].append(ndcg_at_k(ranked, rel, 10))
            scores["recall@5"].append(recall_at_k(ranked, rel, 5))
            scores["recall@20"].append(recall_at_k(ranked, rel, 20))
            scores["recall@100"].append(recall_at_k(first_occurrence(doc_of(h.chunk.doc_id) for h in deep), rel, 100))
            scores["mrr@10"].append(mrr_at_k(ranked, rel, 10))
            rows.append({"variant": variant, "query": qid, "ms": times[-1], "ndcg@10": scores["ndcg@10"][-1]})
        summary["variants"][variant] = {m: round(float(np.mean(v)), 4) for m, v in scores.items()} | {
            "p50_ms": round(percentile(times, 50), 1), "p95_ms": round(percentile(times, 95), 1)}
    return summary, rows


# --------------------------------------------------------------------------------- eval verify

METHODS = ("cosine", "default", "combiner", "model")
Verifier = Callable[[str, Sequence[Evidence]], Verdict]


def make_claim(text: str, entity_types: Iterable[str] = (), nlp=None) -> Claim:
    """A Claim spanning all of `text`, with its entities of `entity_types`."""
    types = set(entity_types)
    entities: tuple[tuple[str, str], ...] = ()
    if types:
        doc = (nlp or _nlp())(text)
        entities = tuple((e.text, e.label_) for e in doc.ents if e.label_ in types)
    return Claim(text=text, start=0, end=len(text), entities=entities)


def make_verifier(method: str, embedder, settings) -> Verifier:
    """One claim against its evidence with `pipeline.verify.verify_claims` and the given method."""
    from pipeline import verify

    types = settings.list("entity_types")

    def check(claim: str, evidence: Sequence[Evidence]) -> Verdict:
        verdicts = verify.verify_claims([make_claim(claim, types)], [list(evidence)], method=method,
                                        embedder=embedder, settings=settings)
        return verdicts[0]

    return check


def oracle_evidence(pair: Pair) -> list[Evidence]:
    return [Evidence(text=s, title=pair.source, origin="gold") for s in pair.evidence if s.strip()]


def score_verdicts(records: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The per-method figures from records with `gold`, `label`, `ms`."""
    gold = [r["gold"] for r in records]
    labels = [r["label"] for r in records]
    binary = binary_metrics([g == "supported" for g in gold], [p == Label.SUPPORTED.value for p in labels])
    flags = flag_recall(gold, labels)
    ms = [r["ms"] for r in records]
    return {
        "balanced_accuracy": round(binary["balanced_accuracy"], 4),
        "supported_precision": round(binary["precision"], 4),
        "supported_recall": round(binary["recall"], 4),
        "flag_recall": None if flags is None else round(flags, 4),
        "confusion": confusion(gold, labels),
        "p50_ms": round(percentile(ms, 50), 1),
        "p95_ms": round(percentile(ms, 95), 1),
    }


def verify_records(
    pairs: Sequence[Pair],
    verifiers: Mapping[str, Verifier],
    evidence_for: Callable[[Pair], list[Evidence]] = oracle_evidence,
) -> list[dict[str, Any]]:
    """Every pair through every verifier: {method, gold, label, confidence, ms, perturbation, id}.
    Evidence is gathered once per pair; `ms` times the verifier alone."""
    evidence = [evidence_for(p) for p in pairs]
    records = []
    for method, check in verifiers.items():
        for p, ev in zip(pairs, evidence, strict=True):
            t0 = time.perf_counter()
            verdict = check(p.claim, ev)
            ms = (time.perf_counter() - t0) * 1000
            records.append({"method": method, "id": p.id, "gold": p.label, "label": verdict.label.value,
                            "confidence": float(verdict.confidence), "ms": ms, "perturbation": p.perturbation})
    return records


def run_verify(
    pairs: Sequence[Pair],
    verifiers: Mapping[str, Verifier],
    *,
    evidence_for: Callable[[Pair], list[Evidence]] = oracle_evidence,
    with_nei: bool = False,
) -> tuple[dict, list[dict]]:
    """Confusion, balanced accuracy, SUPPORTED precision/recall, flag recall and latency per method.
    NOT-ENOUGH-INFO pairs are left out unless `with_nei` (they then count as not supported)."""
    pairs = [p for p in pairs if with_nei or p.label != "nei"]
    if not pairs:
        raise ValueError("no claim–evidence pairs to evaluate")
    records = verify_records(pairs, verifiers, evidence_for)
    methods = {m: score_verdicts([r for r in records if r["method"] == m]) for m in verifiers}
    return {"methods": methods, "pairs": len(pairs)}, records


def retrieved_evidence(store, embedder, settings, k: int | None = None) -> Callable[[Pair], list[Evidence]]:
    """Evidence for a pair's claim retrieved by ravbot from `store` (pipeline.evidence.kb_evidence)."""
    from pipeline.evidence import kb_evidence

    def gather(pair: Pair) -> list[Evidence]:
        return list(kb_evidence(pair.claim, store=store, embedder=embedder, settings=settings,
                                k=k or settings.evidence_k))

    return gather


# -------------------------------------------------------------------------------- eval perturb


_TOKEN = re.compile(r"\w+(?:[.,]\d+)*%?|[^\w\s]")


def changed_span(original: str, claim: str) -> tuple[str, str]:
    """What `claim` changed in `original`: (the original's words it replaced, the words that replaced
    them), each joined by single spaces; ('', '') when the two are the same."""
    a, b = _TOKEN.findall(original), _TOKEN.findall(claim)
    old: list[str] = []
    new: list[str] = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
        if op != "equal":
            old += a[i1:i2]
            new += b[j1:j2]
    return " ".join(old), " ".join(new)


def is_stated(value: str, evidence: Sequence[str]) -> bool:
    """Whether the evidence states `value`: a number, date or percentage after normalisation
    (pipeline.numbers), anything else as a name (spelled out, abbreviated or defined as an acronym)."""
    from pipeline import numbers, verify

    passage = " ".join(evidence)
    values = numbers.extract_values(value)
    if values:
        stated = numbers.extract_values(passage)
        return all(numbers.present(v, stated) for v in values)
    return verify._name_present(value, passage.lower(), verify._content(passage), verify._acronyms(passage))


def checkable(pairs: Sequence[Pair]) -> dict[str, bool]:
    """{pair id: whether the evidence can decide it}. A change is checkable when the evidence states
    the value it replaced (the evidence then says something else where the claim's value should be);
    an original is checkable when every one of its changes is. A change of a value the evidence never
    states leaves the original and the change equally unconfirmed."""
    out: dict[str, bool] = {}
    for p in pairs:
        if p.label == "refuted" and p.original_claim:
            old, _ = changed_span(p.original_claim, p.claim)
            out[p.id] = bool(old) and is_stated(old, p.evidence)
    changes: dict[str, list[bool]] = {}
    for p in pairs:
        if p.id in out:
            changes.setdefault(p.original_claim, []).append(out[p.id])
    for p in pairs:
        if p.label == "supported":
            mine = changes.get(p.claim, [])
            out[p.id] = bool(mine) and all(mine)
    return out


def kept_bound(pairs: Sequence[Pair], passed: float = 0.05) -> dict[str, Any] | None:
    """The most originals any verifier can keep SUPPORTED while at most `passed` of the changes stay
    SUPPORTED, if it gives a claim the same label when one number the evidence never states is replaced
    by another it never states (an evidence-only verifier cannot tell "in 2001" from "in 2003" when
    the source says neither). Each such number change passes exactly when its original is kept, so
    all but `passed` of them need their original rejected; the fewest originals that covers, rejecting
    those with the most such changes first, bounds what can be kept. None without originals."""
    originals = {p.claim for p in pairs if p.label == "supported"}
    changes = [p for p in pairs if p.label == "refuted"]
    if not originals or not changes:
        return None
    blind: Counter[str] = Counter()
    for p in changes:
        if p.perturbation in ("number", "date") and p.original_claim in originals:
            old, new = changed_span(p.original_claim, p.claim)
            if old and not is_stated(old, p.evidence) and not is_stated(new, p.evidence):
                blind[p.original_claim] += 1
    to_block = sum(blind.values()) - math.floor(passed * len(changes))
    rejected = 0
    for _, n in blind.most_common():
        if to_block <= 0:
            break
        to_block -= n
        rejected += 1
    return {"passed": passed, "unstated_number_changes": sum(blind.values()), "changes": len(changes),
            "best_kept": round(1 - rejected / len(originals), 4)}


def _share(hits: Sequence[bool]) -> float | None:
    return round(sum(hits) / len(hits), 4) if hits else None


def run_perturb(pairs: Sequence[Pair], verifiers: Mapping[str, Verifier]) -> tuple[dict, list[dict]]:
    """Share of perturbed (refuted) claims still SUPPORTED, and of originals kept SUPPORTED, per method:
    over all pairs, and over the checkable ones (`checkable`). The summary also carries `kept_bound`."""
    if not pairs:
        raise ValueError("no pairs to evaluate (no supported claim had a number, date or entity to change)")
    decidable = checkable(pairs)
    records = verify_records(pairs, verifiers)
    for r in records:
        r["checkable"] = decidable.get(r["id"], False)
    methods = {}
    for m in verifiers:
        mine = [r for r in records if r["method"] == m]
        changed = [r["label"] == Label.SUPPORTED.value for r in mine if r["gold"] == "refuted"]
        originals = [r["label"] == Label.SUPPORTED.value for r in mine if r["gold"] == "supported"]
        by_kind = {}
        for kind in sorted({r["perturbation"] for r in mine if r["gold"] == "refuted"}):
            hits = [r["label"] == Label.SUPPORTED.value for r in mine if r["perturbation"] == kind and r["gold"] == "refuted"]
            by_kind[kind] = _share(hits)
        methods[m] = {
            "perturbed_supported": _share(changed),
            "original_supported": _share(originals),
            "perturbed_supported_by_kind": by_kind,
            "checkable_perturbed_supported": _share([r["label"] == Label.SUPPORTED.value for r in mine
                                                     if r["gold"] == "refuted" and r["checkable"]]),
            "checkable_original_supported": _share([r["label"] == Label.SUPPORTED.value for r in mine
                                                    if r["gold"] == "supported" and r["checkable"]]),
            "p50_ms": round(percentile([r["ms"] for r in mine], 50), 1),
        }
    counts = {"perturbed": sum(p.label == "refuted" and decidable.get(p.id, False) for p in pairs),
              "original": sum(p.label == "supported" and decidable.get(p.id, False) for p in pairs)}
    return {"methods": methods, "pairs": len(pairs), "checkable": counts, "kept_bound": kept_bound(pairs)}, records


# -------------------------------------------------------------------------------- eval answers


def as_sentence(question: str, answer: str) -> str:
    """A question and a short answer as one statement (a plain template, no rewriting)."""
    q = question.strip().rstrip("?").strip()
    a = answer.strip().rstrip(".")
    return f"The answer to the question \"{q}\" is {a}."


def length_matched(right: str, hallucinated: str, ratio: float = 1.5) -> bool:
    """Whether two answers are of comparable length (longer ≤ ratio × shorter, in words)."""
    a, b = len(right.split()), len(hallucinated.split())
    return max(a, b) <= ratio * max(1, min(a, b))


def run_answers(
    rows: Sequence[Mapping[str, str]],
    verifier: Verifier,
    embedder,
    settings,
    *,
    workdir: str | Path,
) -> tuple[dict, list[dict]]:
    """HaluEval end to end: each row's knowledge is indexed into its own small store, evidence is
    retrieved for each answer (as written and as a full sentence), and the verifier decides.

    Reports how often the hallucinated answer is flagged, the right one is flagged, and the pair is
    told apart (hallucinated flagged and right not), on all pairs and on length-matched pairs."""
    from pipeline.evidence import kb_evidence
    from pipeline.index import index_documents
    from pipeline.store import EmbeddedStore

    records = []
    for n, row in enumerate(rows):
        store = EmbeddedStore(Path(workdir) / f"halueval-{n}.db")
        try:
            doc = Document(id=f"halueval:{n}", source="halueval", title=row["question"][:80],
                           text=row["knowledge"], path=f"halueval#{n}")
            index_documents(store, embedder, "halueval", [doc], chunk_size=settings.chunk_size,
                            chunk_overlap=settings.chunk_overlap)
            for form in ("written", "sentence"):
                flagged = {}
                t0 = time.perf_counter()
                for which in ("right_answer", "hallucinated_answer"):
                    claim = row[which] if form == "written" else as_sentence(row["question"], row[which])
                    evidence = kb_evidence(claim, store=store, embedder=embedder, settings=settings,
                                           k=settings.evidence_k)
                    flagged[which] = verifier(claim, evidence).flagged
                records.append({"row": n, "form": form, "right_flagged": flagged["right_answer"],
                                "hallucinated_flagged": flagged["hallucinated_answer"],
                                "matched": length_matched(row["right_answer"], row["hallucinated_answer"]),
                                "ms": (time.perf_counter() - t0) * 1000 / 2})
        finally:
            store.close()
            for suffix in ("", "-wal", "-shm"):
                Path(str(store.path) + suffix).unlink(missing_ok=True)

    def figures(subset: list[dict]) -> dict[str, Any]:
        if not subset:
            return {"pairs": 0}
        return {
            "pairs": len(subset),
            "hallucinated_flagged": round(sum(r["hallucinated_flagged"] for r in subset) / len(subset), 4),
            "right_flagged": round(sum(r["right_flagged"] for r in subset) / len(subset), 4),
            "told_apart": round(sum(r["hallucinated_flagged"] and not r["right_flagged"] for r in subset) / len(subset), 4),
            "p50_ms": round(percentile([r["ms"] for r in subset], 50), 1),
        }

    forms = {form: {"all": figures([r for r in records if r["form"] == form]),
                    "length_matched": figures([r for r in records if r["form"] == form and r["matched"]])}
             for form in ("written", "sentence")}
    return {"forms": forms, "pairs": len(rows)}, records


# --------------------------------------------------------------------------------- eval golden


def matches(hit_keys: Iterable[str], relevant: str) -> bool:
    """Whether a golden-set `relevant` entry names this hit (document id, path, URL or source, or a
    path suffix such as "guide/setup.md")."""
    relevant = relevant.strip()
    for key in hit_keys:
        if key and (key == relevant or key.endswith("/" + relevant) or key.endswith(":" + relevant)):
            return True
    return False


def run_golden(
    rows: Sequence[Mapping[str, Any]], core, store, embedder, settings, *, k: int | None = None, cross_encoder=None,
) -> tuple[dict, list[dict]]:
    """Recall@k of each question's relevant sources in the current index, and the rate of
    "I don't know" answers where an expected answer exists (asked through `core.ask`)."""
    from pipeline.retrieve import retrieve
    from pipeline.types import Question

    k = k or settings.top_k
    records = []
    for row in rows:
        relevant = [str(r) for r in row.get("relevant", [])]
        hits = retrieve(row["question"], store=store, embedder=embedder, settings=settings, k=k,
                        cross_encoder=cross_encoder)
        keys = [(h.chunk.doc_id, h.chunk.path, h.chunk.url, h.chunk.source) for h in hits]
        found = [r for r in relevant if any(matches(kk, r) for kk in keys)]
        record = {"question": row["question"], "relevant": len(relevant), "found": len(found),
                  "recall": len(found) / len(relevant) if relevant else None, "idk": None}
        if row.get("expected_answer") and core is not None:
            t0 = time.perf_counter()
            answer = core.ask(Question(text=row["question"], platform="eval"))
            record |= {"idk": bool(answer.idk), "ms": (time.perf_counter() - t0) * 1000}
        records.append(record)
    recalls = [r["recall"] for r in records if r["recall"] is not None]
    idks = [r["idk"] for r in records if r["idk"] is not None]
    summary = {
        f"recall@{k}": round(float(np.mean(recalls)), 4) if recalls else None,
        "idk_rate": round(sum(idks) / len(idks), 4) if idks else None,
        "questions": len(records),
        "with_expected_answer": len(idks),
    }
    return summary, records


# --------------------------------------------------------------------------------------- plots


def plot_scores(records: Sequence[Mapping[str, Any]], path: str | Path, title: str = "") -> Path:
    """Histogram of verifier confidence for gold-supported vs other claims, one panel per method."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    methods = list(dict.fromkeys(r["method"] for r in records))
    fig, axes = plt.subplots(1, max(1, len(methods)), figsize=(5 * max(1, len(methods)), 3.5), squeeze=False)
    for ax, method in zip(axes[0], methods, strict=False):
        for gold, colour in (("supported", "tab:green"), ("refuted", "tab:red"), ("nei", "tab:grey"), ("partial", "tab:orange")):
            values = [r["confidence"] for r in records if r["method"] == method and r["gold"] == gold]
            if values:
                ax.hist(values, bins=20, range=(0, 1), alpha=0.55, color=colour, label=f"{gold} ({len(values)})")
        ax.set_title(f"{method}")
        ax.set_xlabel("confidence")
        ax.legend(fontsize=8)
    fig.suptitle(title or "verifier confidence by gold label")
    fig.tight_layout()
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out


def plot_latency(series: Mapping[str, Sequence[float]], path: str | Path, title: str = "latency") -> Path:
    """Box plot of latencies (ms) per named series (retrieval variant, verifier method, stage)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = [n for n, v in series.items() if len(v)]
    fig, ax = plt.subplots(figsize=(1.6 * max(3, len(names)) + 2, 3.5))
    ax.boxplot([list(series[n]) for n in names], showfliers=False)
    ax.set_xticks(range(1, len(names) + 1), names, rotation=20)
    ax.set_ylabel("ms")
    ax.set_title(title)
    fig.tight_layout()
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out

