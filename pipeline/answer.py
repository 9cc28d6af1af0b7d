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

import numpy as np

from pipeline.citations import check_citations
from pipeline.claims import extract_claims
from pipeline.correct import correction_request, drop_claims, needs_correction
from pipeline.embed import Embedder
from pipeline.evidence import hit_to_evidence, kb_evidence_batch
from pipeline.generate import (
    SYSTEM_PROMPT,
    generate_extractive,
    generate_llm,
    number_sources,
    user_prompt,
)
from pipeline.names import Name, halves, mentions, names
from pipeline.retrieve import (
    RetrieveOptions,
    asked,
    documented,
    in_scope,
    looked_up_as,
    question_nouns,
    retrieve,
    unseen,
)
from pipeline.sentence_vectors import SentenceVectors
from pipeline.store import Filters, Store, StoreUnavailable
from pipeline.text import cited_numbers, words
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
from pipeline.verifier_model import TrainedVerifier
from pipeline.verify import VerifyOptions, verify_claims
from pipeline.verify.second_opinion import second_opinion

log = logging.getLogger(__name__)
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b-\u200f\u2028\u2029\ufeff]")


@dataclass(frozen=True)
class AnswerOptions:
    """What the flow reads, each field the setting of the same name (built by `bot.app.stage_options`),
    with the options of retrieval and verification."""

    retrieval: RetrieveOptions
    verification: VerifyOptions
    max_question_chars: int
    rerank: bool
    relevance_floor: float
    relevance_confident: float
    relevance_topical: float
    relevance_broad: float
    llm_max_tokens: int
    answer_sentences: int
    verify: bool
    verify_method: str
    verify_llm_second_opinion: bool
    entity_types: tuple[str, ...]
    evidence_k: int
    correction_rounds: int
    wikipedia: str
    wikipedia_pages: int


@dataclass
class Parts:
    """Everything a question needs, built once by `bot.app`. `llm`, `wiki`, `cross_encoder` and
    `verifier` (the trained verifier model, loaded on first use) are optional; `sentence_vectors`,
    when on, is the file that `embedder.encode_cached` reads and indexing fills."""

    store: Store
    embedder: Embedder
    options: AnswerOptions
    llm: object | None = None
    wiki: object | None = None
    cross_encoder: object | None = None
    verifier: TrainedVerifier | None = None
    sentence_vectors: SentenceVectors | None = None


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
    o, timer = parts.options, Timer()
    text = clean_question(question.text)
    if problem := question_problem(text, o.max_question_chars):
        return Answer(question=text, text=problem, error="bad question")
    filters = {"source": question.sources, "domain": question.domains}
    try:
        with timer.stage("load"):  # models load on first use: its own timing, never inside a stage
            loaded = load_models(parts)
        if not loaded:  # everything was in memory already: no "load" line
            del timer.timings["load"]
        with timer.stage("retrieve"):
            vector = parts.embedder.encode([text])[0]  # once: retrieval and the extractive answer both use it
            hits = question_hits(text, parts, filters, vector)
        if not answerable(text, hits, parts):
            return Answer(question=text, text=IDK, idk=True, timings=timer.timings)
        sources, numbers = number_sources(hits)
        with timer.stage("generate"):
            draft, notes = draft_answer(text, hits, numbers, parts, vector)
        draft, invented = check_citations(draft, {src.id for src in sources})
        answer_text, verdicts = draft, []
        if o.verify and draft != IDK:
            checker = ClaimChecker(parts, timer, filters, question=text, cited=cited_evidence(hits, numbers))
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


def question_hits(text: str, parts: Parts, filters: Filters | None = None, vector: np.ndarray | None = None) -> list[Hit]:
    """The chunks a question's answer is drawn from: hybrid search with the configured reranker."""
    return retrieve(text, store=parts.store, embedder=parts.embedder, options=parts.options.retrieval, filters=filters,
                    variant="rrf+rerank" if parts.options.rerank else "rrf", query_vector=vector,
                    cross_encoder=parts.cross_encoder)


def load_models(parts: Parts) -> bool:
    """Load (once per process) the models a question will use: the embedder, and for verification
    spaCy and the trained verifier. Whether any of them had to be loaded."""
    loaded = not getattr(parts.embedder, "loaded", True)  # an embedder with nothing to load says nothing
    _ = parts.embedder.model
    o = parts.options
    if o.verify:
        from pipeline.claims import load_nlp

        loaded |= load_nlp.cache_info().currsize == 0
        load_nlp()
        if (o.verify_method == "model" or (o.verify_method == "default" and o.verification.verifier_in_default)) \
                and parts.verifier is not None and parts.verifier.available():
            loaded |= not parts.verifier.running()
            parts.verifier.load()
    return loaded


def answerable(question: str, hits: list[Hit], parts: Parts) -> bool:
    """The relevance floor: refuse before any LLM call when the documents do not cover the question
    (`pipeline.retrieve.in_scope`); which of its nouns no document contains is looked up in the store."""
    o = parts.options
    limits = {"floor": o.relevance_floor, "confident": o.relevance_confident, "topical": o.relevance_topical,
              "broad": o.relevance_broad}
    best = max(((h.dense or 0.0) for h in hits), default=0.0)
    if best < o.relevance_floor or best >= o.relevance_confident:
        return in_scope(hits, [], [], **limits)
    nouns = question_nouns(asked(question))  # a noun of the scene it sets is no topic the chunks must hold
    unknown = [n for n in question_nouns(question, names_only=True)
               if (key := looked_up_as(n)) and not documented(key, parts.store)]
    missing = unseen(nouns, hits)
    topics = set(question_nouns(asked(question), own=False))  # "our health check" is the asker's, not a topic
    return in_scope(hits, unknown, missing, unseen_topics=[n for n in missing if n in topics], **limits)


def draft_answer(question: str, hits: list[Hit], numbers: dict[str, int], parts: Parts,
                 question_vector: np.ndarray | None = None) -> tuple[str, list[str]]:
    """The LLM's draft, or the extractive one when no LLM is configured or it fails
    (`question_vector`: the question's embedding, when the caller has it)."""
    o = parts.options
    if parts.llm is not None:
        from pipeline.llm import LLMError

        try:
            return generate_llm(parts.llm, question, hits, numbers, o.llm_max_tokens), []
        except LLMError as e:
            log.warning("LLM failed, falling back to an extractive answer: %s", e)
            note = "The language model was unavailable, so this answer quotes the documents directly."
            return generate_extractive(question, hits, numbers, parts.embedder, o.answer_sentences,
                                       question_vector=question_vector), [note]
    return generate_extractive(question, hits, numbers, parts.embedder, o.answer_sentences,
                               question_vector=question_vector), []


class ClaimChecker:
    """Extracts and verifies the claims of a text; remembers verdicts by claim text so a revision only
    re-verifies what changed. Owns the per-answer Wikipedia state (notes when it was unreachable)."""

    def __init__(self, parts: Parts, timer: Timer, filters, question: str = "",
                 cited: dict[int, list[Evidence]] | None = None):
        self.parts, self.timer, self.filters = parts, timer, filters
        self.question, self.cited = question, cited or {}
        self.known: dict[tuple[str, tuple[int, ...]], Verdict] = {}
        self.notes: list[str] = []

    def check(self, text: str) -> list[Verdict]:
        with self.timer.stage("claims"):
            claims = extract_claims(text, list(self.parts.options.entity_types))
        keyed = [((c.text, cited_numbers(text[c.start:c.end])), c) for c in claims]
        todo = list({key: c for key, c in keyed if key not in self.known}.items())  # each claim once
        if todo:
            verdicts = self._verify([c for _, c in todo], [key[1] for key, _ in todo])
            for (key, _), verdict in zip(todo, verdicts, strict=True):
                self.known[key] = verdict
        return [dataclasses.replace(self.known[key], claim=c) for key, c in keyed]

    def _verify(self, claims: list[Claim], cites: list[tuple[int, ...]]) -> list[Verdict]:
        """Evidence per claim: the chunks it cites first, then the knowledge base's best for it (not
        searched for a claim its cited chunk states word for word: an extractive answer's sentence);
        and the claim's names that no document mentions at all (the whole index is searched) and the
        question does not give."""
        p, o = self.parts, self.parts.options
        with self.timer.stage("evidence"):
            cited = [[e for n in numbers for e in self.cited.get(n, [])] for numbers in cites]
            quoted = [quoted_in(c.text, ev) for c, ev in zip(claims, cited, strict=True)]
            searched = iter(kb_evidence_batch([c.text for c, q in zip(claims, quoted, strict=True) if not q],
                                              store=p.store, embedder=p.embedder, options=o.retrieval,
                                              k=o.evidence_k, cross_encoder=p.cross_encoder))
            evidence = [ev if q else cited_first(ev, next(searched)) for ev, q in zip(cited, quoted, strict=True)]
            claim_names = [names(c.text) for c in claims]  # claim texts carry no markers
            mentioned = p.store.mentioned([n.text for ns in claim_names for n in ns])
            unknown = [[n for n in ns if n.text not in mentioned and not mentions(n.text, self.question)]
                       for ns in claim_names]  # the asker's own names ("${Foo_DIR}") are given, not invented
            split = {n.text: halves(n.text) for ns in unknown for n in ns if n.kind == "proper"}
            if any(split.values()):  # "Commit Queue GitHub Action": two documented names side by side
                parts = p.store.mentioned([h for pairs in split.values() for pair in pairs for h in pair])
                unknown = [[n for n in ns if not any(a in parts and b in parts for a, b in split.get(n.text, ()))]
                           for ns in unknown]
        with self.timer.stage("verify"):
            stored = (p.store.vectors([e.chunk_id for ev in evidence for e in ev])
                      if o.verify_method == "cosine" else None)  # the baseline compares whole chunks: reuse their vectors
            verdicts = verify_claims(claims, evidence, method=o.verify_method, embedder=p.embedder,
                                     options=o.verification, verifier=p.verifier, llm=p.llm, chunk_vectors=stored, invented=[[n.text for n in ns] for ns in unknown],
                                     given=self.question, cited=[bool(numbers) for numbers in cites],
                                     cited_passages=[len(ev) for ev in cited])
        verdicts = [dataclasses.replace(v, checked_against=("kb",)) for v in verdicts]
        verdicts = self._with_wikipedia(claims, cites, evidence, unknown, verdicts, [len(ev) for ev in cited])
        if o.verify_llm_second_opinion and p.llm is not None:  # UNCERTAIN claims only, one LLM call
            with self.timer.stage("verify"):
                verdicts = second_opinion(verdicts, p.llm, supported_confidence=o.verification.supported_threshold)
        return verdicts

    def _with_wikipedia(self, claims: list[Claim], cites: list[tuple[int, ...]], evidence: list[list[Evidence]],
                        unknown: list[list[Name]], verdicts: list[Verdict], cited: list[int]) -> list[Verdict]:
        """The claims the knowledge base does not back, verified again with Wikipedia passages added.
        Wikipedia counts only for names that are not the team's own: a code identifier no document
        mentions stays invented whatever Wikipedia says; a proper name its passages mention does not.
        `cited`: how many of each claim's evidence passages, from the first, are the chunks it cites."""
        p, o = self.parts, self.parts.options
        if p.wiki is None or o.wikipedia == "off":
            return verdicts
        weak = [i for i, v in enumerate(verdicts) if o.wikipedia == "always" or v.label is not Label.SUPPORTED]
        if not weak:
            return verdicts
        with self.timer.stage("evidence"):
            extra = self._wikipedia([claims[i].text for i in weak])
        if extra is None:
            return verdicts
        invented = [[n.text for n in unknown[i] if n.kind == "code" or not any(mentions(n.text, e.text) for e in extra[j])]
                    for j, i in enumerate(weak)]
        with self.timer.stage("verify"):
            again = verify_claims([claims[i] for i in weak], [evidence[i] + extra[j] for j, i in enumerate(weak)],
                                  method=o.verify_method, embedder=p.embedder, options=o.verification,
                                  verifier=p.verifier, llm=p.llm,
                                  invented=invented, given=self.question, cited=[bool(cites[i]) for i in weak],
                                  cited_passages=[cited[i] for i in weak])
        verdicts = list(verdicts)
        for j, i in enumerate(weak):
            verdicts[i] = dataclasses.replace(again[j], checked_against=("kb", "wikipedia"))
        return verdicts

    def _wikipedia(self, claims: list[str]) -> list[list[Evidence]] | None:
        from pipeline.wiki import WikipediaUnavailable

        out = []
        for claim in claims:
            try:
                out.append(self.parts.wiki.search_passages(claim, pages=self.parts.options.wikipedia_pages))
            except WikipediaUnavailable as e:
                log.warning("Wikipedia unavailable, verifying on the knowledge base only: %s", e)
                self.notes.append("Wikipedia was unreachable, so claims were checked against the knowledge base only.")
                return None
        return out


def cited_evidence(hits: list[Hit], numbers: dict[str, int]) -> dict[int, list[Evidence]]:
    """Source number → the answer's retrieved chunks of that source, as evidence, best first."""
    out: dict[int, list[Evidence]] = {}
    for hit in hits:
        out.setdefault(numbers[hit.chunk.id], []).append(hit_to_evidence(hit))
    return out


def quoted_in(claim: str, evidence: list[Evidence]) -> bool:
    """Whether one of `evidence`'s texts holds `claim` word for word (case and punctuation aside)."""
    said = " ".join(words(claim))
    return bool(said) and any(f" {said} " in f" {' '.join(words(e.text))} " for e in evidence)


def cited_first(cited: list[Evidence], found: list[Evidence]) -> list[Evidence]:
    """The cited chunks, then the found ones that are not among them."""
    ids = {e.chunk_id for e in cited}
    return cited + [e for e in found if e.chunk_id not in ids]


def correct(text: str, verdicts: list[Verdict], question: str, hits: list[Hit], numbers: dict[str, int],
            parts: Parts, checker: ClaimChecker) -> tuple[str, list[Verdict]]:
    """Revise flagged claims: with an LLM, bounded revise-and-reverify rounds; without, drop
    unsupported/contradicted sentences and keep uncertain ones flagged."""
    o = parts.options
    for _ in range(o.correction_rounds):
        flagged = [v for v in verdicts if needs_correction(v)]
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
                revised = parts.llm.complete(SYSTEM_PROMPT, prompt, max_tokens=o.llm_max_tokens).strip()
            except LLMError as e:
                log.warning("correction skipped, LLM failed: %s", e)
                checker.notes.append("The language model was unavailable for correction; flagged claims are marked.")
                break
            revised, _ = check_citations(revised, set(numbers.values()))
        if not revised.strip():
            return IDK, []
        text, verdicts = revised, checker.check(revised)
    return text, verdicts
