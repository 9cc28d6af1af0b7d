"""Runners, one per `ravbot eval` subcommand (retrieval, verify, perturb, answers, golden): each takes
loaded data and the parts under test and returns `(summary, rows)`: `summary` is the JSON object the
CLI prints, `rows` the per-item records that plots are drawn from."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from lab.datasets import Pair, corpus_documents, load_corpus
from lab.metrics import (
    binary_metrics,
    confusion,
    first_occurrence,
    flag_recall,
    is_judged,
    mrr_at_k,
    ndcg_at_k,
    percentile,
    recall_at_k,
)
from lab.perturb import checkable, kept_bound
from pipeline.types import Claim, Document, Evidence, Label, Verdict, content_hash

# ---------------------------------------------------------------------------------- the indexes


def corpus_store(corpus_path: str | Path, embedder, settings, *, progress: Callable[[int, int], None] | None = None):
    """An EmbeddedStore holding `corpus_path`, cached under `<data dir>/eval/` so that a second run
    embeds nothing. Returns (store, source name, {document id: corpus id})."""
    from pipeline.embed import same_vectors
    from pipeline.index import index_documents
    from pipeline.store import EmbeddedStore

    path = Path(corpus_path).resolve()
    stat = path.stat()
    vectors = same_vectors(getattr(embedder, "backend", "") or "torch")  # an int8 index is not torch's
    key = content_hash(f"{path}|{stat.st_size}|{stat.st_mtime_ns}|{settings.chunk_size}|"
                       f"{settings.chunk_overlap}|{getattr(embedder, 'name', '')}|{vectors}")
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
    from bot.app import stage_options
    from pipeline.retrieve import retrieve

    judged = [(qid, text) for qid, text in queries.items() if is_judged(qrels.get(qid, {}))]
    if not judged:
        raise ValueError("no query has a relevance judgement: check that query ids match the qrels")
    options = stage_options(settings).retrieval
    n = options.candidates if candidates is None else candidates
    retrieve(judged[0][1], store=store, embedder=embedder, options=options, k=1)  # warm up
    vectors = embedder.encode([text for _, text in judged])  # for the untimed deep calls
    summary: dict[str, Any] = {"variants": {}, "queries": len(judged)}
    rows = []
    for variant in variants:
        scores: dict[str, list[float]] = {m: [] for m in ("ndcg@10", "recall@5", "recall@20", "recall@100", "mrr@10")}
        times = []
        for (qid, text), vector in zip(judged, vectors, strict=True):
            t0 = time.perf_counter()
            hits = retrieve(text, store=store, embedder=embedder, options=options, variant=variant,
                            k=2 * n, candidates=n)
            times.append((time.perf_counter() - t0) * 1000)
            ranked = first_occurrence(doc_of(h.chunk.doc_id) for h in hits)
            deep = retrieve(text, store=store, embedder=embedder, options=options, variant=variant,
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
        if nlp is None:
            from pipeline.claims import load_nlp

            nlp = load_nlp()
        doc = nlp(text)
        entities = tuple((e.text, e.label_) for e in doc.ents if e.label_ in types)
    return Claim(text=text, start=0, end=len(text), entities=entities)


def make_verifier(method: str, embedder, settings) -> Verifier:
    """One claim against its evidence with `pipeline.verify.verify_claims` and the given method, with
    the options and trained verifier the bot builds from `settings`."""
    from bot.app import build_verifier, stage_options
    from pipeline import verify

    options = stage_options(settings)
    verifier = build_verifier(settings)

    def check(claim: str, evidence: Sequence[Evidence]) -> Verdict:
        verdicts = verify.verify_claims([make_claim(claim, options.entity_types)], [list(evidence)], method=method,
                                        embedder=embedder, options=options.verification, verifier=verifier)
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
    from bot.app import stage_options
    from pipeline.evidence import kb_evidence

    options = stage_options(settings)

    def gather(pair: Pair) -> list[Evidence]:
        return list(kb_evidence(pair.claim, store=store, embedder=embedder, options=options.retrieval,
                                k=k or options.evidence_k))

    return gather



# -------------------------------------------------------------------------------- eval perturb


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
    from bot.app import stage_options
    from pipeline.evidence import kb_evidence
    from pipeline.index import index_documents
    from pipeline.store import EmbeddedStore

    options = stage_options(settings)
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
                    evidence = kb_evidence(claim, store=store, embedder=embedder, options=options.retrieval,
                                           k=options.evidence_k)
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
    from bot.app import stage_options
    from pipeline.retrieve import retrieve
    from pipeline.types import Question

    options = stage_options(settings).retrieval
    k = k or options.top_k
    records = []
    for row in rows:
        relevant = [str(r) for r in row.get("relevant", [])]
        hits = retrieve(row["question"], store=store, embedder=embedder, options=options, k=k,
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

