"""Wikipedia passages as evidence for a claim, through the `wikipedia` package, cached in SQLite.

`WikipediaSource.search_passages(claim)` searches Wikipedia with the claim, loads the top
pages (`auto_suggest=False`; a disambiguation page is replaced by the first of its options
that loads), splits each page into passages of a few sentences, ranks them against the claim
with BM25 (rank-bm25) and returns the best as `Evidence(origin="wikipedia")`.

Limits and failure, by design:
- One hard time limit per `search_passages` call (`wikipedia_timeout`, seconds) covers every
  request it makes. The package calls `requests.get` without a timeout, so each network step
  runs in a daemon thread that is abandoned at the deadline; its requests also get a socket
  timeout, and an abandoned step makes no further requests.
- Wikipedia unreachable (connection refused, timeout, HTTP error, a reply that is not
  MediaWiki JSON) raises `WikipediaUnavailable`; the caller carries on with the knowledge base
  and records which claims were checked against what. When the search worked but only some
  pages failed or the deadline came mid-way, the passages of the pages that loaded are
  returned. No result (nothing found) is `[]`, not an error.
- Search results and pages are cached in one SQLite file for `wikipedia_cache_hours`;
  a cached call makes no request at all.

The `wikipedia` package keeps its endpoint in a module global (`wikipedia.wikipedia.API_URL`):
`wikipedia_api_url` sets it for the whole process (empty = https://en.wikipedia.org), so one
process talks to one MediaWiki. The package's own in-memory `search` memo is bypassed (the
SQLite cache, with its TTL, replaces it), and a descriptive User-Agent is set as Wikimedia asks.
"""

from __future__ import annotations

import json
import logging
import re
import sqlite3
import threading
import time
import warnings
from collections.abc import Callable
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import requests
import wikipedia
from rank_bm25 import BM25Okapi

from pipeline.text import CITATION, FUNCTION_WORDS, split_sentences, words
from pipeline.types import Evidence

log = logging.getLogger(__name__)

DEFAULT_API_URL = "https://en.wikipedia.org/w/api.php"
USER_AGENT = "ravbot/0.1 (answer verification bot; https://github.com/ravbot/ravbot)"
PASSAGE_SENTENCES = 3  # sentences per passage; neighbouring passages share one sentence
MAX_QUERY_CHARS = 300  # MediaWiki's srsearch limit

T = TypeVar("T")
# what a network step raises when the server is unreachable, slow or answers nonsense
_UNAVAILABLE = (
    requests.RequestException,
    ValueError,  # a body that is not JSON (an HTML error page)
    LookupError,  # JSON that is not the MediaWiki shape the package expects
    AssertionError,  # the package's own consistency checks on redirects
    wikipedia.exceptions.WikipediaException,  # an API error reply (e.g. "Pool queue is full")
)


class WikipediaUnavailable(RuntimeError):
    """Wikipedia could not be reached or did not answer in time; the message says which and why."""


@dataclass(frozen=True)
class Page:
    """A loaded Wikipedia page (what the cache keeps)."""

    title: str
    url: str
    content: str


class WikipediaSource:
    """Wikipedia search + page fetch with a hard time limit; owns the SQLite cache file at `cache_path`."""

    def __init__(
        self,
        cache_path: str | Path,
        *,
        api_url: str = "",
        timeout: float = 5.0,
        cache_hours: float = 168.0,
        pages: int = 3,
        clock: Callable[[], float] = time.time,
    ):
        if timeout <= 0:
            raise ValueError(f"wikipedia timeout must be positive, got {timeout!r}")
        if pages < 1:
            raise ValueError(f"wikipedia pages must be >= 1, got {pages!r}")
        self.cache_path = Path(cache_path)
        self.api_url = api_url or DEFAULT_API_URL
        self.timeout = float(timeout)
        self.ttl = float(cache_hours) * 3600.0
        self.pages = pages
        self._clock = clock
        self._schema_ready = False

    # --- public
    def search_passages(self, claim: str, pages: int | None = None, top: int = 5) -> list[Evidence]:
        """The `top` passages of the best `pages` Wikipedia pages for `claim`, best first."""
        query = _query_text(claim)
        if not query:
            return []
        pages = pages or self.pages
        deadline = time.monotonic() + self.timeout
        _configure_package(self.api_url, self.timeout)
        titles = self._search(query, pages, deadline)
        if not titles:
            keywords = _keyword_query(query)
            if keywords and keywords != query:
                titles = self._search(keywords, pages, deadline)
        loaded: list[Page] = []
        failures: list[str] = []
        for title in titles:
            try:
                page = self._page(title, claim, deadline)
            except WikipediaUnavailable as e:
                failures.append(str(e))
                if time.monotonic() >= deadline:
                    break
                continue
            if page is not None and page.title not in {p.title for p in loaded}:
                loaded.append(page)
        if failures and not loaded:
            raise WikipediaUnavailable(failures[0])
        if failures:
            log.info(
                "wikipedia: %d of %d pages failed (%s)", len(failures), len(titles), failures[0]
            )
        return rank_passages(claim, loaded, top)

    def close(self) -> None:
        """Nothing to release: each cache access opens and closes its own SQLite connection."""

    # --- network steps, each under the deadline
    def _search(self, query: str, limit: int, deadline: float) -> list[str]:
        key = f"{self.api_url}\n{limit}\n{query}"
        cached = self._cache_get("search", key)
        if cached is not None:
            return json.loads(cached)
        raw_search = getattr(wikipedia.search, "__wrapped__", wikipedia.search)  # skip its memo
        titles = self._call(lambda: list(raw_search(query, results=limit)), deadline, "search")
        self._cache_put("search", key, json.dumps(titles))
        return titles

    def _page(self, title: str, claim: str, deadline: float) -> Page | None:
        key = f"{self.api_url}\n{title}"
        cached = self._cache_get("page", key)
        if cached is not None:
            data = json.loads(cached)
            return Page(**data) if data else None
        page = self._call(lambda: _load_page(title, claim), deadline, f"page {title!r}")
        self._cache_put("page", key, json.dumps(page.__dict__ if page else None))
        return page

    def _call(self, fn: Callable[[], T], deadline: float, what: str) -> T:
        """Run `fn` in a daemon thread; give up at `deadline` and map failures to WikipediaUnavailable."""
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise WikipediaUnavailable(
                f"Wikipedia at {self.api_url}: time limit of {self.timeout:g}s reached before {what}"
            )
        box: dict[str, Any] = {}
        done = threading.Event()
        cancelled = threading.Event()

        def run() -> None:
            _step.cancelled = cancelled
            try:
                box["value"] = fn()
            except BaseException as e:  # re-raised in the caller's thread
                box["error"] = e
            finally:
                done.set()

        threading.Thread(target=run, name="wikipedia-call", daemon=True).start()
        if not done.wait(remaining):
            cancelled.set()
            raise WikipediaUnavailable(
                f"Wikipedia at {self.api_url}: no reply within {self.timeout:g}s ({what})"
            )
        error = box.get("error")
        if error is None:
            return box["value"]
        if isinstance(error, _UNAVAILABLE):
            cause = f"{type(error).__name__}: {' '.join(str(error).split())[:200]}"
            raise WikipediaUnavailable(
                f"Wikipedia at {self.api_url} failed on {what} ({cause})"
            ) from None
        raise error

    # --- cache
    def _db(self) -> sqlite3.Connection:
        self.cache_path.parent.mkdir(parents=True, exist_ok=True)
        db = sqlite3.connect(self.cache_path, timeout=10)
        if not self._schema_ready:
            with db:
                db.execute(
                    "CREATE TABLE IF NOT EXISTS wiki_cache ("
                    "kind TEXT NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL, fetched REAL NOT NULL, "
                    "PRIMARY KEY (kind, key))"
                )
            self._schema_ready = True
        return db

    def _cache_get(self, kind: str, key: str) -> str | None:
        with closing(self._db()) as db:
            row = db.execute(
                "SELECT value, fetched FROM wiki_cache WHERE kind = ? AND key = ?", (kind, key)
            ).fetchone()
        if row is None or self._clock() - row[1] > self.ttl:
            return None
        return row[0]

    def _cache_put(self, kind: str, key: str, value: str) -> None:
        with closing(self._db()) as db, db:
            db.execute(
                "INSERT OR REPLACE INTO wiki_cache (kind, key, value, fetched) VALUES (?, ?, ?, ?)",
                (kind, key, value, self._clock()),
            )


# --- passages and ranking

_HEADING = re.compile(r"^\s*=+[^=].*=+\s*$")


def split_passages(content: str, sentences: int = PASSAGE_SENTENCES) -> list[str]:
    """Passages of up to `sentences` sentences per paragraph, overlapping by one sentence; headings dropped."""
    passages = []
    for paragraph in re.split(r"\n\s*\n|\n(?=\s*=)", content):
        lines = [
            line for line in paragraph.splitlines() if line.strip() and not _HEADING.match(line)
        ]
        text = " ".join(" ".join(lines).split())
        if not text:
            continue
        parts = split_sentences(text)
        step = max(1, sentences - 1)
        for start in range(0, max(1, len(parts) - 1), step):
            passages.append(" ".join(parts[start : start + sentences]))
            if start + sentences >= len(parts):
                break
    return passages


def rank_passages(claim: str, pages: list[Page], top: int = 5) -> list[Evidence]:
    """The `top` passages of `pages` by BM25 against `claim`; passages sharing no term are dropped.

    Ties (BM25Okapi gives a term found in half the passages an IDF of 0, common on a few
    short pages) go to the passage sharing more distinct terms with the claim.
    """
    candidates = [
        (page, i, text) for page in pages for i, text in enumerate(split_passages(page.content))
    ]
    query = _tokens(claim)
    if not candidates or not query:
        return []
    documents = [_tokens(f"{page.title} {text}") or ["∅"] for page, _, text in candidates]
    scores = BM25Okapi(documents).get_scores(query)
    overlap = [len(set(query) & set(doc)) for doc in documents]
    order = sorted(range(len(candidates)), key=lambda j: (-scores[j], -overlap[j], j))
    out = []
    for j in order:
        if overlap[j] == 0:
            continue
        page, i, text = candidates[j]
        out.append(
            Evidence(
                text=text,
                title=page.title,
                url=page.url,
                origin="wikipedia",
                score=float(scores[j]),
                chunk_id=f"wikipedia:{page.title}#{i}",
            )
        )
        if len(out) == top:
            break
    return out


def _tokens(text: str) -> list[str]:
    return [t for t in words(text) if t not in FUNCTION_WORDS]


def _query_text(claim: str) -> str:
    """The claim without citation markers, cut to MediaWiki's search length at a word boundary."""
    text = " ".join(CITATION.sub(" ", claim).split())
    if len(text) > MAX_QUERY_CHARS:
        text = text[:MAX_QUERY_CHARS].rsplit(" ", 1)[0]
    return text


def _keyword_query(query: str, limit: int = 8) -> str:
    """A shorter query for when the whole claim finds nothing: names, numbers and long words."""
    found = re.findall(r"[\w'-]+", query)
    keep = [
        w
        for i, w in enumerate(found)
        if w.lower() not in FUNCTION_WORDS
        and ((i > 0 and w[0].isupper()) or any(c.isdigit() for c in w) or len(w) >= 7)
    ]
    return " ".join(dict.fromkeys(keep[:limit]))


# --- the wikipedia package (runs in the worker threads)

_step = threading.local()  # `.cancelled`: set when the step running in this thread was abandoned
_configure_lock = threading.Lock()


class _RequestsWithTimeout:
    """Stands in for `requests` inside the wikipedia package: adds a timeout, refuses abandoned steps."""

    def __init__(self, timeout: float):
        self.timeout = timeout

    def get(self, url: str, **kwargs: Any) -> requests.Response:
        cancelled = getattr(_step, "cancelled", None)
        if cancelled is not None and cancelled.is_set():
            raise requests.ConnectionError("wikipedia step abandoned after its time limit")
        kwargs.setdefault("timeout", self.timeout)
        return requests.get(url, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(requests, name)


def _configure_package(api_url: str, timeout: float) -> None:
    """Point the package's globals at `api_url`, with a request timeout and our User-Agent."""
    with _configure_lock:
        wikipedia.wikipedia.API_URL = api_url
        requester = wikipedia.wikipedia.requests
        if not (isinstance(requester, _RequestsWithTimeout) and requester.timeout == timeout):
            wikipedia.wikipedia.requests = _RequestsWithTimeout(timeout)
        wikipedia.set_user_agent(USER_AGENT)
        warnings.filterwarnings(
            "ignore", message="No parser was explicitly specified", module=r"wikipedia\."
        )


def _load_page(title: str, claim: str, options_tried: int = 3) -> Page | None:
    """The page `title`, a loadable option of it when it is a disambiguation page, or None."""
    try:
        page = wikipedia.page(title, auto_suggest=False)
    except wikipedia.exceptions.PageError:
        return None
    except wikipedia.exceptions.DisambiguationError as e:
        page = None
        for option in _by_overlap(claim, e.options)[:options_tried]:
            try:
                page = wikipedia.page(option, auto_suggest=False)
                break
            except (wikipedia.exceptions.PageError, wikipedia.exceptions.DisambiguationError):
                continue
        if page is None:
            return None
    return Page(title=page.title, url=page.url, content=page.content)


def _by_overlap(claim: str, options: list[str]) -> list[str]:
    """Disambiguation options, those sharing more words with the claim first (stable otherwise)."""
    words = set(_tokens(claim))
    return sorted(options, key=lambda option: -len(words & set(_tokens(option))))
