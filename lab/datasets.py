"""Data set loaders: each open data set's native format read into `Pair`, the one record type of the
lab (claim, gold evidence sentences, gold label), plus the BEIR-style corpus/queries/qrels readers and
the JSONL helpers every runner and trainer uses."""

from __future__ import annotations

import csv
import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pipeline.types import Document

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



def write_jsonl(path: str | Path, records: Iterable[Mapping[str, Any]]) -> int:
    """Write one JSON object a line; returns the number written."""
    n = 0
    with Path(path).open("w", encoding="utf-8") as f:
        for record in records:
            f.write(json.dumps(record, ensure_ascii=False) + "\n")
            n += 1
    return n



def corpus_documents(corpus: Mapping[str, tuple[str, str]], source: str) -> list[Document]:
    """Corpus entries as Documents with id `<source>:<corpus id>`."""
    return [Document(id=f"{source}:{cid}", source=source, title=title, text=text, path=cid)
            for cid, (title, text) in corpus.items()]

