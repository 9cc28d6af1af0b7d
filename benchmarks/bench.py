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
runs in its own process so that its peak RSS is its own.

The store-write section (`--store-sizes`) writes synthetic chunks with vectors given (no model) into one
`EmbeddedStore` build and reports chunks/s at each index size; `--compare-code DIR` runs it on another
copy of the code too (e.g. `git archive HEAD | tar -x -C DIR`), in the same run. See benchmarks/README.md.
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
sys.path.insert(0, os.environ.get("RAVBOT_BENCH_CODE") or str(ROOT))  # `--compare-code` runs another copy
SCIFACT = ROOT.parent / "shared" / "data" / "scifact"
STAGES = ("retrieve", "generate", "claims", "evidence", "verify", "correct", "total")


def peak_rss_mb() -> float:
    """Peak resident memory of this process so far (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def scifact_documents(limit: int | None = None, skip: int = 0):
    from lab.datasets import corpus_documents, load_corpus

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
        with_sentences = _index_with_sentences(embedder, settings, docs, Path(tmp), len(chunks))
    return {"documents": len(docs), "chunks": len(chunks), "raw_chunks_per_s": round(raw, 1),
            "raw_sentences_per_s": round(raw_sentences, 1), "index_chunks_per_s": round(indexed, 1),
            "index_vs_raw": round(indexed / raw, 3), "unchanged_reindex_s": round(reindex_s, 2),
            "unchanged_reindex_counts": counts,
            **({"with_sentence_vectors": {**with_sentences, "index_vs_raw": round(with_sentences["index_chunks_per_s"] / raw, 3)}}
               if with_sentences else {})}


def _index_with_sentences(embedder, settings, docs, tmp: Path, n_chunks: int) -> dict:
    """`index_documents` as the app runs it by default: chunks, then their sentences (`sentence_vectors`);
    {} on code without sentence vectors (`--compare-code`, an older checkout)."""
    try:
        from pipeline.sentence_vectors import SentenceVectors
    except ImportError:
        return {}
    from pipeline.index import index_documents
    from pipeline.store import EmbeddedStore

    store = EmbeddedStore(tmp / "with-sentences.sqlite")
    vectors = SentenceVectors(tmp / "sentences.sqlite", "bench", max(1, settings.sentence_vectors))
    t0 = time.perf_counter()
    index_documents(store, embedder, "bench", docs, chunk_size=settings.chunk_size,
                    chunk_overlap=settings.chunk_overlap, sentence_vectors=vectors)
    seconds = time.perf_counter() - t0
    rows = vectors.count()
    vectors.close()
    store.close()
    mb = sum(f.stat().st_size for f in tmp.glob("sentences.sqlite*")) / 1e6
    return {"index_chunks_per_s": round(n_chunks / seconds, 1), "sentences": rows,
            "sentences_per_chunk": round(rows / max(1, n_chunks), 1), "file_mb": round(mb, 1)}


def backends(settings, docs, names: list[str]) -> list[dict]:
    """Raw embedding throughput of each embedding backend on the same chunk texts, and how close its
    vectors are to torch's (cosine, min and mean over the chunks)."""
    from pipeline.chunking import chunk_document
    from pipeline.embed import Embedder

    texts = [c.context_text for d in docs for c in chunk_document(d, settings.chunk_size, settings.chunk_overlap)]
    out, reference = [], None
    for name in ["torch", *[n for n in names if n != "torch"]]:
        embedder = Embedder(settings.embedding_model, name, settings.data_path / "models")
        t0 = time.perf_counter()
        embedder.encode(texts[:8])  # load (and for onnx, export once) and warm
        load_s = time.perf_counter() - t0
        usage0, t0 = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
        vectors = embedder.encode(texts)
        seconds, usage1 = time.perf_counter() - t0, resource.getrusage(resource.RUSAGE_SELF)
        reference = vectors if reference is None else reference
        cosine = np.sum(reference * vectors, axis=1)
        out.append({"backend": name, "backend_used": embedder.backend_used, "chunks": len(texts),
                    "chunks_per_s": round(len(texts) / seconds, 1), "load_s": round(load_s, 1),
                    "cosine_to_torch_min": round(float(cosine.min()), 4), "cosine_to_torch_mean": round(float(cosine.mean()), 4),
                    "user_s": round(usage1.ru_utime - usage0.ru_utime, 1), "sys_s": round(usage1.ru_stime - usage0.ru_stime, 1),
                    "load_average": os.getloadavg()})
        print(f"  {name}: {out[-1]['chunks_per_s']} chunks/s", file=sys.stderr)
    return out


def _synthetic_writes(rng: np.random.Generator, vocab: list[str], first_doc: int, n_docs: int, dim: int = 384):
    """`n_docs` synthetic documents of 3 chunks each (~110 Zipf-distributed words per chunk, random unit
    vectors), ready for `IndexBuild.add`; made before the clock starts."""
    from pipeline.types import Chunk, Document, content_hash

    out = []
    vectors = rng.standard_normal((n_docs * 3, dim)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    words = rng.zipf(1.2, size=n_docs * 3 * 110) % len(vocab)
    for d in range(n_docs):
        n = first_doc + d
        doc = Document(id=f"writes:{n}", source="writes", title=f"Document {n}", text=str(n), path=f"writes/{n}.md")
        chunks = []
        for position in range(3):
            k = (d * 3 + position) * 110
            text = " ".join(vocab[i] for i in words[k:k + 110])
            ctx = f"{doc.title}\n{text}"
            chunks.append(Chunk(id=content_hash(f"{doc.id}\n{position}\n{ctx}"), doc_id=doc.id, text=text,
                                context_text=ctx, title=doc.title, source="writes", path=doc.path,
                                position=position, doc_hash=doc.hash))
        out.append((doc, chunks, vectors[d * 3:(d + 1) * 3]))
    return out


def store_writes(sizes: list[int], budget_s: float, seed: int = 0) -> dict:
    """Store write throughput with vectors given (no model): one `EmbeddedStore` build grows to each size
    in `sizes`; the chunks/s figure at size S is timed over the last window of chunks before S (a tenth
    of S, at least 1,000). Sizes not reached within `budget_s` are reported as not reached. Runs in
    whatever code `pipeline` resolves to (see `--compare-code`)."""
    import pipeline.store
    from pipeline.store import EmbeddedStore

    rng = np.random.default_rng(seed)
    vocab = _vocabulary(rng)
    points: list[dict] = []
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="ravbot-writes-") as tmp:
        store = EmbeddedStore(Path(tmp) / "writes.sqlite")
        build = store.begin("writes")
        flush = getattr(build, "flush", lambda: None)  # the batching store buffers; time its writes too
        written, n_doc, last = 0, 0, {}

        def write(n_chunks: int) -> float:
            nonlocal written, n_doc
            seconds = 0.0
            while n_chunks > 0:
                if time.perf_counter() - started > budget_s:
                    raise TimeoutError
                items = _synthetic_writes(rng, vocab, n_doc, min(500, -(-n_chunks // 3)))
                t0 = time.perf_counter()
                for item in items:
                    build.add(*item)
                seconds += time.perf_counter() - t0
                last.update(size=written + 3 * len(items), chunks_per_s=round(3 * len(items) / (time.perf_counter() - t0), 1))
                n_doc += len(items)
                written += 3 * len(items)
                n_chunks -= 3 * len(items)
            t0 = time.perf_counter()
            flush()
            return seconds + time.perf_counter() - t0

        try:
            for size in sorted(sizes):
                window = min(size, max(1000, size // 10))
                try:
                    write(size - window - written)
                    before = written
                    seconds = write(size - written)
                except TimeoutError:  # the rate of the last batch written, at the size reached
                    points.append({"size": size, "reached": False, "last": dict(last)})
                    continue
                points.append({"size": written, "reached": True, "window_chunks": written - before,
                               "chunks_per_s": round((written - before) / seconds, 1)})
                print(f"  store writes at {written:,} chunks: {points[-1]['chunks_per_s']:,.0f} chunks/s "
                      f"({time.perf_counter() - started:.0f} s so far)", file=sys.stderr)
            t0 = time.perf_counter()
            build.commit()
            commit_s = time.perf_counter() - t0
        except BaseException:
            build.abort()
            raise
        finally:
            store.close()
        size_mb = sum(f.stat().st_size for f in Path(tmp).iterdir()) / 1e6
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return {"code": str(Path(pipeline.store.__file__).resolve().parent.parent), "points": points,
            "chunks": written, "commit_s": round(commit_s, 2), "file_mb": round(size_mb, 1),
            "total_s": round(time.perf_counter() - started, 1), "user_s": round(usage.ru_utime, 1),
            "sys_s": round(usage.ru_stime, 1)}


def scale_build(size: int, data_dir: Path, seed: int = 0) -> dict:
    """Child process: an `EmbeddedStore` of `size` synthetic chunks with vectors given (the store-write
    section's documents), committed to `data_dir`; what it took."""
    from pipeline.store import EmbeddedStore

    rng = np.random.default_rng(seed)
    vocab = _vocabulary(rng)
    t0 = time.perf_counter()
    store = EmbeddedStore(data_dir / "scale.sqlite")
    build = store.begin("scale")
    written = 0
    try:
        while written < size:
            for item in _synthetic_writes(rng, vocab, written // 3, min(2000, -(-(size - written) // 3))):
                build.add(*item)
                written += 3
        build.commit()
    except BaseException:
        build.abort()
        raise
    finally:
        store.close()
    return {"chunks": written, "build_s": round(time.perf_counter() - t0, 1),
            "file_mb": round(sum(f.stat().st_size for f in data_dir.glob("scale.sqlite*")) / 1e6, 1)}


def scale_serve(data_dir: Path, n_queries: int, seed: int = 1) -> dict:
    """Child process: searches of the store `scale_build` left in `data_dir`, in a fresh process (as a bot
    serves it): loading the dense matrix, dense search, BM25 and the whole hybrid retrieval (both, fused
    and reranked), p50/p95 over `n_queries` random queries of 2-6 words, and the peak RSS from the store's
    opening on (the model, not loaded here, adds its own)."""
    from config.settings import load_settings
    from lab.metrics import percentile
    from pipeline.retrieve import RetrieveOptions, retrieve
    from pipeline.store import EmbeddedStore

    rng = np.random.default_rng(seed)
    vocab = _vocabulary(np.random.default_rng(0))  # the words the chunks were written with
    s = load_settings(env={})  # `bot.app.stage_options` would import the model's libraries into the measured process
    options = RetrieveOptions(top_k=s.top_k, candidates=s.candidates, rrf_k=s.rrf_k, rerank_weight=s.rerank_weight,
                              weaviate_fusion=s.weaviate_fusion)
    rss_start = _reset_peak_rss()
    store = EmbeddedStore(data_dir / "scale.sqlite")
    try:
        t0 = time.perf_counter()
        store.dense_search(np.ones(384, dtype=np.float32) / np.sqrt(384), 1)  # loads the matrix
        load_s = time.perf_counter() - t0
        vectors = rng.standard_normal((n_queries, 384)).astype(np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        texts = [" ".join(vocab[i % len(vocab)] for i in rng.zipf(1.2, size=int(rng.integers(2, 7)))) for _ in range(n_queries)]
        timed: dict[str, list[float]] = {"dense": [], "bm25": [], "retrieve": []}
        searches = {"dense": lambda v, t: store.dense_search(v, options.candidates),
                    "bm25": lambda v, t: store.bm25_search(t, options.candidates),
                    "retrieve": lambda v, t: retrieve(t, store=store, embedder=None, options=options, query_vector=v)}
        for vector, text in zip(vectors, texts, strict=True):
            for name, search in searches.items():
                t0 = time.perf_counter()
                search(vector, text)
                timed[name].append((time.perf_counter() - t0) * 1000)
        chunks = store.counts()["chunks"]
    finally:
        store.close()
    return {"chunks": chunks, "matrix_load_s": round(load_s, 2),
            **{f"{k}_ms": {"p50": round(percentile(v, 50), 1), "p95": round(percentile(v, 95), 1)} for k, v in timed.items()},
            "peak_rss_mb": round(_status_mb("VmHWM"), 1), "rss_at_start_mb": round(rss_start, 1)}


def _status_mb(field: str) -> float:
    """A memory figure of this process from /proc/self/status (VmRSS: now, VmHWM: peak), in MB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    return 0.0


def _reset_peak_rss() -> float:
    """Start counting the peak RSS from now (Linux: `5` to /proc/self/clear_refs); returns the RSS now.
    Imports peak higher than a small store needs, so the peak is counted from after them."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        pass
    return _status_mb("VmRSS")


def _vocabulary(rng: np.random.Generator) -> list[str]:
    letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))
    return ["".join(rng.choice(letters, size=int(rng.integers(3, 11)))) for _ in range(30_000)]


def scale(sizes: list[int], n_queries: int, codes: list[str]) -> list[dict]:
    """Each size built once (vectors given, no model), then served by each copy of the code in `codes`
    in a fresh process: the store's search latency and memory at sizes no real corpus here reaches."""
    out = []
    for size in sizes:
        with tempfile.TemporaryDirectory(prefix="ravbot-scale-") as tmp:
            print(f"scale: building {size:,} chunks ...", file=sys.stderr)
            built = _child(["--scale-build", str(size), "--data-dir", tmp], str(ROOT))
            for code in codes:
                print(f"scale: serving {size:,} chunks, code in {code} ...", file=sys.stderr)
                served = _child(["--scale-serve", "--data-dir", tmp, "--questions", str(n_queries)], code)
                out.append({"size": size, "code": code, **built, **served})
    return out


def _child(args: list[str], code: str) -> dict:
    env = {**os.environ, "PYTHONPATH": code, "RAVBOT_BENCH_CODE": code}
    done = subprocess.run([sys.executable, __file__, *args], check=True, stdout=subprocess.PIPE, text=True, env=env)
    return json.loads(done.stdout.strip().splitlines()[-1])


def build_corpus(store, embedder, settings, target_chunks: int, real: bool, seed: int = 0, sentence_vectors=None) -> dict:
    """Fill `store` with ~target_chunks chunks (see the module docstring); returns what was built.
    With `sentence_vectors` (the app's file), real documents get theirs embedded as the app indexes
    them, and synthetic chunks get synthetic ones, like their chunk vectors (`_synthetic_sentences`)."""
    extra = {"sentence_vectors": sentence_vectors} if sentence_vectors is not None else {}
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
        index_documents(store, embedder, "bench", docs, chunk_size=settings.chunk_size, chunk_overlap=settings.chunk_overlap, **extra)
        return {"chunks": store.counts()["chunks"], "synthetic": False, "build_s": round(time.perf_counter() - t0, 1),
                "real_ids": {d.path for d in docs}}

    # the real part: the first abstracts, embedded for real (so questions about them find them)
    seed_docs = scifact_documents(limit=min(300, target_chunks // 3))
    index_documents(store, embedder, "bench", seed_docs, chunk_size=settings.chunk_size, chunk_overlap=settings.chunk_overlap, **extra)
    base = [c for d in seed_docs for c in chunk_document(d, settings.chunk_size, settings.chunk_overlap)]
    vectors = store.vectors([c.id for c in base])
    rng = random.Random(seed)
    noise = np.random.default_rng(seed)
    build = store.begin("synthetic")
    try:
        made, n_doc, full = store.counts()["chunks"], 0, False
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
            if sentence_vectors is not None and not full:
                full = not _synthetic_sentences(sentence_vectors, parts)
            made += len(parts)
        build.commit()
    except BaseException:
        build.abort()
        raise
    return {"chunks": store.counts()["chunks"], "synthetic": True, "real_documents": len(seed_docs), "real_ids": {d.path for d in seed_docs},
            "build_s": round(time.perf_counter() - t0, 1)}


def _synthetic_sentences(vectors, parts) -> bool:
    """Vectors for a synthetic chunk's sentence texts, without the model: a text already stored keeps
    its real vector (the synthetic chunks reuse real sentences), any other gets the normalised sum of
    its stored sentences' vectors, or the chunk's own vector. False once the file is full."""
    from pipeline.sentence_vectors import chunk_texts
    from pipeline.text import split_sentences

    for chunk, chunk_vector in parts:
        room = vectors.room()
        todo = vectors.missing(chunk_texts(chunk))[:room]
        if not todo:
            if not room:
                return False
            continue
        known = vectors.get([s for t in todo for s in split_sentences(t)])
        rows = []
        for text in todo:
            parts_known = [known[s] for s in split_sentences(text) if s in known]
            v = np.sum(parts_known, axis=0) if parts_known else chunk_vector
            rows.append(v / np.linalg.norm(v))
        vectors.put(todo, np.vstack(rows).astype(np.float32))
    return True


def questions(n: int, about: set[str], seed: int = 0) -> list[str]:
    """SciFact train claims turned into questions, each about one of the abstracts embedded for real
    (`about`: their corpus ids), so that the knowledge base can answer them and the whole flow runs
    (claims that cite other abstracts are refused by the relevance floor, and time nothing past it)."""
    from lab.datasets import load_qrels, load_queries

    qrels = load_qrels(SCIFACT / "qrels_train.tsv")
    queries = load_queries(SCIFACT / "claims_train.jsonl")
    ids = [q for q in queries if set(qrels.get(q, ())) & about]
    random.Random(seed).shuffle(ids)
    return [f"Is it true that {queries[q].rstrip('.')}?" for q in ids[:n]]


def one_size(target: int, n_questions: int, real: bool, data_dir: Path, threads: int = 0, embed_backend: str = "auto") -> dict:
    """Build one corpus and time full questions through the app; runs in its own process."""
    from bot.app import build
    from config.settings import load_settings
    from lab.metrics import percentile
    from pipeline.types import Question

    settings = load_settings(env={}, data_dir=str(data_dir), wikipedia="off", llm_base_url="", sources="",
                             threads=threads, embed_backend=embed_backend)
    app = build(settings, run_scheduler=False)
    try:
        file = getattr(app.parts, "sentence_vectors", None)  # None on code without sentence vectors
        built = build_corpus(app.parts.store, app.parts.embedder, settings, target, real, sentence_vectors=file)
        if file is not None:
            built["sentence_vectors"] = file.count()
        rss_built = peak_rss_mb()
        asked = questions(n_questions, built.pop("real_ids"))
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
    p.add_argument("--threads", type=int, default=0, help="The `threads` setting (0 = the cores available).")
    p.add_argument("--embed-backend", default="auto", help="The `embed_backend` setting for the throughput and question runs.")
    p.add_argument("--backends", default="", help="Also compare these embedding backends' raw throughput, e.g. torch-int8,onnx.")
    p.add_argument("--store-sizes", default="1000,10000,50000",
                   help="Index sizes (chunks) at which store write throughput is reported; empty = skip.")
    p.add_argument("--store-200k", action="store_true", help="Also report store writes at 200,000 chunks (minutes).")
    p.add_argument("--store-budget-s", type=float, default=900.0,
                   help="Stop growing the store-write index after this many seconds (later sizes: not reached).")
    p.add_argument("--compare-code", default="",
                   help="Also run the store-write section on the code in this directory (e.g. an unpacked `git archive HEAD`).")
    p.add_argument("--scale", default="", help="Also report dense search, BM25, retrieval and memory of the store "
                   "at these sizes (chunks, vectors given, no model), e.g. 200000,1000000 (minutes each).")
    p.add_argument("--scale-build", type=int, default=0, help=argparse.SUPPRESS)
    p.add_argument("--scale-serve", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--one-size", type=int, default=0, help=argparse.SUPPRESS)
    p.add_argument("--data-dir", default="", help=argparse.SUPPRESS)
    p.add_argument("--store-child", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args(argv)

    if args.one_size:  # child process: one corpus size, result as JSON on stdout
        print(json.dumps(one_size(args.one_size, args.questions, args.real, Path(args.data_dir), args.threads, args.embed_backend)))
        return {}
    if args.scale_build:  # child processes of the scale section
        print(json.dumps(scale_build(args.scale_build, Path(args.data_dir))))
        return {}
    if args.scale_serve:
        print(json.dumps(scale_serve(Path(args.data_dir), args.questions)))
        return {}
    store_sizes = [int(x) for x in args.store_sizes.split(",") if x.strip()] + ([200_000] if args.store_200k else [])
    if args.store_child:  # child process: store writes in the code found first on sys.path
        print(json.dumps(store_writes(store_sizes, args.store_budget_s)))
        return {}

    from bot.app import apply_threads
    from config.settings import load_settings
    from pipeline.embed import load_embedder

    settings = load_settings(env={}, threads=args.threads, embed_backend=args.embed_backend)
    apply_threads(settings)
    embedder = load_embedder(settings.embedding_model, settings.embed_backend, str(settings.data_path / "models"))
    results: dict = {"machine": {"cpus": os.cpu_count(), "cores_available": len(os.sched_getaffinity(0)),
                                 "torch_threads": _torch_threads(), "load_average": os.getloadavg()}}
    if args.throughput_docs:
        print(f"throughput on {args.throughput_docs} SciFact abstracts ...", file=sys.stderr)
        results["throughput"] = throughput(embedder, settings, scifact_documents(limit=args.throughput_docs))
        results["throughput"]["peak_rss_mb"] = round(peak_rss_mb(), 1)
        results["throughput"]["backend"] = embedder.backend_used
    if args.backends:
        print("embedding backends ...", file=sys.stderr)
        results["backends"] = backends(settings, scifact_documents(limit=args.throughput_docs or 200),
                                       [b.strip() for b in args.backends.split(",") if b.strip()])
    results["store_writes"] = []
    if store_sizes:
        for code in ([args.compare_code] if args.compare_code else []) + [str(ROOT)]:
            print(f"store writes, vectors given, code in {code} ...", file=sys.stderr)
            cmd = [sys.executable, __file__, "--store-child", "--store-sizes", ",".join(map(str, store_sizes)),
                   "--store-budget-s", str(args.store_budget_s)]
            env = {**os.environ, "PYTHONPATH": code, "RAVBOT_BENCH_CODE": code}
            out = subprocess.run(cmd, check=True, stdout=subprocess.PIPE, text=True, env=env).stdout
            results["store_writes"].append(json.loads(out.strip().splitlines()[-1]))
    if args.scale:
        results["scale"] = scale([int(x) for x in args.scale.split(",") if x.strip()], max(20, args.questions),
                                 ([args.compare_code] if args.compare_code else []) + [str(ROOT)])
    results["corpora"] = []
    for size in [int(s) for s in args.sizes.split(",") if s.strip()]:
        print(f"corpus of ~{size} chunks ...", file=sys.stderr)
        with tempfile.TemporaryDirectory(prefix="ravbot-bench-") as tmp:
            cmd = [sys.executable, __file__, "--one-size", str(size), "--questions", str(args.questions),
                   "--data-dir", tmp, "--threads", str(args.threads), "--embed-backend", args.embed_backend] + (["--real"] if args.real else [])
            out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
            results["corpora"].append(json.loads(out.strip().splitlines()[-1]))
    _ratios(results)
    self_usage, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    user, system = self_usage.ru_utime + children.ru_utime, self_usage.ru_stime + children.ru_stime
    results["cpu"] = {"user_s": round(user, 1), "sys_s": round(system, 1), "sys_over_user": round(system / max(user, 1e-9), 3),
                      "load_average_end": os.getloadavg()}
    print(report(results))
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(results, indent=2))
    if args.plot_dir:
        from lab.plots import plot_latency

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
    m = results["machine"]
    lines = [f"machine: {m['cpus']} CPUs ({m.get('cores_available', '?')} available), torch threads {m['torch_threads']}, "
             f"load average at start {' '.join(f'{x:.2f}' for x in m.get('load_average', ()))}"]
    if "throughput" in results:
        t = results["throughput"]
        lines.append(f"raw embedding: {t['raw_chunks_per_s']} chunks/s, {t['raw_sentences_per_s']} sentences/s; "
                     f"index_documents: {t['index_chunks_per_s']} chunks/s = {t['index_vs_raw']:.0%} of raw "
                     f"({t['chunks']} chunks of {t['documents']} abstracts); unchanged reindex {t['unchanged_reindex_s']} s")
        if "with_sentence_vectors" in t:
            w = t["with_sentence_vectors"]
            lines.append(f"index_documents with sentence vectors (the default): {w['index_chunks_per_s']} chunks/s = "
                         f"{w['index_vs_raw']:.0%} of raw; {w['sentences']} sentence vectors "
                         f"({w['sentences_per_chunk']} a chunk), {w['file_mb']} MB")
    for b in results.get("backends", []):
        lines.append(f"embedding backend {b['backend']} (running: {b['backend_used']}): {b['chunks_per_s']} chunks/s, "
                     f"cosine to torch min {b['cosine_to_torch_min']} mean {b['cosine_to_torch_mean']}, "
                     f"user {b['user_s']} s sys {b['sys_s']} s, load average {b['load_average'][0]:.2f}")
    for w in results.get("store_writes", []):
        figures = ", ".join(f"{p['size']:,}: {p['chunks_per_s']:,.0f}" if p["reached"] else
                            f"{p['size']:,}: not reached (at {p['last'].get('size', 0):,}: {p['last'].get('chunks_per_s', 0):,.0f})"
                            for p in w["points"])
        lines.append(f"store writes (chunks/s at index size, vectors given) [{w['code']}]: {figures}; "
                     f"commit of {w['chunks']:,} chunks {w['commit_s']} s, file {w['file_mb']} MB, "
                     f"user {w['user_s']} s, sys {w['sys_s']} s")
    for x in results.get("scale", []):
        lines.append(f"scale {x['chunks']:,} chunks [{x['code']}] (built in {x['build_s']} s, file {x['file_mb']} MB): "
                     f"matrix load {x['matrix_load_s']} s; p50/p95 ms dense {x['dense_ms']['p50']}/{x['dense_ms']['p95']}, "
                     f"BM25 {x['bm25_ms']['p50']}/{x['bm25_ms']['p95']}, retrieve {x['retrieve_ms']['p50']}/{x['retrieve_ms']['p95']}; "
                     f"peak RSS {x['peak_rss_mb']} MB (no model; {x['rss_at_start_mb']} MB at start)")
    lines.append("")
    for c in results["corpora"]:
        lines.append(f"corpus {c['chunks']} chunks ({'synthetic' if c['synthetic'] else 'real'}, built in {c['build_s']} s), "
                     f"{c['questions']} questions, {c['idk']} I-don't-know; peak RSS {c['peak_rss_mb']['after_questions']} MB"
                     + (f"; {c['sentence_vectors']} sentence vectors on disk" if "sentence_vectors" in c else ""))
        lines.append(f"  {'stage':10} {'p50 ms':>9} {'p95 ms':>9} {'share':>7}")
        for s in STAGES:
            f = c["stages"][s]
            lines.append(f"  {s:10} {f['p50_ms']:9.1f} {f['p95_ms']:9.1f} {f['share_of_total']:7.1%}")
    if "scaling" in results:
        sc = results["scaling"]
        lines.append(f"\n×{sc['chunks_ratio']} chunks → p50 ×: " + ", ".join(f"{s} {r}" for s, r in sc["p50_ratio_by_stage"].items())
                     + f"; peak RSS ×{sc['rss_ratio']}")
    if "cpu" in results:
        c = results["cpu"]
        lines.append(f"CPU time of the whole run (this process and its children): user {c['user_s']} s, sys {c['sys_s']} s, "
                     f"sys/user {c['sys_over_user']:.1%}; load average at end {' '.join(f'{x:.2f}' for x in c['load_average_end'])}")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
