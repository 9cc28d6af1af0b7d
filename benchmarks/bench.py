"""Benchmark ravbot on this machine: per-stage latency of full questions on ~5k and ~50k chunk corpora,
indexing throughput against the model's raw embedding throughput, and peak memory.

    .venv/bin/python benchmarks/bench.py                       # 5k and 50k chunks, 20 questions each
    .venv/bin/python benchmarks/bench.py --sizes 5000 --questions 10 --json out.json

Corpora are built from SciFact (`../shared/data/scifact`). A sample of real abstracts is chunked
and embedded for real (that is the throughput measurement); the ~5k / ~50k chunk corpora are then
synthesised from those chunks: each synthetic chunk mixes the sentences of two real chunks and its
vector is the normalised sum of theirs plus noise. Search cost (numpy over N×384, FTS5 over N
chunks), verification and memory then scale as with real text, without hours of embedding on a
laptop CPU; `--real` embeds every chunk instead (slow: ~20 chunks/s on 2 cores). Each corpus size
runs in its own process so that its peak RSS is its own. See benchmarks/README.md.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
SCIFACT = ROOT.parent / "shared" / "data" / "scifact"
STAGES = ("retrieve", "generate", "claims", "evidence", "verify", "correct", "total")


def peak_rss_mb() -> float:
    """Peak resident memory of this process so far (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def scifact_documents(limit: int | None = None, skip: int = 0):
    from pipeline.evaluate import corpus_documents, load_corpus

    corpus = load_corpus(SCIFACT / "corpus.jsonl")
    items = list(corpus.items())[skip: None if limit is None else skip + limit]
    return corpus_documents(dict(items), "bench")


def throughput(embedder, settings, docs) -> dict:
    """Raw embedding throughput (chunks/s and sentences/s) against index_documents on the same chunks."""
    from pipeline.chunking import chunk_document, split_sentences
    from pipeline.index import index_documents
    from pipeline.store import EmbeddedStore

    chunks = [c for d in docs for c in chunk_document(d, settings.chunk_size, settings.chunk_overlap)]
    texts = [c.context_text for c in chunks]
    sentences = [s for d in docs[:60] for s in split_sentences(d.text)][:600]
    embedder.encode(texts[:8])  # load and warm the model
    t0 = time.perf_counter()
    embedder.encode(texts)
    raw = len(texts) / (time.perf_counter() - t0)
    t0 = time.perf_counter()
    embedder.encode(sentences)
    raw_sentences = len(sentences) / (time.perf_counter() - t0)
    with tempfile.TemporaryDirectory() as tmp:
        store = EmbeddedStore(Path(tmp) / "throughput.sqlite")
        t0 = time.perf_counter()
        index_documents(store, embedder, "bench", docs, chunk_size=settings.chunk_size, chunk_overlap=settings.chunk_overlap)
        indexed = len(chunks) / (time.perf_counter() - t0)
        t0 = time.perf_counter()
        counts = index_documents(store, embedder, "bench", docs, chunk_size=settings.chunk_size,
                                 chunk_overlap=settings.chunk_overlap)
        reindex_s = time.perf_counter() - t0
        store.close()
    return {"documents": len(docs), "chunks": len(chunks), "raw_chunks_per_s": round(raw, 1),
            "raw_sentences_per_s": round(raw_sentences, 1), "index_chunks_per_s": round(indexed, 1),
            "index_vs_raw": round(indexed / raw, 3), "unchanged_reindex_s": round(reindex_s, 2),
            "unchanged_reindex_counts": counts}


def build_corpus(store, embedder, settings, target_chunks: int, real: bool, seed: int = 0) -> dict:
    """Fill `store` with ~target_chunks chunks (see the module docstring); returns what was built."""
    from pipeline.chunking import chunk_document, context_text, split_sentences
    from pipeline.index import index_documents
    from pipeline.types import Chunk, Document, content_hash

    t0 = time.perf_counter()
    if real:
        docs, chunks = [], 0
        for d in scifact_documents():
            docs.append(d)
            chunks += len(chunk_document(d, settings.chunk_size, settings.chunk_overlap))
            if chunks >= target_chunks:
                break
        index_documents(store, embedder, "bench", docs, chunk_size=settings.chunk_size, chunk_overlap=settings.chunk_overlap)
        return {"chunks": store.counts()["chunks"], "synthetic": False, "build_s": round(time.perf_counter() - t0, 1)}

    # the real part: the first abstracts, embedded for real (so questions about them find them)
    seed_docs = scifact_documents(limit=min(300, target_chunks // 3))
    index_documents(store, embedder, "bench", seed_docs, chunk_size=settings.chunk_size, chunk_overlap=settings.chunk_overlap)
    base = [c for d in seed_docs for c in chunk_document(d, settings.chunk_size, settings.chunk_overlap)]
    vectors = store.vectors([c.id for c in base])
    rng = random.Random(seed)
    noise = np.random.default_rng(seed)
    build = store.begin("synthetic")
    try:
        made, n_doc = store.counts()["chunks"], 0
        while made < target_chunks:
            n_doc += 1
            doc = Document(id=f"synthetic:{n_doc}", source="synthetic", title=f"Synthetic study {n_doc}",
                           text=str(n_doc), path=f"synthetic/{n_doc}.md")
            parts = []
            for position in range(rng.randint(2, 4)):
                a, b = rng.sample(base, 2)
                sents = split_sentences(a.text)[:3] + split_sentences(b.text)[:3]
                rng.shuffle(sents)
                text = " ".join(sents)
                ctx = context_text(doc.title, (), text)
                v = vectors[a.id] + vectors[b.id] + noise.normal(0, 0.05, vectors[a.id].shape).astype(np.float32)
                parts.append((Chunk(id=content_hash(f"{doc.id}\n{position}\n{ctx}"), doc_id=doc.id, text=text,
                                    context_text=ctx, title=doc.title, source="synthetic", path=doc.path,
                                    position=position, doc_hash=doc.hash), v / np.linalg.norm(v)))
            build.add(doc, [c for c, _ in parts], np.vstack([v for _, v in parts]))
            made += len(parts)
        build.commit()
    except BaseException:
        build.abort()
        raise
    return {"chunks": store.counts()["chunks"], "synthetic": True, "real_documents": len(seed_docs),
            "build_s": round(time.perf_counter() - t0, 1)}


def questions(n: int, seed: int = 0) -> list[str]:
    """SciFact train claims turned into questions, half about the embedded abstracts."""
    from pipeline.evaluate import load_qrels, load_queries

    qrels = load_qrels(SCIFACT / "qrels_train.tsv")
    queries = load_queries(SCIFACT / "claims_train.jsonl")
    ids = [q for q in queries if q in qrels]
    random.Random(seed).shuffle(ids)
    return [f"Is it true that {queries[q].rstrip('.')}?" for q in ids[:n]]


def one_size(target: int, n_questions: int, real: bool, data_dir: Path) -> dict:
    """Build one corpus and time full questions through the app; runs in its own process."""
    from bot.app import build
    from config.settings import load_settings
    from pipeline.evaluate import percentile
    from pipeline.types import Question

    settings = load_settings(env={}, data_dir=str(data_dir), wikipedia="off", llm_base_url="", sources="")
    app = build(settings, run_scheduler=False)
    try:
        built = build_corpus(app.parts.store, app.parts.embedder, settings, target, real)
        rss_built = peak_rss_mb()
        asked = questions(n_questions)
        app.ask(Question(text=asked[0]))  # warm: spaCy, verifier, store matrix
        per_stage: dict[str, list[float]] = {s: [] for s in STAGES}
        idk = 0
        for q in asked:
            t0 = time.perf_counter()
            answer = app.ask(Question(text=q))
            total = (time.perf_counter() - t0) * 1000
            idk += answer.idk
            for stage in STAGES[:-1]:
                per_stage[stage].append(answer.timings.get(stage, 0.0))
            per_stage["total"].append(total)
        stages = {s: {"p50_ms": round(percentile(v, 50), 1), "p95_ms": round(percentile(v, 95), 1),
                      "share_of_total": round(float(np.sum(v) / max(1e-9, np.sum(per_stage["total"]))), 3)}
                  for s, v in per_stage.items()}
    finally:
        app.close()
    return {"target_chunks": target, **built, "questions": len(asked), "idk": idk, "stages": stages,
            "samples_ms": {s: [round(x, 1) for x in v] for s, v in per_stage.items()},
            "peak_rss_mb": {"after_build": round(rss_built, 1), "after_questions": round(peak_rss_mb(), 1)}}


def main(argv: list[str] | None = None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sizes", default="5000,50000", help="Corpus sizes in chunks.")
    p.add_argument("--questions", type=int, default=20)
    p.add_argument("--throughput-docs", type=int, default=200, help="Abstracts embedded for the throughput figures.")
    p.add_argument("--real", action="store_true", help="Embed every chunk for real (slow).")
    p.add_argument("--json", dest="json_out", default="", help="Also write the results to this file.")
    p.add_argument("--plot", dest="plot_dir", default="", help="Save per-stage latency box plots (PNG) here.")
    p.add_argument("--one-size", type=int, default=0, help=argparse.SUPPRESS)
    p.add_argument("--data-dir", default="", help=argparse.SUPPRESS)
    args = p.parse_args(argv)

    if args.one_size:  # child process: one corpus size, result as JSON on stdout
        print(json.dumps(one_size(args.one_size, args.questions, args.real, Path(args.data_dir))))
        return {}

    from config.settings import load_settings
    from pipeline.embed import load_embedder

    settings = load_settings(env={})
    embedder = load_embedder(settings.embedding_model)
    results: dict = {"machine": {"cpus": os.cpu_count(), "torch_threads": _torch_threads()}}
    print(f"throughput on {args.throughput_docs} SciFact abstracts ...", file=sys.stderr)
    results["throughput"] = throughput(embedder, settings, scifact_documents(limit=args.throughput_docs))
    results["throughput"]["peak_rss_mb"] = round(peak_rss_mb(), 1)
    results["corpora"] = []
    for size in [int(s) for s in args.sizes.split(",") if s.strip()]:
        print(f"corpus of ~{size} chunks ...", file=sys.stderr)
        with tempfile.TemporaryDirectory(prefix="ravbot-bench-") as tmp:
            cmd = [sys.executable, __file__, "--one-size", str(size), "--questions", str(args.questions),
                   "--data-dir", tmp] + (["--real"] if args.real else [])
            out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
            results["corpora"].append(json.loads(out.strip().splitlines()[-1]))
    _ratios(results)
    print(report(results))
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(results, indent=2))
    if args.plot_dir:
        from pipeline.evaluate import plot_latency

        for c in results["corpora"]:
            plot_latency(c["samples_ms"], Path(args.plot_dir) / f"stages_{c['chunks']}.png",
                         f"per-stage latency of a full question, {c['chunks']} chunks")
    return results


def _torch_threads() -> int:
    import torch

    return torch.get_num_threads()


def _ratios(results: dict) -> None:
    corpora = results["corpora"]
    if len(corpora) >= 2:
        small, large = corpora[0], corpora[-1]
        results["scaling"] = {
            "chunks_ratio": round(large["chunks"] / small["chunks"], 1),
            "p50_ratio_by_stage": {s: round(large["stages"][s]["p50_ms"] / small["stages"][s]["p50_ms"], 2)
                                   for s in STAGES if small["stages"][s]["p50_ms"] > 0},
            "rss_ratio": round(large["peak_rss_mb"]["after_questions"] / small["peak_rss_mb"]["after_questions"], 2),
        }


def report(results: dict) -> str:
    t = results["throughput"]
    lines = [f"machine: {results['machine']['cpus']} CPUs, torch threads {results['machine']['torch_threads']}",
             f"raw embedding: {t['raw_chunks_per_s']} chunks/s, {t['raw_sentences_per_s']} sentences/s; "
             f"index_documents: {t['index_chunks_per_s']} chunks/s = {t['index_vs_raw']:.0%} of raw "
             f"({t['chunks']} chunks of {t['documents']} abstracts); unchanged reindex {t['unchanged_reindex_s']} s", ""]
    for c in results["corpora"]:
        lines.append(f"corpus {c['chunks']} chunks ({'synthetic' if c['synthetic'] else 'real'}, built in {c['build_s']} s), "
                     f"{c['questions']} questions, {c['idk']} I-don't-know; peak RSS {c['peak_rss_mb']['after_questions']} MB")
        lines.append(f"  {'stage':10} {'p50 ms':>9} {'p95 ms':>9} {'share':>7}")
        for s in STAGES:
            f = c["stages"][s]
            lines.append(f"  {s:10} {f['p50_ms']:9.1f} {f['p95_ms']:9.1f} {f['share_of_total']:7.1%}")
    if "scaling" in results:
        sc = results["scaling"]
        lines.append(f"\n×{sc['chunks_ratio']} chunks → p50 ×: " + ", ".join(f"{s} {r}" for s, r in sc["p50_ratio_by_stage"].items())
                     + f"; peak RSS ×{sc['rss_ratio']}")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
