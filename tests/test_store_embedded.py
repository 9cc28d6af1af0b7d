"""EmbeddedStore: the shared Store contract on a temporary SQLite file, plus what is its own."""

from __future__ import annotations

import pytest

from pipeline.store import EmbeddedStore, StoreUnavailable
from tests.store_contract import LEAVE, PAY, SEARCH, StoreContract, build, hit_ids, ids, unit


class TestEmbeddedStoreContract(StoreContract):
    @pytest.fixture
    def store(self, tmp_path):
        s = EmbeddedStore(tmp_path / "index" / "ravbot.db")
        yield s
        s.close()

    def reopen(self, store):
        return EmbeddedStore(store.path)


@pytest.fixture
def path(tmp_path):
    return tmp_path / "ravbot.db"


def test_a_reopened_file_is_searched_without_embedding_anything_again(path, embedder):
    texts = ["The VPN must be used on public Wi-Fi.", "Lunch is served at noon in the canteen."]
    from pipeline.types import Chunk, Document

    doc = Document(id="it:vpn", source="it", title="Security", text="\n".join(texts), path="/it/vpn.md")
    chunks = [Chunk(id=f"it:vpn#{i}", doc_id=doc.id, text=t, context_text=t, title=doc.title,
                    source="it", path=doc.path, position=i, doc_hash=doc.hash) for i, t in enumerate(texts)]
    first = EmbeddedStore(path)
    build(first, "it", [(doc, chunks, embedder.encode(texts))])
    first.close()
    query = embedder.encode(["When do I need the VPN?"])[0]
    before = embedder.texts_encoded

    again = EmbeddedStore(path)
    try:
        assert hit_ids(again.dense_search(query, 1)) == ["it:vpn#0"]
        assert hit_ids(again.bm25_search("canteen lunch", 1)) == ["it:vpn#1"]
        assert again.doc_hashes("it") == {"it:vpn": doc.hash}
    finally:
        again.close()
    assert embedder.texts_encoded == before


@pytest.mark.parametrize("query", [
    '"', '""', "NOT", "AND OR NOT", "salary*", "^salary", "NEAR(salary leave, 2)", "text:salary",
    "{text context_text}: salary", "salary - leave", "(", ")", "'", "a AND", "\x00salary", "ünïcödé 工资",
])
def test_fts_syntax_in_user_text_never_breaks_bm25(path, query):
    store = EmbeddedStore(path)
    try:
        build(store, "handbook", [PAY, LEAVE])
        results = store.bm25_search(query, 5)
        if "salary" in query:
            assert ids(PAY)[0] in hit_ids(results)
    finally:
        store.close()


def test_a_corrupt_file_raises_store_unavailable_naming_the_path(path):
    path.write_bytes(b"this is not a database" * 200)
    store = EmbeddedStore(path)
    with pytest.raises(StoreUnavailable, match=str(path)):
        store.counts()


def test_an_unopenable_path_raises_store_unavailable_naming_the_path(tmp_path):
    path = tmp_path / "a-directory.db"
    path.mkdir()
    store = EmbeddedStore(path)
    with pytest.raises(StoreUnavailable, match=str(path)):
        store.dense_search(unit(1), 3)


def test_a_closed_store_raises_store_unavailable(path):
    store = EmbeddedStore(path)
    build(store, "wiki", [SEARCH])
    store.close()
    with pytest.raises(StoreUnavailable, match="closed"):
        store.bm25_search("index", 3)


def test_only_one_build_runs_at_a_time(path):
    store = EmbeddedStore(path)
    try:
        first = store.begin("wiki")
        with pytest.raises(RuntimeError, match="already running"):
            store.begin("handbook")
        first.abort()
        store.begin("handbook").abort()
    finally:
        store.close()
