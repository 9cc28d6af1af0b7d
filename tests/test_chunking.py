"""Chunking: known values for sections, merging, overlap, context text and content-derived ids."""

from __future__ import annotations

import pytest

from pipeline.chunking import chunk_document, context_text, merge, sections, split_sentences
from pipeline.types import Document

GUIDE = """Preamble line.

# Guide

Intro para.

## Install

Run pip. More text here.

Setext title
------------

Body of setext.

### Deep
Deep body.
"""


def test_sections_follow_heading_levels():
    assert sections(GUIDE) == [
        ((), "Preamble line."),
        (("Guide",), "Intro para."),
        (("Guide", "Install"), "Run pip. More text here."),
        (("Guide", "Setext title"), "Body of setext."),
        (("Guide", "Setext title", "Deep"), "Deep body."),
    ]


def test_headings_inside_code_fences_are_not_sections():
    text = "# A\n\n```\n# not a heading\n```\n\ntext\n"
    assert [h for h, _ in sections(text)] == [("A",)]
    indented = "## Using it\n\nExample:\n\n    # Ensure that all requests include a host\n    app = App()\n\nMore text.\n"
    assert [h for h, _ in sections(indented)] == [("Using it",)]


def test_merge_respects_size_and_overlap_in_whole_sentences():
    chunks = merge(["Alpha one. " + "a" * 20, "Beta two. Bravo.", "c" * 30], size=50, overlap=20)
    assert chunks == ["Alpha one. " + "a" * 20 + "\n\nBeta two. Bravo.", "Beta two. Bravo.\n\n" + "c" * 30]
    assert all(len(c) <= 50 for c in chunks)
    # a last sentence longer than the overlap is not cut: the next chunk starts clean
    assert merge(["x" * 40 + " ends here.", "Next piece."], size=60, overlap=20) == ["x" * 40 + " ends here.", "Next piece."]


def test_no_chunk_starts_mid_sentence():
    text = " ".join(f"Sentence number {n} says something about leave hours." for n in range(40))
    for chunk in chunk_document(Document(id="d:1", source="d", title="T", text=text), size=200, overlap=80):
        assert chunk.text.startswith("Sentence number ") and chunk.text.endswith(".")


def test_code_blocks_stay_fenced_in_every_chunk():
    code = "```python\n" + "\n\n".join(f"value_{n} = compute({n})  # step {n}" for n in range(40)) + "\n```"
    doc = Document(id="d:1", source="d", title="T", text=f"Intro text here.\n\n{code}\n\nAfter the code.")
    chunks = chunk_document(doc, size=300, overlap=80)
    for chunk in chunks:
        fences = [line for line in chunk.text.split("\n") if line.startswith("```")]
        assert len(fences) % 2 == 0 and all(len(c) <= 300 for c in [chunk.text])
        for line in chunk.text.split("\n"):
            assert not line.startswith("value_") or fences
    assert sum(c.text.count("compute(") for c in chunks) == 40


def test_long_list_splits_at_items_and_context_text_is_plain():
    items = "\n".join(f"- Item {n} of the [list](https://x.test/{n}) is `code_{n}`." for n in range(30))
    chunks = chunk_document(Document(id="d:1", source="d", title="T", text="Intro:\n\n" + items), size=200, overlap=0)
    assert all(c.text.lstrip().startswith(("- Item", "Intro")) for c in chunks)
    assert "[list]" in chunks[1].text and "list" in chunks[1].context_text
    assert "list (https://x.test/" in chunks[1].context_text  # the address stays searchable
    assert "](https" not in chunks[1].context_text and "`" not in chunks[1].context_text


def test_long_paragraph_splits_by_sentence_then_words():
    doc = Document(id="s:1", source="s", title="T", text="One sentence here. " * 60 + "x" * 30 + " " + "word " * 400)
    chunks = chunk_document(doc, size=200, overlap=40)
    assert all(len(c.text) <= 200 for c in chunks)
    assert "".join(c.text for c in chunks).count("One sentence here.") >= 60


def test_context_text_and_heading_path():
    doc = Document(id="d:1", source="d", title="Guide", text=GUIDE)
    chunks = chunk_document(doc)
    deep = chunks[-1]
    assert deep.headings == ("Guide", "Setext title", "Deep")
    assert deep.text == "Deep body."
    assert deep.context_text == "Document: Guide\nSection: Setext title > Deep\n\nDeep body."
    assert context_text("T", (), "x") == "Document: T\n\nx"
    assert [c.position for c in chunks] == list(range(len(chunks)))


def test_chunk_ids_are_content_derived():
    a = chunk_document(Document(id="d:1", source="d", title="Guide", text=GUIDE))
    b = chunk_document(Document(id="d:1", source="d", title="Guide", text=GUIDE))
    c = chunk_document(Document(id="d:1", source="d", title="Guide", text=GUIDE.replace("Deep body", "Other body")))
    assert [x.id for x in a] == [x.id for x in b]
    assert [x.id for x in a][:-1] == [x.id for x in c][:-1] and a[-1].id != c[-1].id
    assert len({x.id for x in a}) == len(a)


def test_a_document_is_hashed_once_however_many_chunks_it_has(monkeypatch):
    # Each chunk carries its document's hash. Hashing the whole text again for every chunk made
    # chunking quadratic in the document's size: a 4 MB manual took 41 s (benchmarks/big_doc.py).
    import pipeline.types

    text = "\n\n".join(f"## Part {i}\n\nParagraph {i} says something about part {i} of the guide." for i in range(300))
    doc = Document(id="d:big", source="d", title="Guide", text=text)
    whole = []
    real = pipeline.types.content_hash
    monkeypatch.setattr(pipeline.types, "content_hash", lambda t: (whole.append(t) if len(t) >= len(text) else None) or real(t))
    chunks = chunk_document(doc, size=200, overlap=0)
    assert len(chunks) >= 100
    assert len(whole) == 1
    assert {c.doc_hash for c in chunks} == {real("Guide\n" + text)} == {doc.hash}


def test_sentence_split_and_bad_parameters():
    assert split_sentences("It costs 3.5 dollars. Then (B) follows! Done?") == ["It costs 3.5 dollars.", "Then (B) follows!", "Done?"]
    assert split_sentences("Use a tool, e.g. Git. Then `push` it.") == ["Use a tool, e.g. Git.", "Then `push` it."]
    with pytest.raises(ValueError, match="size=10"):
        chunk_document(Document(id="x", source="x", title="x", text="x"), size=10)


def test_a_word_longer_than_a_chunk_is_cut_not_lost():
    url = "https://host.test/" + "z" * 950
    doc = Document(id="u:1", source="u", title="T", text=f"See {url} for details.")
    chunks = chunk_document(doc, size=300, overlap=0)
    assert all(len(c.text) <= 300 for c in chunks)
    assert "".join(c.text.replace(" ", "") for c in chunks).count("z") == 950
