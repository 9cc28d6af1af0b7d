"""Hybrid retrieval: dense top-N and BM25 top-N, reciprocal rank fusion, reranking, relevance floor."""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from pipeline.embed import Embedder
from pipeline.store import Filters, Store
from pipeline.text import split_sentences, stem, words
from pipeline.types import Hit

VARIANTS = ("bm25", "dense", "rrf", "rrf+rerank")


@dataclass(frozen=True)
class RetrieveOptions:
    """What retrieval reads, each field the setting of the same name (built by `bot.app.stage_options`)."""

    top_k: int
    candidates: int
    rrf_k: int
    rerank_weight: float
    weaviate_fusion: str


def rrf(rankings: Sequence[Sequence[str]], k: int = 60) -> dict[str, float]:
    """Reciprocal rank fusion: score(d) = Σ over rankings of 1 / (k + rank(d)), ranks from 1."""
    scores: dict[str, float] = {}
    for ranking in rankings:
        for rank, item in enumerate(ranking, start=1):
            scores[item] = scores.get(item, 0.0) + 1.0 / (k + rank)
    return scores


def minmax(values: np.ndarray) -> np.ndarray:
    """Scale to [0, 1]; a constant vector becomes all ones."""
    lo, hi = float(values.min()), float(values.max())
    return np.ones_like(values) if hi - lo < 1e-12 else (values - lo) / (hi - lo)


def rerank_scores(dense: np.ndarray, bm25: np.ndarray, fused: np.ndarray, weight: float = 0.5) -> np.ndarray:
    """The built-in reranker (no cross-encoder weights needed): a convex blend of the candidates'
    min-max-normalised cosine and BM25 scores, with the RRF score breaking ties. Unlike RRF it uses
    how far apart scores are, not just their order."""
    return weight * minmax(dense) + (1 - weight) * minmax(bm25) + 1e-3 * minmax(fused)


def retrieve(
    query: str,
    *,
    store: Store,
    embedder: Embedder,
    options: RetrieveOptions,
    filters: Filters | None = None,
    variant: str = "rrf+rerank",
    k: int | None = None,
    candidates: int | None = None,
    query_vector: np.ndarray | None = None,
    cross_encoder=None,
) -> list[Hit]:
    """The best `k` chunks (None: `options.top_k`) for `query` (best first), from `candidates` per
    ranker (None: `options.candidates`). Every Hit carries its cosine (`dense`) so the caller can
    apply the relevance floor. `variant`: `rrf+rerank`, or `rrf` with the `rerank` setting off;
    `bm25` and `dense` (one ranker alone) are measured by `ravbot eval retrieval`."""
    if variant not in VARIANTS:
        raise ValueError(f"unknown retrieval variant {variant!r}; expected one of {', '.join(VARIANTS)}")
    k = options.top_k if k is None else k
    n = max(options.candidates if candidates is None else candidates, k)
    vector = query_vector
    if vector is None and variant != "bm25":  # BM25 alone needs no embedding
        vector = embedder.encode([query])[0]
    dense = store.dense_search(vector, n, filters) if variant != "bm25" else []
    bm25 = store.bm25_search(query, n, filters) if variant != "dense" else []
    dense_rank = {cid: r for r, (cid, _) in enumerate(dense, start=1)}
    bm25_rank = {cid: r for r, (cid, _) in enumerate(bm25, start=1)}
    fused = rrf([[c for c, _ in dense], [c for c, _ in bm25]], options.rrf_k)
    if variant.startswith("rrf") and options.weaviate_fusion != "ravbot" and hasattr(store, "hybrid_search"):
        fused = dict(store.hybrid_search(query, vector, n, filters))  # Weaviate's own fusion replaces RRF
    ids = list(fused)
    if not ids:
        return []
    cosines = _cosines(store, vector, ids, dict(dense)) if vector is not None else {}
    if variant == "dense":
        order = [c for c, _ in dense]
    elif variant == "bm25":
        order = [c for c, _ in bm25]
    else:
        order = sorted(ids, key=lambda c: -fused[c])
    if variant == "rrf+rerank":
        order = order[:n]
        if cross_encoder is not None:
            chunks = {c.id: c for c in store.chunks(order)}
            pairs = [(query, chunks[c].context_text) for c in order if c in chunks]
            order = [c for c in order if c in chunks]
            scores = np.asarray(cross_encoder.predict(pairs), dtype=np.float64)
        else:
            bm = dict(bm25)
            bm_floor = min(bm.values(), default=0.0)
            scores = rerank_scores(np.array([cosines[c] for c in order]),
                                   np.array([bm.get(c, bm_floor) for c in order]),
                                   np.array([fused[c] for c in order]), options.rerank_weight)
        final = dict(zip(order, scores.tolist(), strict=True))
        order = sorted(order, key=lambda c: -final[c])
    else:
        final = fused if variant == "rrf" else dict(dense if variant == "dense" else bm25)
    top = order[:k]
    chunks = {c.id: c for c in store.chunks(top)}
    return [Hit(chunk=chunks[c], score=float(final[c]), dense=cosines.get(c), dense_rank=dense_rank.get(c),
                bm25_rank=bm25_rank.get(c), rrf=fused.get(c, 0.0)) for c in top if c in chunks]


def _cosines(store: Store, vector: np.ndarray, ids: list[str], known: dict[str, float]) -> dict[str, float]:
    """Cosine of every candidate; BM25-only candidates are scored from their stored vectors."""
    missing = [c for c in ids if c not in known]
    out = dict(known)
    for cid, v in store.vectors(missing).items():
        out[cid] = float(np.dot(v, vector))
    return out


_ARGUMENT_DEPS = frozenset({"nsubj", "nsubjpass", "dobj", "pobj", "attr", "compound", "conj", "poss", "dative", "oprd", "amod"})


def question_nouns(question: str, names_only: bool = False, own: bool = True) -> list[str]:
    """The nouns and proper nouns of a question, lowercased, each once: what it is about
    ("How do I connect a Starlette app to a MongoDB database?" → starlette, app, mongodb, database).
    With `names_only`, those written as names (`_written_as_name`) and not of the asker's own setting
    (`_the_askers_own`): starlette, mongodb. Without `own`, the nouns less the asker's own things
    ("our health check", "my application")."""
    doc = _question_doc(question)
    words = [t.text.lower() for t in doc if (t.pos_ in ("NOUN", "PROPN") or (t.i > 0 and t.text[:1].isupper()))
             and t.dep_ in _ARGUMENT_DEPS and not t.is_stop and len(t.text) > 1
             and any(c.isalpha() for c in t.text)  # "MongoDB" is tagged ADJ; "Hi team," is no argument
             and (own or names_only or not _the_askers_own(t))
             and (not names_only or (_written_as_name(t) and not _the_askers_own(t)
                                     and not (t.i > 0 and doc[t.i - 1].like_num)))]  # "300 MB": a unit
    return list(dict.fromkeys(words))


def asked(question: str) -> str:
    """The sentences of a question that ask (those ending in "?"), without the ones that set the
    scene ("Our monorepo's index is huge.", "Our scanner says we need 2.35.2."); the whole question
    when it has no such sentence, or only such sentences."""
    sentences = split_sentences(" ".join(question.split()))
    asking = [s for s in sentences if not re.search(r"(?<!\.\.)[.!]$", s.rstrip())]  # "file(GLOB ..." is no statement
    return " ".join(asking) if any(s.rstrip().endswith("?") for s in asking) else question


_ASKERS = frozenset({"my", "our"})
_EXAMPLE = frozenset({"say", "called", "named"})
# Acronyms a software team says as plain words ("the CI runners", "300 MB RSS"): like "build" or
# "memory", their absence from the documents says nothing of a question's scope.
_EVERYDAY = frozenset("ci cd os cpu cpus ram rss vm vms pr prs ui cli ide ssd io".split())


def _the_askers_own(token) -> bool:
    """Whether a name is of the asker's own setting, not what the question is about: "our Artifactory
    index", "from my Mac", "our Docker image" (a possessive on it or on the noun it qualifies); an
    example the asker names ("a particular function, say parse_record", "a function called foo"); or
    an everyday acronym ("our CI runners", "RSS")."""
    if token.lower_ in _EVERYDAY:
        return True
    before = [t.lower_ for t in token.doc[max(0, token.i - 2):token.i] if not t.is_punct]
    if before and before[-1] in _EXAMPLE:
        return True
    owners = [token, token.head] if token.dep_ in ("compound", "amod", "nmod") else [token]
    return any(c.dep_ == "poss" and c.lower_ in _ASKERS for t in owners for c in t.children)


@functools.lru_cache(maxsize=64)
def _question_doc(question: str):
    """The question's parse, once: the relevance floor reads its nouns and its names."""
    from pipeline.claims import load_nlp, mask_dots

    return load_nlp()(mask_dots(question))


def _written_as_name(token) -> bool:
    """Whether a question's word is written as a name: a capital after the first letter ("MongoDB",
    "AWS", "keepAlive"), a capital mid-sentence ("Jest"), or a digit, underscore or other mark
    ("dns_resolve4", a masked "http.Agent"). Not a word of the language written plainly ("health",
    "thousands", "agent"), whose absence from the documents says nothing of the question's scope."""
    text = token.text
    return (any(c.isupper() for c in text[1:]) or (token.i > 0 and text[:1].isupper())
            or any(not c.isalpha() for c in text))


_OPTION_PREFIX = re.compile(r"^(?:-d(?=[a-z0-9]*_)|--?)", re.IGNORECASE)
_PLACEHOLDER_PARTS = frozenset({"bar", "baz", "qux", "quux"})


def looked_up_as(name: str) -> str:
    """The form in which a name of the question is looked up in the documents: a command-line option
    without its dashes ("--verbose" → "verbose") and a define without its "-D" ("-DCMAKE_BUILD_TYPE" →
    "cmake_build_type"); "" for a placeholder of the asker's own ("foo_dir", "FindFoo.cmake"), which
    no page names and which says nothing of the question's scope."""
    parts = [p for p in re.split(r"[\W_]+", name.lower()) if p]
    if "foo" in name.lower() or _PLACEHOLDER_PARTS & set(parts):
        return ""
    return _OPTION_PREFIX.sub("", name)


def documented(name: str, store: Store) -> bool:
    """Whether some document has a question's name; or, for a name of three words or more, its first
    word and the rest as written together: "PIP_INDEX_URL" where the documents have pip and its
    `--index-url` (an option's environment variable), not "UV_THREADPOOL_SIZE" where they have uv,
    threadpool and size but never "threadpool size"."""
    if store.bm25_search(name, 1):
        return True
    pieces = [p for p in re.split(r"[_\-.]+", name) if p]
    return len(pieces) > 2 and bool(store.bm25_search(pieces[0], 1)) and bool(store.bm25_search("_".join(pieces[1:]), 1))


def in_scope(hits: Sequence[Hit], unknown_nouns: Sequence[str], unseen_nouns: Sequence[str], *,
             floor: float, confident: float, topical: float, broad: float | None = None,
             unseen_topics: Sequence[str] | None = None) -> bool:
    """Whether the knowledge base can answer, from the best chunk's cosine with the question:
    - below `floor`, never;
    - below `confident`, not when a noun of the question occurs in no document (`unknown_nouns`:
      "MongoDB" asked of a web framework's docs);
    - below `topical`, not when a noun of the question is missing from the best chunks
      (`unseen_nouns`: "Chicago" when the best chunks speak of per diem rates in general);
    - below `broad`, not when two nouns of the question or more are missing from them
      (`unseen_topics`, the unseen nouns less the asker's own things, "our health check": "encrypt"
      and "default" when the S3 commands' pages are asked how to encrypt a bucket by default).
    (Calibrated on the answer-check corpora, both: docs/verification.md.)"""
    best = max(((h.dense or 0.0) for h in hits), default=0.0)
    if best < floor:
        return False
    if best < confident and unknown_nouns:
        return False
    if broad is not None and best < broad and len(unseen_nouns if unseen_topics is None else unseen_topics) >= 2:
        return False
    return best >= topical or not unseen_nouns


def unseen(nouns: Sequence[str], hits: Sequence[Hit], top: int = 3) -> list[str]:
    """The nouns that none of the `top` best chunks contains (by stem: "holidays" is in "holiday",
    and "aliases" in "alias", whose stems differ until stemmed twice; a dotted name by its parts:
    "node_js", as `question_nouns` masks "Node.js", is in "Node.js")."""
    def stems_of(word: str) -> set[str]:
        once = stem(word)
        return {once, stem(once)}

    stems = {s for h in hits[:top] for w in words(h.chunk.context_text) for s in stems_of(w)}

    def seen(noun: str) -> bool:
        parts = [p for p in noun.split("_") if p]
        return bool(stems_of(noun) & stems) or (len(parts) > 1 and all(stems_of(p) & stems for p in parts))

    return [n for n in nouns if not seen(n)]
