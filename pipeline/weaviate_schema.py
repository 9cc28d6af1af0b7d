"""How ravbot's chunks and documents are laid out in Weaviate, as pure helpers unit-tested without a server.

Object ids and properties of chunks and document records, the collection definition, filters,
batch-failure checks, server URLs and versions, `Target` (where one generation lives) and
`WeaviateOptions` (the server and collection settings a `WeaviateStore` is made with).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from pipeline.store import Filters
from pipeline.types import Chunk, Document
from pipeline.weaviate_text import search_text

VECTOR = "embedding"  # the name of the self-provided vector

CHUNK_PROPS = ("chunk_id", "doc_id", "text", "context_text", "title", "headings", "source",
               "domain", "url", "path", "position", "doc_hash", "modified")
ALL_PROPS = (*CHUNK_PROPS, "kind", "search_text")


@dataclass(frozen=True)
class WeaviateOptions:
    """Where the server is and how collections are made, each field the setting of the same name
    (built by `bot.app.weaviate_options`)."""

    weaviate_url: str
    weaviate_grpc_port: int
    weaviate_api_key: str = field(repr=False)  # a secret: never in a repr or a log line
    weaviate_collection: str
    weaviate_tenant: str
    weaviate_replication: int
    weaviate_shards: int
    weaviate_fusion: str


class BatchFailed(RuntimeError):
    """Some objects of a batch were rejected by Weaviate (batches do not raise by themselves)."""


def chunk_uuid(chunk_id: str) -> str:
    """The Weaviate id of a chunk: derived from its (content-derived) id, so re-adding is idempotent."""
    from weaviate.util import generate_uuid5

    return generate_uuid5(chunk_id, "ravbot-chunk")


def doc_uuid(doc_id: str) -> str:
    from weaviate.util import generate_uuid5

    return generate_uuid5(doc_id, "ravbot-document")


def chunk_properties(chunk: Chunk) -> dict[str, Any]:
    """A chunk as Weaviate properties."""
    return {"kind": "chunk", "chunk_id": chunk.id, "doc_id": chunk.doc_id, "text": chunk.text,
            "context_text": chunk.context_text, "search_text": search_text(chunk.context_text),
            "title": chunk.title, "headings": list(chunk.headings), "source": chunk.source,
            "domain": chunk.domain, "url": chunk.url, "path": chunk.path,
            "position": chunk.position, "doc_hash": chunk.doc_hash, "modified": float(chunk.modified)}


def document_properties(doc: Document) -> dict[str, Any]:
    """A document's record (no vector, no searchable text): what `doc_hashes` and `counts` read."""
    return {"kind": "document", "chunk_id": "", "doc_id": doc.id, "text": "", "context_text": "",
            "search_text": "", "title": doc.title, "headings": [], "source": doc.source,
            "domain": doc.domain, "url": doc.url, "path": doc.path, "position": 0,
            "doc_hash": doc.hash, "modified": float(doc.modified)}


def chunk_from_properties(p: Mapping[str, Any]) -> Chunk:
    return Chunk(id=p["chunk_id"], doc_id=p["doc_id"], text=p.get("text") or "",
                 context_text=p.get("context_text") or "", title=p.get("title") or "",
                 headings=tuple(p.get("headings") or ()), source=p.get("source") or "",
                 domain=p.get("domain") or "", url=p.get("url") or "", path=p.get("path") or "",
                 position=int(p.get("position") or 0), doc_hash=p.get("doc_hash") or "",
                 modified=float(p.get("modified") or 0.0))


def build_filters(filters: Filters | None):
    """`{"source": [...], "domain": [...]}` as a Weaviate filter (None = no filter); empty lists are ignored."""
    from weaviate.classes.query import Filter

    parts = []
    for key, values in (filters or {}).items():
        if key not in ("source", "domain"):
            raise ValueError(f"unknown filter {key!r}: use 'source' or 'domain'")
        if values:
            parts.append(Filter.by_property(key).contains_any(list(values)))
    if not parts:
        return None
    return parts[0] if len(parts) == 1 else Filter.all_of(parts)


def collection_config(options: WeaviateOptions, name: str) -> dict[str, Any]:
    """Keyword arguments of `client.collections.create` for one generation (or the multi-tenant collection)."""
    from weaviate.classes.config import Configure, DataType, Property, Tokenization, VectorDistances

    def text(prop: str, *, searchable: bool = False, tokenization=Tokenization.FIELD, filterable: bool = True) -> Property:
        return Property(name=prop, data_type=DataType.TEXT, tokenization=tokenization,
                        index_searchable=searchable, index_filterable=filterable)

    properties = [
        text("kind"), text("chunk_id"), text("doc_id"), text("source"), text("domain"), text("doc_hash"),
        text("search_text", searchable=True, tokenization=Tokenization.WHITESPACE, filterable=False),
        text("text", filterable=False), text("context_text", filterable=False),
        text("title", filterable=False), text("url", filterable=False), text("path", filterable=False),
        Property(name="headings", data_type=DataType.TEXT_ARRAY, index_filterable=False, index_searchable=False),
        Property(name="position", data_type=DataType.INT),
        Property(name="modified", data_type=DataType.NUMBER),
    ]
    config: dict[str, Any] = {
        "name": name,
        "description": "ravbot chunks and document records (self-provided embeddings)",
        "properties": properties,
        "vector_config": Configure.Vectors.self_provided(
            name=VECTOR, vector_index_config=Configure.VectorIndex.hnsw(distance_metric=VectorDistances.COSINE)),
        "inverted_index_config": Configure.inverted_index(bm25_k1=1.2, bm25_b=0.75),
        "replication_config": Configure.replication(factor=options.weaviate_replication),
    }
    if options.weaviate_tenant:
        config["multi_tenancy_config"] = Configure.multi_tenancy(enabled=True, auto_tenant_creation=False)
    else:  # a multi-tenant collection has one shard per tenant
        config["sharding_config"] = Configure.sharding(desired_count=options.weaviate_shards)
    return config


def check_failed(failed: Sequence[Any], total: int, where: str) -> None:
    """Raise `BatchFailed` when a batch left failed objects (`ErrorObject`s), with counts and first messages."""
    if not failed:
        return
    messages = list(dict.fromkeys(str(getattr(f, "message", f)) for f in failed))
    raise BatchFailed(f"{len(failed)} of {total} objects failed to index into {where}; "
                      f"first errors: {'; '.join(messages[:3])}")


def parse_url(url: str) -> tuple[str, int, bool]:
    """`http(s)://host[:port]` as (host, port, secure)."""
    parts = urlsplit(url if "://" in url else f"http://{url}")
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"weaviate_url {url!r} is not an http(s) URL such as http://localhost:8080")
    secure = parts.scheme == "https"
    return parts.hostname, parts.port or (443 if secure else 80), secure


def version_tuple(version: str) -> tuple[int, int, int]:
    numbers = [int(x) for x in re.findall(r"\d+", version)[:3]]
    return tuple(numbers + [0] * (3 - len(numbers)))  # type: ignore[return-value]


def generation_of(name: str) -> int:
    """The generation number in `B_g3` or `team__g3` (0 when there is none)."""
    m = re.search(r"_g(\d+)$", name)
    return int(m.group(1)) if m else 0


@dataclass(frozen=True)
class Target:
    """Where one generation lives: a collection (or alias), and a tenant when multi-tenancy is on."""

    collection: str
    tenant: str | None = None

    def __str__(self) -> str:
        return f"{self.collection}[{self.tenant}]" if self.tenant else self.collection

