"""`WeaviateStore`: the `Store` protocol on a Weaviate server (weaviate-client v4), for big or shared indexes.

Layout on the server, for the base name `B` (setting `weaviate_collection`):
- generations are collections `B_g1`, `B_g2`, ... holding two kinds of objects: chunks (with
  our own embedding as the vector `embedding`) and one vector-less record per document;
- the served generation is named by the alias `B` (Weaviate 1.32+) or, on older servers, by an
  object in the small collection `B_meta`;
- with multi-tenancy (`weaviate_tenant`), `B` is one multi-tenant collection, generations are
  the tenants `<tenant>__g1`, `<tenant>__g2`, ... and `B_meta` names each tenant's served one.

A build writes the next generation, copies the objects it keeps (with their vectors) from the
served one, and only then moves the pointer, so readers never see a half-built index; the old
generation is deleted afterwards. Run index builds from one process at a time.
Weaviate's BM25 does no stemming, so chunks carry `search_text` (`pipeline.weaviate_text`); the
objects and the collection are defined in `pipeline.weaviate_schema`.
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from pipeline.names import mentions
from pipeline.store import Filters, StoreUnavailable
from pipeline.types import Chunk, Document
from pipeline.weaviate_schema import (
    ALL_PROPS,
    CHUNK_PROPS,
    VECTOR,
    BatchFailed,
    Target,
    WeaviateOptions,
    build_filters,
    check_failed,
    chunk_from_properties,
    chunk_properties,
    chunk_uuid,
    collection_config,
    doc_uuid,
    document_properties,
    generation_of,
    parse_url,
    version_tuple,
)
from pipeline.weaviate_text import bm25_query, search_text

log = logging.getLogger(__name__)

MIN_VERSION = (1, 27, 0)  # the oldest server weaviate-client v4 talks to
ALIAS_VERSION = (1, 32, 0)  # collection aliases
FUSIONS = ("ravbot", "ranked", "relative_score")
PAGE = 500  # ids per fetch; objects per page when iterating
QUERY_MAXIMUM_RESULTS = 10_000  # Weaviate's default cap on limit + offset


# --- the store
class WeaviateStore:
    """A `Store` on a Weaviate server; connects on first use."""

    def __init__(self, options: WeaviateOptions):
        if options.weaviate_fusion not in FUSIONS:
            raise ValueError(f"weaviate_fusion {options.weaviate_fusion!r} is not one of {', '.join(FUSIONS)}")
        self.options = options
        self.url = options.weaviate_url or f"http://localhost:8080 (gRPC {options.weaviate_grpc_port})"
        self.base = _collection_name(options.weaviate_collection)
        self.tenant = options.weaviate_tenant or None
        self.fusion = options.weaviate_fusion
        self._client = None
        self._aliases = False
        self._alias_seen = False
        self._lock = threading.Lock()
        self._write_lock = threading.Lock()

    # --- connection
    @property
    def client(self):
        with self._lock:
            if self._client is None:
                self._client, version = _connect(self.options)
                self._aliases = version >= ALIAS_VERSION
            return self._client

    def close(self) -> None:
        with self._lock:
            if self._client is not None:
                self._client.close()
                self._client = None

    def _fail(self, what: str, e: Exception) -> StoreUnavailable:
        return StoreUnavailable(f"Weaviate at {self.url}: {what} failed: {e}")

    def _handle(self, target: Target):
        col = self.client.collections.use(target.collection)
        return col.with_tenant(target.tenant) if target.tenant else col

    # --- which generation is served
    @property
    def _uses_meta(self) -> bool:
        return bool(self.tenant) or not self._aliases

    @property
    def _meta_name(self) -> str:
        return f"{self.base}_meta"

    def _meta_uuid(self) -> str:
        from weaviate.util import generate_uuid5

        return generate_uuid5(self.tenant or "", "ravbot-served")

    def served(self) -> Target | None:
        """The served generation, or None before the first commit."""
        from weaviate.exceptions import WeaviateBaseError

        client = self.client
        try:
            if not self._uses_meta:
                if self._alias_seen or client.alias.exists(alias_name=self.base):
                    self._alias_seen = True
                    return Target(self.base)
                return None
            if not client.collections.exists(self._meta_name):
                return None
            obj = client.collections.use(self._meta_name).query.fetch_object_by_id(self._meta_uuid())
        except WeaviateBaseError as e:
            raise self._fail("reading the served generation", e) from e
        if obj is None:
            return None
        active = obj.properties["active"]
        return Target(self.base, active) if self.tenant else Target(active)

    def _concrete(self, target: Target) -> Target:
        """The generation behind an alias (`B` → `B_g3`)."""
        if target.tenant or target.collection != self.base:
            return target
        alias = self.client.alias.get(alias_name=self.base)
        return Target(alias.collection) if alias else target

    def _read(self, what: str, fn, empty):
        """Run `fn(collection handle)` on the served generation; retry once if a switch raced it."""
        from weaviate.exceptions import WeaviateBaseError

        for attempt in (1, 2):
            target = self.served()
            if target is None:
                return empty
            try:
                return fn(self._handle(target))
            except WeaviateBaseError as e:
                if attempt == 2:
                    raise self._fail(what, e) from e

    # --- reading
    def doc_hashes(self, source: str | None = None) -> dict[str, str]:
        return self._read("listing documents", lambda col: {
            p["doc_id"]: p["doc_hash"] for p in _documents(col, source)}, {})

    def counts(self) -> dict[str, int]:
        return self._read("counting", _count, {"documents": 0, "chunks": 0})

    def _by_chunk_ids(self, col, chunk_ids: Sequence[str], include_vector: bool) -> list:
        from weaviate.classes.query import Filter

        objects = []
        ids = list(dict.fromkeys(chunk_ids))
        for i in range(0, len(ids), PAGE):
            part = [chunk_uuid(c) for c in ids[i : i + PAGE]]
            objects += col.query.fetch_objects(filters=Filter.by_id().contains_any(part), limit=len(part),
                                               include_vector=include_vector, return_properties=list(CHUNK_PROPS)).objects
        return objects

    def chunks(self, chunk_ids: Sequence[str]) -> list[Chunk]:
        if not chunk_ids:
            return []
        objects = self._read("fetching chunks", lambda col: self._by_chunk_ids(col, chunk_ids, False), [])
        by_id = {o.properties["chunk_id"]: chunk_from_properties(o.properties) for o in objects}
        return [by_id[c] for c in chunk_ids if c in by_id]

    def mentioned(self, names: Sequence[str]) -> set[str]:
        found = set()
        for name in dict.fromkeys(names):
            ids = [cid for cid, _ in self.bm25_search(name, 50)]
            if any(mentions(name, c.context_text) for c in self.chunks(ids)):  # headings count
                found.add(name)
        return found

    def vectors(self, chunk_ids: Sequence[str]) -> dict[str, np.ndarray]:
        if not chunk_ids:
            return {}
        objects = self._read("fetching vectors", lambda col: self._by_chunk_ids(col, chunk_ids, True), [])
        return {o.properties["chunk_id"]: np.asarray(_vector(o), dtype=np.float32) for o in objects}

    def dense_search(self, vector: np.ndarray, n: int, filters: Filters | None = None) -> list[tuple[str, float]]:
        from weaviate.classes.query import MetadataQuery

        where = build_filters(filters)
        result = self._read("vector search", lambda col: col.query.near_vector(
            near_vector=np.asarray(vector, dtype=np.float32).tolist(), target_vector=VECTOR, limit=n,
            filters=where, return_metadata=MetadataQuery(distance=True), return_properties=["chunk_id"]), None)
        if result is None:
            return []
        return [(o.properties["chunk_id"], 1.0 - float(o.metadata.distance)) for o in result.objects]

    def bm25_search(self, query: str, n: int, filters: Filters | None = None) -> list[tuple[str, float]]:
        from weaviate.classes.query import MetadataQuery

        words, where = bm25_query(query), build_filters(filters)
        if not words:
            return []
        result = self._read("BM25 search", lambda col: col.query.bm25(
            query=words, query_properties=["search_text"], limit=n, filters=where,
            return_metadata=MetadataQuery(score=True), return_properties=["chunk_id"]), None)
        if result is None:
            return []
        return [(o.properties["chunk_id"], float(o.metadata.score)) for o in result.objects if o.metadata.score > 0]

    def hybrid_search(self, query: str, vector: np.ndarray, n: int, filters: Filters | None = None,
                      alpha: float = 0.5) -> list[tuple[str, float]]:
        """Weaviate's own fusion of BM25 and vector search (`weaviate_fusion` = ranked | relative_score)."""
        from weaviate.classes.query import HybridFusion, MetadataQuery

        fusion = HybridFusion.RELATIVE_SCORE if self.fusion == "relative_score" else HybridFusion.RANKED
        where = build_filters(filters)
        result = self._read("hybrid search", lambda col: col.query.hybrid(
            query=bm25_query(query), vector=np.asarray(vector, dtype=np.float32).tolist(), target_vector=VECTOR,
            query_properties=["search_text"], alpha=alpha, fusion_type=fusion, limit=n, filters=where,
            return_metadata=MetadataQuery(score=True), return_properties=["chunk_id"]), None)
        if result is None:
            return []
        return [(o.properties["chunk_id"], float(o.metadata.score)) for o in result.objects if o.properties.get("chunk_id")]

    # --- writing
    def begin(self, source: str) -> WeaviateBuild:
        if not self._write_lock.acquire(timeout=0.1):
            raise RuntimeError(f"an index build is already running on {self.base} at {self.url}")
        try:
            return WeaviateBuild(self, source)
        except BaseException:
            self._write_lock.release()
            raise

    def _generations(self) -> list[Target]:
        """Every generation on the server, served or not."""
        if self.tenant:
            if not self.client.collections.exists(self.base):
                return []
            names = self.client.collections.use(self.base).tenants.get()
            pattern = re.compile(rf"^{re.escape(self.tenant)}__g\d+$")
            return [Target(self.base, t) for t in names if pattern.match(t)]
        pattern = re.compile(rf"^{re.escape(self.base)}_g\d+$")
        return [Target(name) for name in self.client.collections.list_all(simple=True) if pattern.match(name)]

    def _create(self, target: Target) -> None:
        from weaviate.classes.tenants import Tenant

        cols = self.client.collections
        if target.tenant:
            if not cols.exists(target.collection):
                cols.create(**collection_config(self.options, target.collection))
            cols.use(target.collection).tenants.create([Tenant(name=target.tenant)])
        else:
            cols.create(**collection_config(self.options, target.collection))

    def _drop(self, target: Target) -> None:
        if target.tenant:
            self.client.collections.use(target.collection).tenants.remove([target.tenant])
        else:
            self.client.collections.delete(target.collection)

    def _serve(self, target: Target) -> None:
        """Point readers at `target`: one alias update, or one meta object write."""
        if not self._uses_meta:
            if self.client.alias.exists(alias_name=self.base):
                self.client.alias.update(alias_name=self.base, new_target_collection=target.collection)
            else:
                if self.client.collections.exists(self.base):
                    raise StoreUnavailable(f"Weaviate at {self.url}: a collection named {self.base!r} is in the way "
                                           "of ravbot's alias; rename weaviate_collection or delete that collection")
                self.client.alias.create(alias_name=self.base, target_collection=target.collection)
            self._alias_seen = True
            return
        from weaviate.classes.config import DataType, Property

        cols = self.client.collections
        if not cols.exists(self._meta_name):
            cols.create(self._meta_name, properties=[Property(name="active", data_type=DataType.TEXT)],
                        replication_config=collection_config(self.options, "x")["replication_config"])
        active = target.tenant or target.collection
        meta = cols.use(self._meta_name)
        if meta.data.exists(self._meta_uuid()):
            meta.data.replace(uuid=self._meta_uuid(), properties={"active": active})
        else:
            meta.data.insert(uuid=self._meta_uuid(), properties={"active": active})


class WeaviateBuild:
    """One source's next generation, written beside the served one and switched to on `commit`."""

    def __init__(self, store: WeaviateStore, source: str):
        from weaviate.exceptions import WeaviateBaseError

        self.store, self.source = store, source
        self.kept: set[str] = set()
        self.added: dict[str, list[str]] = {}  # doc id -> chunk uuids
        self._pending: list[dict[str, Any]] = []
        self._written = 0
        self._done = False
        try:
            served = store.served()
            self.old = store._concrete(served) if served else None
            number = generation_of(self.old.tenant or self.old.collection) + 1 if self.old else 1
            for leftover in store._generations():  # what failed or killed builds left behind
                if leftover != self.old:
                    store._drop(leftover)
            self.new = (Target(store.base, f"{store.tenant}__g{number}") if store.tenant
                        else Target(f"{store.base}_g{number}"))
            store._create(self.new)
            self.old_hashes = ({p["doc_id"]: p["doc_hash"] for p in _documents(store._handle(self.old), source)}
                               if self.old else {})
        except WeaviateBaseError as e:
            raise store._fail(f"starting an index build of {source!r}", e) from e

    def keep(self, doc_id: str) -> None:
        if doc_id not in self.old_hashes:
            raise KeyError(f"cannot keep {doc_id!r}: it is not in the served index")
        self.kept.add(doc_id)

    def add(self, doc: Document, chunks: Sequence[Chunk], vectors: np.ndarray) -> None:
        if len(chunks) != len(vectors):
            raise ValueError(f"{doc.id}: {len(chunks)} chunks but {len(vectors)} vectors")
        if doc.id in self.added:  # added twice in one build: the last version wins
            self._flush()
            self._handle().data.delete_many(where=_doc_filter(doc.id))
        self._pending.append({"uuid": doc_uuid(doc.id), "properties": document_properties(doc), "vector": None})
        for chunk, vector in zip(chunks, vectors, strict=True):
            self._pending.append({"uuid": chunk_uuid(chunk.id), "properties": chunk_properties(chunk),
                                  "vector": {VECTOR: np.asarray(vector, dtype=np.float32).tolist()}})
        self.added[doc.id] = [chunk_uuid(c.id) for c in chunks]
        if len(self._pending) >= 1000:
            self._flush()

    def commit(self) -> dict[str, int]:
        from weaviate.exceptions import WeaviateBaseError

        store = self.store
        try:
            self._flush()
            if self.old:
                self._copy_kept()
            counts = _count(self._handle())
            store._serve(self.new)
        except (WeaviateBaseError, BatchFailed, StoreUnavailable) as e:
            self.abort()
            if isinstance(e, WeaviateBaseError):
                raise store._fail(f"committing the index build of {self.source!r}", e) from e
            raise
        try:
            if self.old:
                store._drop(self.old)
        except WeaviateBaseError as e:  # served already; the next build removes it
            log.warning("could not delete the old generation %s: %s", self.old, e)
        finally:
            self._finish()
        removed = len(set(self.old_hashes) - self.kept - set(self.added))
        return {**counts, "removed": removed}

    def abort(self) -> None:
        try:
            self._pending.clear()
            self.store._drop(self.new)
        except Exception as e:  # the next build removes it
            log.warning("could not delete the aborted generation %s: %s", self.new, e)
        finally:
            self._finish()

    def _handle(self):
        return self.store._handle(self.new)

    def _copy_kept(self) -> None:
        """Copy other sources' objects and kept documents' objects, with vectors, from the served generation."""
        old = self.store._handle(self.old)
        for obj in old.iterator(include_vector=True, return_properties=list(ALL_PROPS), cache_size=PAGE):
            p = obj.properties
            if p.get("source") != self.source or (p.get("doc_id") in self.kept and p.get("doc_id") not in self.added):
                vector = obj.vector.get(VECTOR) if obj.vector else None
                if p.get("kind") == "chunk":  # stems as this version computes them (earlier ones stemmed less)
                    p = {**p, "search_text": search_text(p.get("context_text") or "")}
                self._pending.append({"uuid": str(obj.uuid), "properties": dict(p),
                                      "vector": {VECTOR: vector} if vector is not None else None})
                if len(self._pending) >= 1000:
                    self._flush()
        self._flush()

    def _flush(self) -> None:
        if not self._pending:
            return
        col = self._handle()
        objects, self._pending = self._pending, []
        with col.batch.dynamic() as batch:
            for o in objects:
                batch.add_object(properties=o["properties"], uuid=o["uuid"], vector=o["vector"])
        check_failed(col.batch.failed_objects, len(objects), str(self.new))
        self._written += len(objects)

    def _finish(self) -> None:
        if not self._done:
            self._done = True
            self.store._write_lock.release()


# --- small helpers over a collection handle
def _collection_name(name: str) -> str:
    if not re.fullmatch(r"[A-Za-z][A-Za-z0-9_]*", name or ""):
        raise ValueError(f"weaviate_collection {name!r} must be letters, digits and _ and start with a letter")
    return name[0].upper() + name[1:]


def _doc_filter(doc_id: str):
    from weaviate.classes.query import Filter

    return Filter.by_property("doc_id").equal(doc_id)


def _vector(obj) -> list[float]:
    vector = obj.vector
    return vector[VECTOR] if isinstance(vector, dict) else vector


def _count(col) -> dict[str, int]:
    from weaviate.classes.query import Filter

    n = {kind: col.aggregate.over_all(total_count=True, filters=Filter.by_property("kind").equal(kind)).total_count or 0
         for kind in ("document", "chunk")}
    return {"documents": n["document"], "chunks": n["chunk"]}


def _documents(col, source: str | None) -> Iterable[Mapping[str, Any]]:
    """The document records of one source (or all): one query, or a full scan past Weaviate's result cap."""
    from weaviate.classes.query import Filter

    where = Filter.by_property("kind").equal("document")
    if source is not None:
        where = where & Filter.by_property("source").equal(source)
    objects = col.query.fetch_objects(filters=where, limit=QUERY_MAXIMUM_RESULTS,
                                      return_properties=["doc_id", "doc_hash", "source"]).objects
    if len(objects) < QUERY_MAXIMUM_RESULTS:
        return [o.properties for o in objects]
    return [o.properties for o in col.iterator(return_properties=["kind", "doc_id", "doc_hash", "source"], cache_size=PAGE)
            if o.properties.get("kind") == "document" and (source is None or o.properties.get("source") == source)]


def _connect(options: WeaviateOptions):
    """A connected client and the server version; StoreUnavailable (with the URL and cause) otherwise."""
    import weaviate
    from weaviate.classes.init import AdditionalConfig, Auth, Timeout
    from weaviate.exceptions import WeaviateBaseError

    url = options.weaviate_url
    auth = Auth.api_key(options.weaviate_api_key) if options.weaviate_api_key else None
    config = AdditionalConfig(timeout=Timeout(init=5, query=30, insert=120))
    shown = url or "http://localhost:8080"
    try:
        if url:
            host, port, secure = parse_url(url)
            client = weaviate.connect_to_custom(
                http_host=host, http_port=port, http_secure=secure, grpc_host=host,
                grpc_port=options.weaviate_grpc_port, grpc_secure=secure,
                auth_credentials=auth, additional_config=config)
        else:
            client = weaviate.connect_to_local(grpc_port=options.weaviate_grpc_port,
                                               auth_credentials=auth, additional_config=config)
    except WeaviateBaseError as e:
        if "is not supported" in str(e):
            raise StoreUnavailable(f"Weaviate at {shown} is too old: ravbot needs "
                                   f"{'.'.join(map(str, MIN_VERSION))} or newer ({e})") from e
        raise StoreUnavailable(f"Weaviate at {shown} (gRPC port {options.weaviate_grpc_port}) is unreachable: {e}") from e
    except OSError as e:
        raise StoreUnavailable(f"Weaviate at {shown} is unreachable: {e}") from e
    try:
        version = version_tuple(client.get_meta().get("version", "0"))
    except WeaviateBaseError as e:
        client.close()
        raise StoreUnavailable(f"Weaviate at {shown} did not say its version: {e}") from e
    if version < MIN_VERSION:
        client.close()
        raise StoreUnavailable(f"Weaviate at {shown} is {'.'.join(map(str, version))}, too old: ravbot needs "
                               f"{'.'.join(map(str, MIN_VERSION))} or newer")
    return client, version
