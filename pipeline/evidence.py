"""Evidence for claims: the knowledge base first (hybrid retrieval over stored vectors), then Wikipedia."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from pipeline.embed import Embedder
from pipeline.retrieve import RetrieveOptions, retrieve
from pipeline.store import Store
from pipeline.types import Evidence, Hit


def hit_to_evidence(hit: Hit) -> Evidence:
    c = hit.chunk
    return Evidence(text=c.text, title=c.title, url=c.url, path=c.path, origin="kb",
                    score=float(hit.dense or 0.0), chunk_id=c.id, section=" > ".join(c.headings))


def kb_evidence(claim: str, *, store: Store, embedder: Embedder, options: RetrieveOptions, k: int,
                query_vector: np.ndarray | None = None, cross_encoder=None) -> list[Evidence]:
    """The top-k knowledge-base chunks for one claim (`k`: the `evidence_k` setting in the flow).
    Chunks are never re-embedded: only the claim is."""
    hits = retrieve(claim, store=store, embedder=embedder, options=options,
                    k=k, query_vector=query_vector, cross_encoder=cross_encoder)
    return [hit_to_evidence(h) for h in hits]


def kb_evidence_batch(claims: Sequence[str], *, store: Store, embedder: Embedder, options: RetrieveOptions,
                      k: int, cross_encoder=None) -> list[list[Evidence]]:
    """`kb_evidence` for many claims with one embedding call. The claims go through the sentence
    cache (`encode_cached`), so verification's alignment reads their vectors instead of embedding
    them again."""
    vectors = embedder.encode_cached(list(claims))
    return [kb_evidence(c, store=store, embedder=embedder, options=options, k=k, query_vector=v,
                        cross_encoder=cross_encoder)
            for c, v in zip(claims, vectors, strict=True)]
