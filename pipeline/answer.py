"""The whole flow for one question: retrieve → generate → cite-check → claims → evidence → verify → correct.

Read this module first; every stage it calls lives in its own module.
"""

from __future__ import annotations

import dataclasses
import logging
import re
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from pipeline.claims import extract_claims
from pipeline.correct import correction_request, drop_claims, needs_correction
from pipeline.embed import Embedder
from pipeline.evidence import kb_evidence_batch
from pipeline.generate import (
    SYSTEM_PROMPT,
    check_citations,
    generate_extractive,
    generate_llm,
    number_sources,
    user_prompt,
)
from pipeline.retrieve import above_floor, retrieve
from pipeline.store import Store, StoreUnavailable
from pipeline.types import (
    IDK,
    KB_UNAVAILABLE,
    Answer,
    Claim,
    Evidence,
    Hit,
    Label,
    Question,
    Verdict,
)
from pipeline.verify import verify_claims

log = logging.getLogger(__name__)
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b-\u200f\u2028\u2029\ufeff]")


@dataclass
class Parts:
    """Everything a question needs, built once by `bot.app`. `llm`, `wiki`, `cross_encoder` are optional."""

    store: Store
    embedder: Embedder
    settings: object
    llm: object | None = None
    wiki: object | None = None
    cross_encoder: object | None = None


@dataclass
class Timer:
    """Milliseconds per stage; a stage entered twice accumulates."""

    timings: dict[str, float] = field(default_factory=dict)

    @contextmanager
    def stage(self, name: str) -> Iterator[None]:
        start = time.perf_counter()
        try:
            yield
        finally:
            self.timings[name] = self.timings.get(name, 0.0) + (time.perf_counter() - start) * 1000


def clean_question(text: str) -> str:
    """The question without control or invisible characters, whitespace collapsed."""
    return " ".join(_CONTROL.sub(" ", text or "").split())


def question_problem(text: str, max_chars: int) -> str | None:
    """A user-facing reason why `text` cannot be asked, or None."""
    cleaned = clean_question(text)
    if not cleaned:
        return "Please ask a question, e.g. `How do I trigger a reindex?`"
    if len(cleaned) > max_chars:
        return f"That question is {len(cleaned):,} characters long; please keep it under {max_chars:,}."
    if not re.search(r"\w", cleaned):
        return "That doesn't look like a question; please ask in words."
    return None


def answer_question(question: Question, parts: Parts) -> Answer:
    """Answer and verify one question. Never raises for bad input, a down LLM or a down store."""
    s, timer = parts.settings, Timer()
    text = clean_question(question.text)
    if problem := question_problem(text, s.max_question_chars):
        return Answer(question=text, text=problem, error="bad question")
    filters = {"source": question.sources, "domain": question.domains}
    try:
        with timer.stage("retrieve"):
            hits = retrieve(text, store=parts.store, embedder=parts.embedder, settings=s, filters=filters,
                            variant="rrf+rerank" if s.rerank else "rrf", cross_encoder=parts.cross_encoder)
        if not above_floor(hits, s.relevance_floor):
            return Answer(question=text, text=IDK, idk=True, timings=timer.timings)
        sources, numbers = number_sources(hits)
        with timer.stage("generate"):
            draft, notes = draft_answer(text, hits, numbers, parts)
        draft, invented = check_citations(draft, {src.id for src in sources})
        answer_text, verdicts = draft, []
        if s.verify and draft != IDK:
            checker = ClaimChecker(parts, timer, filters)
            verdicts = checker.check(answer_text)
            with timer.stage("correct"):
                answer_text, verdicts = correct(answer_text, verdicts, text, hits, numbers, parts, checker)
            notes += checker.notes
    except StoreUnavailable as e:
        log.error("store unavailable: %s", e)
        return Answer(question=text, text=KB_UNAVAILABLE, error=f"store unavailable: {e}", timings=timer.timings)
    return Answer(question=text, text=answer_text, sources=tuple(sources), verdicts=tuple(verdicts),
                  timings=timer.timings, idk=answer_text.strip() == IDK, notes=tuple(dict.fromkeys(notes)),
                  invented_citations=len(invented), draft=draft if draft != answer_text else "")


def draft_answer(question: str, hits: list[Hit], numbers: dict[str, int], parts: Parts) -> tuple[str, list[str]]:
    """The LLM's draft, or the extractive one when no LLM is configured or it fails."""
    s = parts.settings
    if parts.llm is not None:
        from pipeline.llm import LLMError

        try:
            return generate_llm(parts.llm, question, hits, numbers, s.llm_max_tokens), []
        except LLMError as e:
            log.warning("LLM failed, falling back to an extractive answer: %s", e)
            note = "The language model was unavailable, so this answer quotes the documents directly."
            return generate_extractive(question, hits, numbers, parts.embedder, s.answer_sentences), [note]
    return generate_extractive(question, hits, numbers, parts.embedder, s.answer_sentences), []


class ClaimChecker:
    """Extracts and verifies the claims of a text; remembers verdicts by claim text so a revision only
    re-verifies what changed. Owns the per-answer Wikipedia state (notes when it was unreachable)."""

    def __init__(self, parts: Parts, timer: Timer, filters):
        self.parts, self.timer, self.filters = parts, timer, filters
        self.known: dict[str, Verdict] = {}
        self.notes: list[str] = []

    def check(self, text: str) -> list[Verdict]:
        s = self.parts.settings
        with self.timer.stage("claims"):
            claims = extract_claims(text, s.list("entity_types"))
        todo = list({c.text: c for c in claims if c.text not in self.known}.values())  # each text once
        if todo:
            for claim, verdict in zip(todo, self._verify(todo), strict=True):
                self.known[claim.text] = verdict
        return [dataclasses.replace(self.known[c.text], claim=c) for c in claims]

    def _verify(self, claims: list[Claim]) -> list[Verdict]:
        p, s = self.parts, self.parts.settings
        with self.timer.stage("evidence"):
            evidence = kb_evidence_batch([c.text for c in claims], store=p.store, embedder=p.embedder,
                                         settings=s, cross_encoder=p.cross_encoder)
        with self.timer.stage("verify"):
            stored = (p.store.vectors([e.chunk_id for ev in evidence for e in ev])
                      if s.verify_method == "cosine" else None)  # the baseline compares whole chunks: reuse their vectors
            verdicts = verify_claims(claims, evidence, method=s.verify_method, embedder=p.embedder, settings=s,
                                     llm=p.llm, chunk_vectors=stored)
        verdicts = [dataclasses.replace(v, checked_against=("kb",)) for v in verdicts]
        if p.wiki is None or s.wikipedia == "off":
            return verdicts
        weak = [i for i, v in enumerate(verdicts) if s.wikipedia == "always" or v.label is not Label.SUPPORTED]
        if not weak:
            return verdicts
        with self.timer.stage("evidence"):
            extra = self._wikipedia([claims[i].text for i in weak])
        if extra is None:
            return verdicts
        with self.timer.stage("verify"):
            again = verify_claims([claims[i] for i in weak], [evidence[i] + extra[j] for j, i in enumerate(weak)],
                                  method=s.verify_method, embedder=p.embedder, settings=s, llm=p.llm)
        for j, i in enumerate(weak):
            verdicts[i] = dataclasses.replace(again[j], checked_against=("kb", "wikipedia"))
        return verdicts

    def _wikipedia(self, claims: list[str]) -> list[list[Evidence]] | None:
        from pipeline.wiki import WikipediaUnavailable

        out = []
        for claim in claims:
            try:
                out.append(self.parts.wiki.search_passages(claim, pages=self.parts.settings.wikipedia_pages))
            except WikipediaUnavailable as e:
                log.warning("Wikipedia unavailable, verifying on the knowledge base only: %s", e)
                self.notes.append("Wikipedia was unreachable, so claims were checked against the knowledge base only.")
                return None
        return out


def correct(text: str, verdicts: list[Verdict], question: str, hits: list[Hit], numbers: dict[str, int],
            parts: Parts, checker: ClaimChecker) -> tuple[str, list[Verdict]]:
    """Revise flagged claims: with an LLM, bounded revise-and-reverify rounds; without, drop
    unsupported/contradicted sentences and keep uncertain ones flagged."""
    s = parts.settings
    for _ in range(s.correction_rounds):
        flagged = [v for v in verdicts if needs_correction(v, s.correction_threshold)]
        if not flagged:
            break
        if parts.llm is None:
            if not any(v.label in (Label.UNSUPPORTED, Label.CONTRADICTED) for v in flagged):
                break
            revised = drop_claims(text, verdicts)
        else:
            from pipeline.llm import LLMError

            prompt = user_prompt(question, hits, numbers) + "\n\n" + correction_request(text, flagged)
            try:
                revised = parts.llm.complete(SYSTEM_PROMPT, prompt, max_tokens=s.llm_max_tokens).strip()
            except LLMError as e:
                log.warning("correction skipped, LLM failed: %s", e)
                checker.notes.append("The language model was unavailable for correction; flagged claims are marked.")
                break
            revised, _ = check_citations(revised, set(numbers.values()))
        if not revised.strip():
            return IDK, []
        text, verdicts = revised, checker.check(revised)
    return text, verdicts
