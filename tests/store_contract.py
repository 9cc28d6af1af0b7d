"""The `Store` contract: one mixin of behaviour tests that every store backend must pass.

A backend's test module subclasses `StoreContract` and provides two things:
- a `store` fixture yielding a fresh, empty store (and closing it afterwards);
- `reopen(store)`: a new store instance over the same data, as a restarted process sees it.

Vectors are small hand-made unit vectors (dimension 8) and documents are written by hand,
so the contract runs in seconds with no model.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest

from pipeline.types import Chunk, Document, content_hash

DIM = 8


def unit(*weights: float) -> np.ndarray:
    """A normalised float32 vector of dimension DIM whose leading components are `weights`."""
    v = np.zeros(DIM, dtype=np.float32)
    v[: len(weights)] = weights
    return v / np.linalg.norm(v)


def make_doc(source: str, name: str, text: str, *, title: str = "", domain: str = "", url: str = "") -> Document:
    return Document(id=f"{source}:{name}", source=source, title=title or name, text=text,
                    path=f"/{source}/{name}", url=url, modified=1_700_000_000.0, domain=domain)


def make_chunks(doc: Document, parts: Sequence[str], headings: tuple[str, ...] = ()) -> list[Chunk]:
    """Chunks with content-derived ids, as the chunker makes them."""
    return [
        Chunk(id=f"{doc.id}#{i}:{content_hash(part)}", doc_id=doc.id, text=part,
              context_text=f"{doc.title}\n{part}", title=doc.title, headings=headings,
              source=doc.source, domain=doc.domain, url=doc.url, path=doc.path, position=i,
              doc_hash=doc.hash, modified=doc.modified)
        for i, part in enumerate(parts)
    ]


Item = tuple[Document, list[Chunk], np.ndarray]


def item(doc: Document, parts: Sequence[str], vectors: Sequence[np.ndarray], headings: tuple[str, ...] = ()) -> Item:
    return doc, make_chunks(doc, parts, headings), np.vstack(vectors).astype(np.float32)


def build(store, source: str, items: Sequence[Item] = (), keep: Sequence[str] = ()) -> dict[str, int]:
    """One complete index build of `source`: keep some documents, add others, commit."""
    b = store.begin(source)
    for doc_id in keep:
        b.keep(doc_id)
    for doc, chunks, vectors in items:
        b.add(doc, chunks, vectors)
    return b.commit()


# The example knowledge base: two sources, three domains.
PAY = item(make_doc("handbook", "pay", "", title="Payroll", domain="hr"),
           ["Salaries are paid on the last working day of each month.",
            "Expense claims are reimbursed with the next salary payment."],
           [unit(1, 0, 0), unit(1, 1, 0)], headings=("Money", "Pay"))
LEAVE = item(make_doc("handbook", "leave", "", title="Leave", domain="hr"),
             ["Every employee has twenty-five days of annual leave."],
             [unit(0, 1, 0)])
SEARCH = item(make_doc("wiki", "search", "", title="Search service", domain="eng", url="https://wiki.example/search"),
              ["The search index was rebuilt overnight and indexed every page of the wiki.",
               "Queries are served by two replicas behind a load balancer."],
              [unit(0, 0, 1), unit(0, 1, 1)])


def ids(item_: Item) -> list[str]:
    return [c.id for c in item_[1]]


def hit_ids(results: Sequence[tuple[str, float]]) -> list[str]:
    return [cid for cid, _ in results]


class StoreContract:
    """Behaviour every `Store` must have. Subclasses provide the `store` fixture and `reopen`."""

    def reopen(self, store):
        """A new store instance over the same data (a restarted process)."""
        raise NotImplementedError

    @pytest.fixture
    def full(self, store):
        """The store with the example knowledge base indexed (handbook, then wiki)."""
        build(store, "handbook", [PAY, LEAVE])
        build(store, "wiki", [SEARCH])
        return store

    # --- empty store
    def test_an_empty_store_has_nothing_and_searches_return_nothing(self, store):
        assert store.counts() == {"documents": 0, "chunks": 0}
        assert store.doc_hashes() == {}
        assert store.dense_search(unit(1), 5) == []
        assert store.bm25_search("salary", 5) == []
        assert store.chunks(["nope"]) == []
        assert store.vectors(["nope"]) == {}

    # --- adding
    def test_commit_reports_and_serves_what_was_added(self, store):
        result = build(store, "handbook", [PAY, LEAVE])
        assert result == {"documents": 2, "chunks": 3, "removed": 0}
        assert store.counts() == {"documents": 2, "chunks": 3}
        assert store.doc_hashes() == {PAY[0].id: PAY[0].hash, LEAVE[0].id: LEAVE[0].hash}

    def test_doc_hashes_by_source(self, full):
        assert set(full.doc_hashes("handbook")) == {PAY[0].id, LEAVE[0].id}
        assert full.doc_hashes("wiki") == {SEARCH[0].id: SEARCH[0].hash}
        assert full.doc_hashes("nowhere") == {}
        assert len(full.doc_hashes()) == 3

    def test_chunks_come_back_whole_in_the_order_asked_and_missing_ids_are_skipped(self, full):
        wanted = [ids(SEARCH)[1], "missing", ids(PAY)[0]]
        got = full.chunks(wanted)
        assert [c.id for c in got] == [ids(SEARCH)[1], ids(PAY)[0]]
        assert got[0] == SEARCH[1][1]
        assert got[1] == PAY[1][0]
        assert got[1].headings == ("Money", "Pay")
        assert got[0].url == "https://wiki.example/search"

    def test_vectors_returns_the_stored_embeddings(self, full):
        got = full.vectors([ids(PAY)[1], ids(SEARCH)[0], "missing"])
        assert set(got) == {ids(PAY)[1], ids(SEARCH)[0]}
        np.testing.assert_allclose(got[ids(PAY)[1]], PAY[2][1], atol=1e-6)
        np.testing.assert_allclose(got[ids(SEARCH)[0]], SEARCH[2][0], atol=1e-6)

    def test_add_refuses_chunks_and_vectors_of_different_lengths(self, store):
        doc, chunks, vectors = PAY
        b = store.begin("handbook")
        try:
            with pytest.raises(ValueError, match="vectors"):
                b.add(doc, chunks, vectors[:1])
        finally:
            b.abort()

    # --- dense search
    def test_dense_search_orders_by_cosine(self, full):
        results = full.dense_search(unit(1, 0.2, 0), 3)
        assert hit_ids(results) == [ids(PAY)[0], ids(PAY)[1], ids(LEAVE)[0]]
        scores = [s for _, s in results]
        assert scores == sorted(scores, reverse=True)
        assert scores[0] == pytest.approx(float(unit(1, 0.2, 0) @ unit(1, 0, 0)), abs=1e-4)

    def test_dense_search_returns_at_most_n(self, full):
        assert len(full.dense_search(unit(1, 1, 1), 2)) == 2
        assert len(full.dense_search(unit(1, 1, 1), 50)) == 5

    # --- BM25
    def test_bm25_finds_other_forms_of_a_word(self, full):
        assert hit_ids(full.bm25_search("indexing", 5)) == [ids(SEARCH)[0]]
        assert ids(PAY)[0] in hit_ids(full.bm25_search("paying salary", 5))

    def test_bm25_ranks_the_chunk_matching_more_words_first(self, full):
        results = full.bm25_search("replicas load balancer", 5)
        assert hit_ids(results)[0] == ids(SEARCH)[1]
        scores = [s for _, s in results]
        assert scores == sorted(scores, reverse=True) and scores[0] > 0

    def test_bm25_with_no_matching_word_returns_nothing(self, full):
        assert full.bm25_search("zebra", 5) == []
        assert full.bm25_search("", 5) == []

    # --- names anywhere in the index
    def test_mentioned_finds_whole_names_in_any_served_chunk(self, full):
        asked = ["load balancer", "Load-Balancer", "annual leave", "balancer load", "annual", "leaves", "replica", "zebra", ""]
        assert full.mentioned(asked) == {"load balancer", "Load-Balancer", "annual leave", "annual"}

    def test_mentioned_sees_only_the_served_generation(self, full):
        build(full, "wiki", [item(make_doc("wiki", "search", "", title="Search service", domain="eng"),
                                  ["Queries are served by a cluster."], [unit(0, 0, 1)])])
        assert full.mentioned(["load balancer", "cluster"]) == {"cluster"}

    def test_mentioned_finds_a_dotted_name_by_its_parts_and_imports(self, full):
        build(full, "code", [item(make_doc("code", "config", "", title="Config", domain="eng"),
                                  ["from starlette.config import environ; read frames with websocket.iter_bytes()."],
                                  [unit(0, 1, 1)])])
        asked = ["starlette.config.environ", "iter_bytes", "websocket.iter_text", "config.environ"]
        assert full.mentioned(asked) == {"starlette.config.environ", "iter_bytes"}

    def test_mentioned_reads_titles_and_headings_too(self, full):
        # a reference page names each option only in its heading: "maxsockets", then "Default: 15"
        build(full, "cli", [item(make_doc("cli", "config", "", title="maxsockets", domain="eng"),
                                 ["Default: 15. The maximum number of connections to use per origin."], [unit(1, 1, 0)])])
        assert full.mentioned(["maxsockets", "--maxsockets", "maxconnections"]) == {"maxsockets", "--maxsockets"}

    def test_bm25_treats_query_syntax_in_user_text_as_words(self, full):
        for query in ['"salary', "NOT salary AND (leave", "salary* OR -leave:", "col:umn ^ NEAR(x y)", "'; drop table chunks; --"]:
            full.bm25_search(query, 5)  # must not raise
        assert ids(LEAVE)[0] in hit_ids(full.bm25_search('"annual" AND (leave', 5))

    # --- filters
    def test_filters_by_source_and_domain_in_both_searches(self, full):
        by_source = {"source": ["wiki"]}
        assert set(hit_ids(full.dense_search(unit(1, 1, 1), 10, by_source))) == set(ids(SEARCH))
        assert hit_ids(full.bm25_search("salary page", 10, by_source)) == [ids(SEARCH)[0]]
        by_domain = {"domain": ["hr"]}
        assert set(hit_ids(full.dense_search(unit(0, 0, 1), 10, by_domain))) == set(ids(PAY) + ids(LEAVE))
        assert hit_ids(full.bm25_search("indexed", 10, by_domain)) == []
        both = {"source": ["handbook", "wiki"], "domain": ["eng"]}
        assert set(hit_ids(full.dense_search(unit(1), 10, both))) == set(ids(SEARCH))
        assert hit_ids(full.dense_search(unit(1), 10, {"source": ["nowhere"]})) == []

    def test_empty_filter_values_do_not_filter(self, full):
        assert len(full.dense_search(unit(1), 10, {"source": [], "domain": []})) == 5
        assert len(full.dense_search(unit(1), 10, {})) == 5

    # --- updates and deletes
    def test_a_changed_document_replaces_its_chunks(self, full):
        pay_v2 = item(make_doc("handbook", "pay", "changed", title="Payroll", domain="hr"),
                      ["Salaries are paid on the 25th of each month."], [unit(1, 0, 0.1)])
        result = build(full, "handbook", [pay_v2], keep=[LEAVE[0].id])
        assert result == {"documents": 3, "chunks": 4, "removed": 0}
        assert full.doc_hashes("handbook")[PAY[0].id] == pay_v2[0].hash
        served = hit_ids(full.dense_search(unit(1), 10))
        assert ids(pay_v2)[0] in served
        assert not set(ids(PAY)) & set(served)
        assert ids(PAY)[1] not in hit_ids(full.bm25_search("expense claims reimbursed", 10))

    def test_a_document_neither_kept_nor_added_is_removed_on_commit(self, full):
        result = build(full, "handbook", keep=[PAY[0].id])
        assert result == {"documents": 2, "chunks": 4, "removed": 1}
        assert LEAVE[0].id not in full.doc_hashes()
        assert ids(LEAVE)[0] not in hit_ids(full.dense_search(unit(0, 1, 0), 10))
        assert full.bm25_search("annual leave", 10) == []

    def test_keep_carries_an_unchanged_document_over(self, full):
        build(full, "handbook", keep=[PAY[0].id, LEAVE[0].id])
        assert full.counts() == {"documents": 3, "chunks": 5}
        assert hit_ids(full.dense_search(unit(0, 1, 0), 1)) == [ids(LEAVE)[0]]
        np.testing.assert_allclose(full.vectors([ids(PAY)[0]])[ids(PAY)[0]], PAY[2][0], atol=1e-6)

    def test_keeping_a_document_that_is_not_served_raises(self, full):
        b = full.begin("handbook")
        try:
            with pytest.raises(KeyError, match="handbook:ghost"):
                b.keep("handbook:ghost")
        finally:
            b.abort()

    def test_a_build_of_one_source_leaves_other_sources_alone(self, full):
        result = build(full, "handbook")  # the handbook is now empty
        assert result == {"documents": 1, "chunks": 2, "removed": 2}
        assert set(full.doc_hashes()) == {SEARCH[0].id}
        assert set(hit_ids(full.dense_search(unit(1, 1, 1), 10))) == set(ids(SEARCH))
        assert hit_ids(full.bm25_search("indexed", 5)) == [ids(SEARCH)[0]]

    def test_adding_the_same_documents_again_is_idempotent(self, full):
        build(full, "handbook", [PAY, LEAVE])
        build(full, "handbook", [PAY, LEAVE])
        assert full.counts() == {"documents": 3, "chunks": 5}
        served = hit_ids(full.dense_search(unit(1, 1, 1), 50))
        assert len(served) == len(set(served)) == 5

    # --- atomicity
    def test_searches_see_the_old_generation_until_commit(self, full):
        extra = item(make_doc("handbook", "travel", "", title="Travel", domain="hr"),
                     ["Book travel through the approved agency."], [unit(0, 0, 0, 1)])
        b = full.begin("handbook")
        b.add(*extra)  # PAY and LEAVE are neither kept nor added: they go at commit
        assert full.counts() == {"documents": 3, "chunks": 5}
        assert set(full.doc_hashes("handbook")) == {PAY[0].id, LEAVE[0].id}
        assert ids(extra)[0] not in hit_ids(full.dense_search(unit(0, 0, 0, 1), 10))
        assert full.bm25_search("approved agency", 10) == []
        assert hit_ids(full.bm25_search("annual leave", 10)) == [ids(LEAVE)[0]]
        assert b.commit() == {"documents": 2, "chunks": 3, "removed": 2}
        assert hit_ids(full.bm25_search("approved agency", 10)) == [ids(extra)[0]]
        assert full.bm25_search("annual leave", 10) == []

    def test_abort_leaves_the_served_generation_and_a_new_build_can_start(self, full):
        extra = item(make_doc("wiki", "oncall", ""), ["The on-call rota changes every Monday."], [unit(0, 0, 0, 1)])
        b = full.begin("wiki")
        b.add(*extra)
        b.abort()
        assert full.counts() == {"documents": 3, "chunks": 5}
        assert full.bm25_search("rota", 10) == []
        assert build(full, "wiki", keep=[SEARCH[0].id]) == {"documents": 3, "chunks": 5, "removed": 0}
        assert full.bm25_search("rota", 10) == []

    def test_a_build_left_unfinished_by_a_crash_is_discarded_by_the_next_one(self, full):
        extra = item(make_doc("wiki", "oncall", ""), ["The on-call rota changes every Monday."], [unit(0, 0, 0, 1)])
        crashed = full.begin("wiki")
        crashed.add(*extra)  # ...and the process dies: neither commit nor abort
        again = self.reopen(full)
        try:
            assert again.counts() == {"documents": 3, "chunks": 5}
            assert build(again, "wiki", keep=[SEARCH[0].id]) == {"documents": 3, "chunks": 5, "removed": 0}
            assert again.bm25_search("rota", 10) == []
            assert ids(extra)[0] not in hit_ids(again.dense_search(unit(0, 0, 0, 1), 10))
        finally:
            again.close()

    def test_a_new_instance_serves_the_committed_index(self, full):
        again = self.reopen(full)
        try:
            assert again.counts() == {"documents": 3, "chunks": 5}
            assert hit_ids(again.dense_search(unit(0, 0, 1), 1)) == [ids(SEARCH)[0]]
            assert hit_ids(again.bm25_search("indexing", 5)) == [ids(SEARCH)[0]]
        finally:
            again.close()
