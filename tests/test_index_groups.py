"""`index_documents` embeds the documents it reads in groups of `EMBED_GROUP` chunks, one model call per
group, and reports each document's progress once its chunks are in the build."""

from __future__ import annotations

import pipeline.index
from pipeline.index import index_documents
from pipeline.store import EmbeddedStore
from pipeline.types import Document
from tests.fakes.embedder import FakeEmbedder


class Logging(FakeEmbedder):
    """The fake model, logging each call's size in `events` beside the progress calls."""

    def __init__(self, events: list):
        super().__init__()
        self.events = events

    def encode(self, texts, batch_size=32, progress=False):
        self.events.append(("encode", len(texts)))
        return super().encode(texts, batch_size, progress)


def _docs(n: int) -> list[Document]:
    texts = [f"# Page {i}\n\nOffice {i} opens at {i + 7} o'clock on weekdays." for i in range(n)]
    return [Document(id=f"kb:p{i}.md", source="kb", title=f"Page {i}", text=t, path=f"p{i}.md", format="markdown")
            for i, t in enumerate(texts)]


def test_documents_are_embedded_a_group_at_a_time_and_reported_once_in_the_build(tmp_path, monkeypatch):
    monkeypatch.setattr(pipeline.index, "EMBED_GROUP", 3)
    events: list = []
    store = EmbeddedStore(tmp_path / "index.sqlite")
    try:
        counts = index_documents(store, Logging(events), "kb", _docs(10), first_publish_s=None,
                                 progress=lambda done, total: events.append(("progress", done)))
        assert counts["added"] == 10 and store.counts()["documents"] == 10
        assert [e for e in events if e[0] == "encode"] == [("encode", 3)] * 3 + [("encode", 1)]  # one chunk a page
        # each group's progress comes after its call, in order, 0 first and all 10 before the build commits
        assert events == [("progress", 0), ("encode", 3), ("progress", 1), ("progress", 2), ("progress", 3),
                          ("encode", 3), ("progress", 4), ("progress", 5), ("progress", 6),
                          ("encode", 3), ("progress", 7), ("progress", 8), ("progress", 9),
                          ("encode", 1), ("progress", 10)]
        events.clear()
        assert index_documents(store, Logging(events), "kb", _docs(10), first_publish_s=None)["unchanged"] == 10
        assert events == []  # nothing changed: nothing embedded
    finally:
        store.close()
