"""Incremental indexing: load a source, embed only new or changed documents, switch generations atomically."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable

import numpy as np

from pipeline.chunking import chunk_document
from pipeline.embed import Embedder
from pipeline.ingest import load_source
from pipeline.sentence_vectors import SentenceVectors, embed_chunk_sentences
from pipeline.store import Store
from pipeline.types import Chunk, Document

log = logging.getLogger(__name__)

# Chunks embedded per call at index time: the documents read are grouped until their chunks reach
# it. One call per document (2-3 chunks of an abstract) left the model's batches mostly empty.
EMBED_GROUP = 64


def index_documents(
    store: Store,
    embedder: Embedder,
    source: str,
    documents: Iterable[Document],
    *,
    chunk_size: int = 800,
    chunk_overlap: int = 120,
    progress: Callable[[int, int], None] | None = None,
    first_publish_s: float | None = 5.0,
    sentence_vectors: SentenceVectors | None = None,
) -> dict[str, int]:
    """Make `documents` the served content of `source`: unchanged ones are kept as they are, new and
    changed ones chunked and embedded (reusing stored vectors of identical chunks), missing ones
    removed. `progress(done, total)` is called with 0 first, then for each document once it is in the
    build (documents are embedded EMBED_GROUP chunks at a time, so the calls come in steps).

    A reindex of a source that is served already is atomic: nothing changes for readers until the
    build commits, and any exception aborts it. A FIRST build (nothing of `source` served) publishes
    what it has read so far, so questions can be answered during a long first build: after
    `first_publish_s` seconds, then each time the elapsed time doubles, the documents done are
    committed (later batches `keep` them). Doubling bounds the extra cost at about one `keep` per
    document. An exception then leaves the published part serving; the next run resumes from it.
    `first_publish_s=None` makes a first build atomic too.

    With `sentence_vectors`, the sentences that questions embed (`pipeline.sentence_vectors`) of each
    new or changed document are embedded too, while that file has room."""
    old = store.doc_hashes(source)
    counts = {"added": 0, "changed": 0, "unchanged": 0, "removed": 0}
    docs = list({d.id: d for d in documents}.values())
    publish_at = time.monotonic() + first_publish_s if first_publish_s is not None and not old else None
    started = time.monotonic()
    if progress:
        progress(0, len(docs))
    build = store.begin(source)
    try:
        pending: list[tuple[Document, list[Chunk]]] = []  # read, not yet embedded: EMBED_GROUP chunks per call
        reported = 0  # documents whose progress was reported
        for done, doc in enumerate(docs, start=1):
            if old.get(doc.id) == doc.hash:
                build.keep(doc.id)
                counts["unchanged"] += 1
            else:
                pending.append((doc, chunk_document(doc, chunk_size, chunk_overlap)))
                counts["changed" if doc.id in old else "added"] += 1
            publish = publish_at is not None and done < len(docs) and time.monotonic() >= publish_at
            if pending and (done == len(docs) or publish or sum(len(c) for _, c in pending) >= EMBED_GROUP):
                _embed_and_add(build, store, embedder, pending, sentence_vectors)
                pending = []
            if publish:
                build.commit()  # first build only: serve what is read so far
                log.info("first build of %s: %d of %d documents published", source, done, len(docs))
                build = store.begin(source)
                for kept in docs[:done]:
                    build.keep(kept.id)
                publish_at = time.monotonic() + max(first_publish_s, time.monotonic() - started)
            if not pending:  # every document read so far is in the build
                if progress:
                    for k in range(reported + 1, done + 1):
                        progress(k, len(docs))
                reported = done
        result = build.commit()
    except BaseException:
        build.abort()
        raise
    counts["removed"] = result["removed"]
    return counts


def _embed_and_add(build, store: Store, embedder: Embedder, pending: list[tuple[Document, list[Chunk]]],
                   sentence_vectors: SentenceVectors | None) -> None:
    """Embed the chunks of the `pending` documents in one call (reusing the stored vectors of identical
    chunks), add each document to `build`, then embed their sentences (`sentence_vectors`)."""
    chunks = [c for _, doc_chunks in pending for c in doc_chunks]
    known = store.vectors([c.id for c in chunks])
    missing = list({c.id: c for c in chunks if c.id not in known}.values())
    fresh = dict(zip((c.id for c in missing), embedder.encode([c.context_text for c in missing]), strict=True))
    for doc, doc_chunks in pending:
        vectors = np.array([known.get(c.id, fresh.get(c.id)) for c in doc_chunks], dtype=np.float32)
        build.add(doc, doc_chunks, vectors.reshape(len(doc_chunks), -1))
    if sentence_vectors is not None:
        embed_chunk_sentences(sentence_vectors, embedder, chunks)


def index_source(
    store: Store,
    embedder: Embedder,
    name: str,
    locations: list[str],
    *,
    chunk_size: int = 800,
    chunk_overlap: int = 120,
    max_file_bytes: int = 5_000_000,
    fetch_timeout: float = 15.0,
    progress: Callable[[int, int], None] | None = None,
    first_publish_s: float | None = 5.0,
    url_base: str = "",
    url_pattern: str = "",
    sentence_vectors: SentenceVectors | None = None,
) -> dict:
    """Load and index one configured source. Returns the counts (added, changed, unchanged, removed,
    skipped) and `errors` ("location: reason" for each skipped item). If nothing at all could be
    loaded from locations that do exist, the served index is left untouched and ValueError is raised."""
    report = load_source(name, locations, max_file_bytes, fetch_timeout, url_base=url_base, url_pattern=url_pattern)
    for location, reason in report.skipped:
        log.warning("source %s: skipped %s (%s)", name, location, reason)
    if not report.documents and report.skipped and len(report.skipped) >= len(locations):
        reasons = "; ".join(f"{loc}: {why}" for loc, why in report.skipped[:5])
        raise ValueError(f"source {name!r}: nothing could be loaded ({reasons})")
    counts = index_documents(store, embedder, name, report.documents, chunk_size=chunk_size,
                             chunk_overlap=chunk_overlap, progress=progress, first_publish_s=first_publish_s,
                             sentence_vectors=sentence_vectors)
    return {**counts, "skipped": len(report.skipped), "errors": [f"{loc}: {why}" for loc, why in report.skipped]}
