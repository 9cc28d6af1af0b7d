"""Authored verifier pairs (lab.paraphrase_pairs): flips refute, embellishments add what the evidence lacks,
rewordings and subsets stay entailed, and the pairs are split by their source sentence."""

from __future__ import annotations

import random
import re

import numpy as np
import pytest

from lab import paraphrase_pairs as pp
from lab import train_verifier
from lab.verifier_data import AUTHORED, Example
from pipeline.claims import load_nlp


@pytest.fixture(scope="module")
def nlp():
    return load_nlp()


def _words(text: str) -> set[str]:
    return set(re.findall(r"\w+", text.lower()))


@pytest.mark.parametrize(("sentence", "expected"), [
    ("Plugins are designed to not perform any I/O.", {"Plugins are designed to perform any I/O."}),
    ("The scheduler does not retry failed jobs.", {"The scheduler retries failed jobs."}),
    ("Guests cannot edit the wiki.", {"Guests can edit the wiki."}),
])
def test_flip_removes_a_negation(nlp, sentence, expected):
    flips = {pp.flip_polarity(nlp(sentence), random.Random(seed)) for seed in range(20)}
    assert flips & expected, flips


def test_flip_inserts_a_negation_or_an_opposite(nlp):
    flips = {pp.flip_polarity(nlp("The bot uploads the report before the meeting."), random.Random(s)) for s in range(30)}
    assert "The bot does not upload the report before the meeting." in flips
    assert "The bot uploads the report after the meeting." in flips
    flips = {pp.flip_polarity(nlp("Caching is enabled by default."), random.Random(s)) for s in range(30)}
    assert flips <= {"Caching is disabled by default.", "Caching is not enabled by default."} and len(flips) == 2
    assert pp.flip_polarity(nlp("Hello there."), random.Random(0)) == ""


def test_embellishment_adds_a_detail_the_evidence_lacks(nlp):
    evidence = "The exporter writes one file per channel."
    donors = ["through a shared mailbox"]
    made = {pp.embellish(nlp(evidence), donors, evidence, random.Random(s)) for s in range(40)} - {""}
    assert len(made) > 5
    for claim in made:
        assert _words(claim) - _words(evidence), claim  # something the evidence never says
        assert claim.endswith(".")


def test_subset_and_reword_stay_within_the_evidence(nlp):
    sentence = "In 2019, the team moved the servers to Frankfurt and cut costs by a third."
    subsets = {pp.subset(nlp(sentence), random.Random(s)) for s in range(20)} - {""}
    assert subsets
    for claim in subsets:
        assert _words(claim) < _words(sentence), claim
    reworded = pp.reword("However, the library uses a large cache (LRU) [2].", random.Random(0))
    assert "[2]" not in reworded and not reworded.lower().startswith("however")
    assert "cache" in reworded


def test_open_documents_refuse_the_measuring_sets(tmp_path):
    for name in ("answer-check", "holdout"):
        with pytest.raises(ValueError, match=name):
            pp.open_documents(tmp_path / name)


def test_authored_pairs_from_a_document(tmp_path, nlp):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "guide.md").write_text(
        "# Guide\n\nThe indexer reads every Markdown file in the folder. It does not follow symbolic links. "
        "Reindexing is required after a change of the embedding model. Admins can start a reindex from Slack.\n\n"
        "```sh\nravbot index\n```\n", encoding="utf-8")
    documents = pp.open_documents(tmp_path / "data", docs)
    assert documents[0][0] == "docs" and "ravbot index" not in " ".join(documents[0][2])
    pairs = pp.author_pairs(documents, seed=0, nlp=nlp)
    labels = {p.label for p in pairs}
    assert labels == {"supports", "refutes", "nei"}, pairs
    for p in pairs:
        assert p.source in p.evidence or p.kind == "other-sentence"
        if p.kind == "flip":
            assert p.claim != p.source
    flips = [p.claim for p in pairs if p.kind == "flip"]
    assert any("does not" in c or "follows" in c or "optional" in c or "cannot" in c for c in flips), flips


def test_authored_figures_per_kind():
    examples = [Example("c", "e", label, AUTHORED, "g", ("e",), kind)
                for label, kind in [(0, "paraphrase"), (0, "subset"), (1, "flip"), (2, "embellish")]]
    probs = np.array([[0.9, 0.05, 0.05], [0.4, 0.1, 0.5], [0.6, 0.3, 0.1], [0.1, 0.1, 0.8]])
    figures = train_verifier.authored_figures(probs, examples)
    assert figures["authored_paraphrase_read_supports"] == 1.0 and figures["authored_subset_read_supports"] == 0.0
    assert figures["authored_flip_read_supports"] == 1.0 and figures["authored_embellish_read_supports"] == 0.0
    assert figures["auc_authored"] == 0.75  # (0.9, 0.4) against (0.6, 0.1): only 0.4 < 0.6 is misordered
