"""Sentence vectors on disk: embedded at index time, read back by questions, bounded, one model's."""

from __future__ import annotations

import numpy as np
import pytest

from bot.app import build, stage_options
from config.settings import load_settings
from pipeline.claims import extract_claims
from pipeline.evidence import hit_to_evidence, kb_evidence_batch
from pipeline.prose import prose_units
from pipeline.sentence_vectors import SentenceVectors, chunk_texts
from pipeline.types import Chunk, Hit, Question
from pipeline.verify import verify_claims
from pipeline.verify.candidates import evidence_candidates
from tests.fakes.embedder import FakeEmbedder

LEAVE = """# Leave

## Annual leave

You earn 4 hours of annual leave per pay period in your first three years. After that, you earn 6 hours.
You can carry over at most 240 hours into the next leave year. Hours above that are forfeited.

To take leave:

- Request leave in the HR system at least two weeks ahead.
- Your supervisor approves or denies the request.
"""

VPN = """# VPN

The VPN gateway is vpn.example.com. Connect with the corporate client before you open internal sites.
Public Wi-Fi always needs the VPN.
"""


def _vectors(tmp_path, max_rows: int = 100, model: str = "m") -> SentenceVectors:
    return SentenceVectors(tmp_path / "sentences.sqlite", model, max_rows)


def test_vectors_come_back_exactly_and_only_for_texts_stored(tmp_path):
    store = _vectors(tmp_path)
    rows = np.random.default_rng(0).normal(size=(3, 8)).astype(np.float32)
    store.put(["a", "b", "c"], rows)
    got = store.get(["c", "a", "nope"])
    assert set(got) == {"a", "c"}
    np.testing.assert_array_equal(got["a"], rows[0])
    np.testing.assert_array_equal(got["c"], rows[2])
    assert store.missing(["a", "nope", "nope", "new"]) == ["nope", "new"]
    store.close()
    again = _vectors(tmp_path)
    np.testing.assert_array_equal(again.get(["b"])["b"], rows[1])  # on disk, not in memory
    again.close()


def test_the_file_keeps_at_most_max_rows_dropping_the_oldest(tmp_path):
    store = _vectors(tmp_path, max_rows=3)
    for i, text in enumerate(["one", "two", "three", "four", "five"]):
        store.put([text], np.full((1, 4), i, dtype=np.float32))
    assert store.count() == 3 and store.room() == 0
    assert set(store.get(["one", "two", "three", "four", "five"])) == {"three", "four", "five"}
    store.close()
    with pytest.raises(ValueError, match="max_rows must be at least 1, not 0"):
        _vectors(tmp_path, max_rows=0)


def test_a_file_opened_for_another_model_starts_empty(tmp_path):
    store = _vectors(tmp_path, model="all-MiniLM-L6-v2|torch")
    store.put(["a"], np.ones((1, 4), dtype=np.float32))
    store.close()
    other = _vectors(tmp_path, model="all-MiniLM-L6-v2|torch-int8")
    assert other.get(["a"]) == {} and other.count() == 0
    other.close()


def test_chunk_texts_hold_what_the_answer_and_alignment_embed():
    text = LEAVE.split("## Annual leave\n", 1)[1]
    chunk = Chunk(id="c1", doc_id="d", text=text, context_text=text, title="Leave", headings=("Leave", "Annual leave"))
    texts = set(chunk_texts(chunk))
    assert {u.text for u in prose_units(chunk.text)} <= texts  # the extractive answer's candidates
    evidence = hit_to_evidence(Hit(chunk=chunk, score=0.0)).checked_text  # as the claim checker builds it
    for claim in ("You can carry over 240 hours.", "Request leave two weeks ahead.", "After three years you earn 6 hours."):
        assert {t for t, _ in evidence_candidates(claim, [evidence])} <= texts  # alignment's sentences and windows


class Recording(FakeEmbedder):
    """The fake model, recording every text it embeds."""

    def __init__(self):
        super().__init__()
        self.seen: list[str] = []

    def encode(self, texts, batch_size=32, progress=False):
        self.seen.extend(texts)
        return super().encode(texts, batch_size, progress)


def _ask(tmp_path, sentence_vectors: int, question: str):
    docs = tmp_path / f"docs-{sentence_vectors}"
    docs.mkdir()
    (docs / "leave.md").write_text(LEAVE)
    (docs / "vpn.md").write_text(VPN)
    settings = load_settings(env={}, data_dir=str(tmp_path / f"data-{sentence_vectors}"), sources=f"d={docs}",
                             wikipedia="off", sentence_vectors=sentence_vectors)
    embedder = Recording()
    app = build(settings, run_scheduler=False, embedder=embedder)
    try:
        app.index_one("d")
        indexed = len(embedder.seen)
        embedder.seen.clear()
        answer = app.ask(Question(question))
    finally:
        app.close()
    return answer, indexed, list(embedder.seen)


def test_with_sentence_vectors_a_question_embeds_only_itself_and_its_claims(tmp_path):
    question = "How many hours of annual leave can I carry over?"
    plain, indexed_plain, asked_plain = _ask(tmp_path, 0, question)
    stored, indexed_stored, asked_stored = _ask(tmp_path, 1000, question)

    assert stored.text == plain.text and not stored.idk  # the same answer, the same verdicts
    assert [(v.claim.text, v.label) for v in stored.verdicts] == [(v.claim.text, v.label) for v in plain.verdicts]
    assert indexed_stored > indexed_plain  # indexing embedded the sentences as well as the chunks
    claims = [set(v.claim.text.lower().split()) for v in stored.verdicts]
    for text in asked_stored:  # the question, its claims, or a claim with a detail taken out
        assert text == question or any(set(text.lower().split()) <= words for words in claims), text
    assert len(asked_stored) < len(asked_plain)
    assert asked_stored.count(question) == 1  # retrieval and the extractive answer share its vector


def test_a_claim_is_embedded_once_for_its_evidence_search_and_its_alignment(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "leave.md").write_text(LEAVE)
    settings = load_settings(env={}, data_dir=str(tmp_path / "data"), sources=f"d={docs}", wikipedia="off")
    embedder = Recording()
    app = build(settings, run_scheduler=False, embedder=embedder)
    try:
        app.index_one("d")
        embedder.seen.clear()
        claims = extract_claims("Leave above 240 hours is paid out at the end of the leave year [1].", [])
        options = stage_options(settings)
        evidence = kb_evidence_batch([c.text for c in claims], store=app.parts.store, embedder=app.parts.embedder,
                                     options=options.retrieval, k=options.evidence_k)
        verify_claims(claims, evidence, method="combiner", embedder=app.parts.embedder,
                      options=options.verification, verifier=None, cited=[True])
    finally:
        app.close()
    assert [c.text for c in claims] == ["Leave above 240 hours is paid out at the end of the leave year."]
    assert embedder.seen.count(claims[0].text) == 1


def test_an_unusable_sentence_file_is_logged_and_questions_are_still_answered(tmp_path, caplog):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "vpn.md").write_text(VPN)
    data = tmp_path / "data"
    data.mkdir()
    (data / "sentences.sqlite").write_bytes(b"this is not a SQLite database" * 100)
    settings = load_settings(env={}, data_dir=str(data), sources=f"d={docs}", wikipedia="off")
    app = build(settings, run_scheduler=False, embedder=FakeEmbedder())
    try:
        with caplog.at_level("WARNING", logger="pipeline.sentence_vectors"):
            counts = app.index_one("d")
            answer = app.ask(Question("What is the VPN gateway?"))
    finally:
        app.close()
    assert counts["added"] == 1
    assert "vpn.example.com" in answer.text and not answer.error and answer.verdicts
    assert "indexing goes on without them" in caplog.text and "embedding instead" in caplog.text
