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


# --- writes cost the same per chunk at any index size


def _many(n_docs: int, source: str = "bulk") -> list:
    from tests.store_contract import item, make_doc

    return [item(make_doc(source, f"d{i}", str(i), title=f"Doc {i}"),
                 [f"Document {i} says alpha {i}.", f"Document {i} says beta {i}."],
                 [unit(1, i % 7), unit(0, 1, i % 5)]) for i in range(n_docs)]


def test_a_build_larger_than_one_write_batch_serves_every_document(path, monkeypatch):
    import dataclasses

    import pipeline.store
    from tests.store_contract import item

    monkeypatch.setattr(pipeline.store, "WRITE_BATCH_CHUNKS", 7)  # many batches, and a part-filled last one
    store = EmbeddedStore(path)
    try:
        docs = _many(20)
        assert build(store, "bulk", docs) == {"documents": 20, "chunks": 40, "removed": 0}
        assert hit_ids(store.bm25_search("alpha 13", 1)) == ids(docs[13])[:1]
        # a reindex across batches that keeps eleven, changes one and drops the rest
        new5 = item(dataclasses.replace(docs[5][0], text="changed"), ["Document 5 now says gamma."], [unit(0, 0, 1)])
        result = build(store, "bulk", [new5], keep=[d[0].id for i, d in enumerate(docs[:12]) if i != 5])
        assert result == {"documents": 12, "chunks": 23, "removed": 8}
        assert hit_ids(store.bm25_search("gamma", 5)) == ids(new5)
        assert ids(docs[17])[0] not in hit_ids(store.bm25_search("alpha 17", 40))
        assert ids(docs[5])[0] not in hit_ids(store.dense_search(unit(1, 5), 40))
        assert ids(docs[11])[0] in hit_ids(store.dense_search(unit(1, 11 % 7), 40))
    finally:
        store.close()


def test_buffered_writes_are_invisible_until_commit_and_gone_after_abort(path):
    store = EmbeddedStore(path)
    try:
        build(store, "handbook", [PAY, LEAVE])
        b = store.begin("handbook")
        b.add(*_many(1, "handbook")[0])
        b.flush()
        assert store.counts() == {"documents": 2, "chunks": 3}
        assert store.bm25_search("alpha", 5) == []
        b.abort()
        assert store.counts() == {"documents": 2, "chunks": 3}
        assert store.bm25_search("alpha", 5) == []
    finally:
        store.close()


def test_per_document_writes_find_their_rows_through_an_index(path):
    """The statements a build runs for each kept or added document never read a whole table or a whole
    generation (that made writes slow down as the index grew: issue 20)."""
    store = EmbeddedStore(path)
    try:
        docs = _many(6)
        build(store, "bulk", docs)
        b = store.begin("bulk")
        b.keep(docs[0][0].id)
        b.add(*docs[1])
        statements: list[str] = []
        store.db.conn.set_trace_callback(statements.append)
        b.flush()
        store.db.conn.set_trace_callback(None)
        writes = [s for s in statements if s.split(None, 1)[0].lower() in {"insert", "delete", "select", "update"}]
        assert len(writes) >= 6
        for sql in writes:
            plan = [row[-1] for row in store.db.execute("explain query plan " + sql)]
            slow = [line for line in plan if line.startswith("SCAN") or line.endswith("(gen=?)")]
            assert not slow, f"{sql[:120]!r} reads too much: {plan}"
        b.commit()
        assert store.counts() == {"documents": 2, "chunks": 4}
    finally:
        store.close()


def test_searches_read_fts5_matches_first_never_the_whole_generation(path):
    """BM25 and the name search start from FTS5's matches and look each one up; before, the name search
    walked every served chunk and probed FTS5 for each (187 ms a name at 50k chunks: issue 20)."""
    from tests.store_contract import item, make_doc

    store = EmbeddedStore(path)
    try:
        build(store, "bulk", _many(6) + [item(make_doc("bulk", "cfg", "x"), ["Set RAVBOT_TOKEN in the config."], [unit(1)])])
        statements: list[str] = []
        store.db.conn.set_trace_callback(statements.append)
        assert hit_ids(store.bm25_search("alpha 3", 2))[0] == ids(_many(6)[3])[0]
        assert hit_ids(store.bm25_search("alpha", 2, {"source": ["bulk"]}))
        assert store.mentioned(["RAVBOT_TOKEN", "url_prefix"]) == {"RAVBOT_TOKEN"}
        store.db.conn.set_trace_callback(None)
        searches = [s for s in statements if "chunks_fts match" in s]
        assert len(searches) >= 4
        for sql in searches:
            plan = [row[-1] for row in store.db.execute("explain query plan " + sql)]
            assert plan[0].startswith(("SCAN chunks_fts", "CO-ROUTINE")), f"{sql[:120]!r} does not start from FTS5: {plan}"
            slow = [line for line in plan if (line.startswith("SCAN") and "chunks_fts" not in line and line != "SCAN f")
                    or line.endswith("(gen=?)")]
            assert not slow, f"{sql[:120]!r} reads too much: {plan}"
    finally:
        store.close()


def test_bm25_still_finds_served_chunks_when_unserved_ones_rank_higher(path):
    """BM25 joins FTS5's best 4×n matches with the served generation; when a build in progress holds
    better matches than every served chunk, it ranks every match instead of answering with too few."""
    from tests.store_contract import item, make_doc

    store = EmbeddedStore(path)
    try:
        served = item(make_doc("handbook", "long", "x"), ["Alpha appears once in this long sentence about many other "
                                                         "things such as leave, pay, travel and training."], [unit(1)])
        build(store, "handbook", [served])
        b = store.begin("drafts")
        for i in range(10):
            b.add(*item(make_doc("drafts", f"d{i}", str(i)), [f"alpha alpha alpha {i}"], [unit(1)]))
        b.flush()  # written, not committed: not served
        assert hit_ids(store.bm25_search("alpha", 1)) == ids(served)
        assert hit_ids(store.bm25_search("alpha", 3)) == ids(served)
        b.abort()
    finally:
        store.close()


def test_an_index_of_the_first_schema_is_migrated_on_open(path):
    store = EmbeddedStore(path)
    build(store, "handbook", [PAY, LEAVE])
    store.db.execute("drop index idx_chunks_doc_id")  # what schema 1 lacked
    store.db.execute("delete from meta where key = 'schema'")
    store.close()

    again = EmbeddedStore(path)
    try:
        indexes = {row[0] for row in again.db.execute("select name from sqlite_master where type = 'index'")}
        assert "idx_chunks_doc_id" in indexes
        assert again.db.execute("select value from meta where key = 'schema'").fetchone()[0] == "2"
        assert again.counts() == {"documents": 2, "chunks": 3}
        assert hit_ids(again.bm25_search("annual leave", 1)) == ids(LEAVE)
    finally:
        again.close()


def test_connections_use_wal_with_synchronous_normal(path):
    store = EmbeddedStore(path)
    try:
        assert store.db.execute("pragma journal_mode").fetchone()[0] == "wal"
        assert store.db.execute("pragma synchronous").fetchone()[0] == 1  # NORMAL
    finally:
        store.close()
