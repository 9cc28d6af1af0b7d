"""WeaviateStore: the shared Store contract against a real server (when WEAVIATE_URL is set), and its
query / filter / collection / batch construction and error paths, which need no server."""

from __future__ import annotations

import os
import socket
import uuid

import pytest
from weaviate.classes.query import Filter
from weaviate.collections.classes.batch import BatchObject, ErrorObject
from weaviate.collections.classes.config import _CollectionConfigCreate

from bot.app import weaviate_options
from config.settings import load_settings
from pipeline.store import StoreUnavailable
from pipeline.weaviate_schema import (
    BatchFailed,
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
from pipeline.weaviate_store import WeaviateStore
from pipeline.weaviate_text import bm25_query, search_text, stem
from tests.store_contract import PAY, SEARCH, StoreContract, unit

WEAVIATE_URL = os.environ.get("WEAVIATE_URL", "")


# --- the contract, against a real server
@pytest.mark.skipif(not WEAVIATE_URL, reason=(
    "needs a Weaviate server: docker run -p 8080:8080 -p 50051:50051 cr.weaviate.io/semitechnologies/weaviate:1.32.0, "
    "then WEAVIATE_URL=http://localhost:8080 pytest --slow tests/test_weaviate_store.py"))
class TestWeaviateStoreContract(StoreContract):
    """Runs three times: generations behind an alias, behind the meta object (servers < 1.32), and as tenants."""

    @pytest.fixture(params=["alias", "meta", "tenant"])
    def store(self, request):
        settings = load_settings(env={}, weaviate_url=WEAVIATE_URL,
                                 weaviate_collection=f"RavbotTest{uuid.uuid4().hex[:10]}",
                                 weaviate_tenant="acme" if request.param == "tenant" else "")
        s = self._open(weaviate_options(settings), request.param)
        yield s
        client = s.client
        if client.alias.exists(alias_name=s.base):
            client.alias.delete(alias_name=s.base)
        for name in client.collections.list_all(simple=True):
            if name.startswith(s.base):
                client.collections.delete(name)
        s.close()

    @staticmethod
    def _open(options, mode: str) -> WeaviateStore:
        s = WeaviateStore(options)
        assert s.client is not None  # connect now, then pin the pointer kind under test
        if mode == "meta":
            s._aliases = False
        s.mode = mode
        return s

    def reopen(self, store):
        return self._open(store.options, store.mode)


# --- no server needed
def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def unreachable(settings):
    port = closed_port()
    return settings.replace(store="weaviate", weaviate_url=f"http://127.0.0.1:{port}", weaviate_grpc_port=closed_port())


def test_creating_the_store_does_not_connect(unreachable):
    store = WeaviateStore(weaviate_options(unreachable))
    assert store._client is None
    store.close()


@pytest.mark.parametrize("call", [
    lambda s: s.counts(),
    lambda s: s.dense_search(unit(1), 3),
    lambda s: s.bm25_search("salary", 3),
    lambda s: s.doc_hashes(),
    lambda s: s.begin("handbook"),
])
def test_a_refused_connection_raises_store_unavailable_with_the_url(unreachable, call):
    store = WeaviateStore(weaviate_options(unreachable))
    with pytest.raises(StoreUnavailable, match=f"{unreachable.weaviate_url}.*unreachable"):
        call(store)
    store.close()


def test_a_failed_begin_releases_the_build_lock(unreachable):
    store = WeaviateStore(weaviate_options(unreachable))
    for _ in range(2):  # the second begin would say "already running" if the first kept the lock
        with pytest.raises(StoreUnavailable):
            store.begin("handbook")


@pytest.mark.parametrize("changes, message", [
    ({"weaviate_fusion": "reciprocal"}, "weaviate_fusion 'reciprocal'"),
    ({"weaviate_collection": "ravbot-index"}, "weaviate_collection 'ravbot-index'"),
    ({"weaviate_collection": "1st"}, "weaviate_collection '1st'"),
])
def test_bad_settings_are_named(settings, changes, message):
    with pytest.raises(ValueError, match=message):
        WeaviateStore(weaviate_options(settings.replace(**changes)))


def test_the_collection_name_is_capitalised_as_weaviate_stores_it(settings):
    assert WeaviateStore(weaviate_options(settings.replace(weaviate_collection="teamDocs"))).base == "TeamDocs"


def test_batch_failures_raise_with_counts_and_first_messages():
    def failure(message: str, i: int) -> ErrorObject:
        obj = BatchObject(collection="Ravbot_g2", properties={"chunk_id": f"c{i}"}, uuid=chunk_uuid(f"c{i}"), index=i)
        return ErrorObject(message=message, object_=obj)

    failed = [failure("vector lengths don't match: 384 vs 8", 0), failure("vector lengths don't match: 384 vs 8", 1),
              failure("no such property 'colour'", 2), failure("store is read-only", 3), failure("timeout", 4)]
    with pytest.raises(BatchFailed) as e:
        check_failed(failed, 120, "Ravbot_g2")
    text = str(e.value)
    assert text.startswith("5 of 120 objects failed to index into Ravbot_g2")
    assert "vector lengths don't match: 384 vs 8; no such property 'colour'; store is read-only" in text
    assert "timeout" not in text  # the first three distinct messages only
    check_failed([], 120, "Ravbot_g2")  # nothing failed: no error


def test_uuids_are_deterministic_and_distinct_per_kind():
    assert chunk_uuid("handbook:pay#0:ab12") == chunk_uuid("handbook:pay#0:ab12")
    assert chunk_uuid("handbook:pay#0:ab12") != chunk_uuid("handbook:pay#1:ab12")
    assert chunk_uuid("handbook:pay") != doc_uuid("handbook:pay")
    assert uuid.UUID(chunk_uuid("x")).version == 5


def test_chunk_properties_round_trip():
    for chunk in PAY[1] + SEARCH[1]:
        props = chunk_properties(chunk)
        assert chunk_from_properties(props) == chunk
        assert props["kind"] == "chunk" and props["search_text"] == search_text(chunk.context_text)
    assert chunk_properties(PAY[1][0])["headings"] == ["Money", "Pay"]


def test_document_records_carry_the_hash_and_nothing_searchable():
    doc = PAY[0]
    props = document_properties(doc)
    assert props["kind"] == "document" and props["doc_id"] == doc.id and props["doc_hash"] == doc.hash
    assert props["search_text"] == props["context_text"] == ""


def test_stemming_matches_the_forms_porter_step_one_joins():
    assert stem("indexing") == stem("indexed") == stem("indexes") == "index"
    assert stem("salary") == stem("salaries")
    assert stem("hopping") == "hop" and stem("filing") == stem("file") and stem("agreed") == stem("agree")
    assert stem("caress") == "caress" and stem("is") == "is"


def test_bm25_queries_are_plain_stemmed_words():
    assert bm25_query('NOT "Indexing" AND (the salaries*') == "not index salari"
    assert bm25_query("the of and") == ""
    assert len(bm25_query(" ".join(f"w{i}" for i in range(100))).split()) == 64
    assert search_text("Indexed pages, 2024!") == "index page 2024"


def test_filters_are_pushed_down_as_contains_any():
    assert build_filters(None) is None
    assert build_filters({}) is None
    assert build_filters({"source": [], "domain": ()}) is None
    assert build_filters({"source": ["wiki", "handbook"]}) == Filter.by_property("source").contains_any(["wiki", "handbook"])
    both = build_filters({"source": ["wiki"], "domain": ["eng"]})
    assert both.filters == [Filter.by_property("source").contains_any(["wiki"]),
                            Filter.by_property("domain").contains_any(["eng"])]
    with pytest.raises(ValueError, match="'colour'"):
        build_filters({"colour": ["red"]})


def created(settings, name: str) -> dict:
    """The collection definition the client would send for `collection_config` (validated by the client)."""
    return _CollectionConfigCreate(**collection_config(weaviate_options(settings), name))._to_dict()


def test_a_generation_collection_has_self_provided_vectors_shards_and_replicas(settings):
    payload = created(settings.replace(weaviate_replication=3, weaviate_shards=4), "Ravbot_g7")
    assert payload["class"] == "Ravbot_g7"
    assert payload["vectorConfig"] == {"embedding": {"vectorizer": {"none": {}}, "vectorIndexType": "hnsw",
                                                     "vectorIndexConfig": {"distance": "cosine"}}}
    assert payload["replicationConfig"]["factor"] == 3
    assert payload["shardingConfig"]["desiredCount"] == 4
    assert "multiTenancyConfig" not in payload
    props = {p["name"]: p for p in payload["properties"]}
    assert set(props) >= {"text", "context_text", "title", "url", "path", "headings", "source", "domain",
                          "doc_id", "doc_hash", "modified", "position", "chunk_id", "kind", "search_text"}
    assert [n for n, p in props.items() if p.get("indexSearchable")] == ["search_text"]
    assert props["search_text"]["tokenization"] == "whitespace"
    assert all(props[n]["tokenization"] == "field" and props[n]["indexFilterable"] for n in ("source", "domain", "doc_id", "kind"))


def test_with_a_tenant_the_collection_is_multi_tenant_without_a_shard_count(settings):
    payload = created(settings.replace(weaviate_tenant="acme", weaviate_replication=2), "Ravbot")
    assert payload["multiTenancyConfig"] == {"enabled": True, "autoTenantCreation": False}
    assert payload["replicationConfig"]["factor"] == 2
    assert "shardingConfig" not in payload


@pytest.mark.parametrize("url, expected", [
    ("http://localhost:8080", ("localhost", 8080, False)),
    ("https://weaviate.example.com", ("weaviate.example.com", 443, True)),
    ("weaviate:8080", ("weaviate", 8080, False)),
    ("http://10.0.0.5", ("10.0.0.5", 80, False)),
])
def test_urls_are_split_for_connect_to_custom(url, expected):
    assert parse_url(url) == expected


def test_a_url_that_is_not_http_is_refused_by_name():
    with pytest.raises(ValueError, match="'grpc://weaviate:50051'"):
        parse_url("grpc://weaviate:50051")


def test_versions_and_generation_names_parse():
    assert version_tuple("1.32.0") == (1, 32, 0) and version_tuple("1.27.3-rc.1") == (1, 27, 3)
    assert version_tuple("1.30") == (1, 30, 0)
    assert generation_of("Ravbot_g12") == 12 and generation_of("acme__g3") == 3 and generation_of("Ravbot") == 0
