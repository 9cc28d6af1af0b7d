"""The values that flow through the pipeline: frozen dataclasses, no behaviour beyond small helpers."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from enum import StrEnum
from functools import cached_property

from pipeline.text import link_text, unescaped

IDK = "I don't have information about that in the available documents."
KB_UNAVAILABLE = "The knowledge base is unavailable right now; please try again in a few minutes."


def content_hash(text: str) -> str:
    """A short, stable hash of `text`, used for content-derived ids."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


@dataclass(frozen=True)
class Document:
    """One loaded file or web page. `id` is `<source>:<path or url>`; `hash` is of its text (computed
    once: every chunk of the document carries it)."""

    id: str
    source: str
    title: str
    text: str
    path: str = ""
    url: str = ""
    modified: float = 0.0
    domain: str = ""
    format: str = "text"  # text | markdown | rst | html

    @cached_property
    def hash(self) -> str:
        return content_hash(self.title + "\n" + self.text)

    @property
    def location(self) -> str:
        return self.url or self.path


@dataclass(frozen=True)
class Chunk:
    """A piece of a document. `text` is shown to users; `context_text` is what gets embedded and BM25-indexed."""

    id: str
    doc_id: str
    text: str
    context_text: str
    title: str
    headings: tuple[str, ...] = ()
    source: str = ""
    domain: str = ""
    url: str = ""
    path: str = ""
    position: int = 0
    doc_hash: str = ""
    modified: float = 0.0

    @property
    def location(self) -> str:
        return self.url or self.path


@dataclass(frozen=True)
class Hit:
    """A retrieved chunk with its final score and the ranks/scores that produced it (None = not a candidate there)."""

    chunk: Chunk
    score: float
    dense: float | None = None
    dense_rank: int | None = None
    bm25_rank: int | None = None
    rrf: float = 0.0


@dataclass(frozen=True)
class Source:
    """A numbered source shown with an answer; `id` is the number cited as `[id]`."""

    id: int
    title: str
    url: str = ""
    path: str = ""
    chunk_id: str = ""
    headings: tuple[str, ...] = ()

    @property
    def link(self) -> str:
        return self.url or self.path


@dataclass(frozen=True)
class Question:
    """A question as any adapter hands it to the pipeline."""

    text: str
    asker: str = ""
    platform: str = "cli"
    channel: str = ""
    thread: str = ""
    sources: tuple[str, ...] = ()  # optional filter by source name
    domains: tuple[str, ...] = ()  # optional filter by domain


@dataclass(frozen=True)
class Claim:
    """A checkable sentence of an answer; `start`/`end` are character offsets in the answer text."""

    text: str
    start: int
    end: int
    entities: tuple[tuple[str, str], ...] = ()  # (text, spaCy label)


class Label(StrEnum):
    SUPPORTED = "SUPPORTED"
    UNCERTAIN = "UNCERTAIN"
    UNSUPPORTED = "UNSUPPORTED"
    CONTRADICTED = "CONTRADICTED"

    @property
    def flagged(self) -> bool:
        return self is not Label.SUPPORTED


@dataclass(frozen=True)
class Evidence:
    """A passage offered as evidence for a claim. `origin` is "kb" or "wikipedia"."""

    text: str
    title: str = ""
    url: str = ""
    path: str = ""
    origin: str = "kb"
    score: float = 0.0
    chunk_id: str = ""
    section: str = ""  # the chunk's heading path ("Release notes > 0.40.0 (October 15, 2024)"), "" if none

    @property
    def link(self) -> str:
        return self.url or self.path

    @property
    def checked_text(self) -> str:
        """What a claim is checked against: the section's headings on a line of their own, then the
        text, so that a fact stated in a heading ("0.40.0 (October 15, 2024)") counts as stated;
        links read as their text (a link's address is no statement, and it pulls the sentence's
        embedding away from what the sentence says), and Markdown's escapes as what they escape."""
        text = unescaped(link_text(self.text))
        return f"{self.section}\n\n{text}" if self.section else text


@dataclass(frozen=True)
class Verdict:
    """The decision on one claim. `conflict` quotes the evidence's value when a value disagrees ("2018")."""

    claim: Claim
    label: Label
    confidence: float
    method: str
    evidence: Evidence | None = None
    sentence: str = ""  # best evidence sentence
    conflict: str = ""
    checked_against: tuple[str, ...] = ()  # e.g. ("kb", "wikipedia")
    unstated: str = ""  # a number or name of the claim that its evidence never states ("2001")
    reason: str = ""  # why it is flagged, as the footnote says it ("source says 2018", "no document mentions X")

    @property
    def flagged(self) -> bool:
        return self.label.flagged


@dataclass(frozen=True)
class Answer:
    """What the pipeline returns and every adapter renders."""

    question: str
    text: str
    sources: tuple[Source, ...] = ()
    verdicts: tuple[Verdict, ...] = ()
    timings: dict[str, float] = field(default_factory=dict)  # ms per stage
    idk: bool = False
    notes: tuple[str, ...] = ()  # user-facing notes ("LLM unavailable: extractive answer")
    invented_citations: int = 0
    draft: str = ""  # the text before correction, when it changed
    error: str = ""  # set when the pipeline could not answer (e.g. store down)

    @property
    def flagged(self) -> tuple[Verdict, ...]:
        return tuple(v for v in self.verdicts if v.flagged)
