"""A local MediaWiki-compatible API server over `wikipedia-mini`, for the real `wikipedia` package.

It answers exactly the queries the `wikipedia` 1.4 package makes for `search`,
`page(title, auto_suggest=False)`, `.content`, `.summary` and disambiguation pages,
on a real loopback socket (the package uses `requests`).

API
---
    wiki = FakeMediaWiki().start()     # or: with FakeMediaWiki() as wiki: ...
    wiki.url                           # "http://127.0.0.1:<port>/w/api.php" -> wikipedia_api_url
    wiki.articles                      # {title: [sentences]} as served
    wiki.page_url(title)               # the `fullurl` the server reports for a title
    wiki.requests                      # query parameters of every request, in order
    wiki.count("search")               # requests of one kind: search | info | extract | revisions
    wiki.slow(2.0)                     # every reply waits 2 s (0 = off); stop() wakes sleepers
    wiki.slow(2.0, kind="info")        # only replies of one kind wait (see `count`)
    wiki.fail(500)                     # every reply is HTTP 500 with an HTML body (None = off)
    wiki.stop()                        # closes the socket: later calls get "connection refused"

Content: every article of `articles.jsonl`; the first sentence is the lead (`.summary`),
the rest follow under a "== Details ==" heading. `DISAMBIGUATION` adds synthetic
disambiguation pages ("Mercury" -> a missing "Mercury (element)", then "Mercury (planet)").
Search is a simple term match (3 points per query term in the title, 1 in the text),
not CirrusSearch; it returns at most `srlimit` titles, best first.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, quote, urlparse

from tests.shared_data import shared_data

ARTICLES = shared_data() / "wikipedia-mini" / "articles.jsonl"

DISAMBIGUATION: dict[str, list[tuple[str, str]]] = {
    "Mercury": [
        ("Mercury (element)", "a chemical element"),  # not served: a page that does not load
        ("Mercury (planet)", "the smallest planet of the Solar System"),
    ],
}

_STOP = frozenset(
    "a an and are as at be by for from has have in is it its of on or that the this to was were with".split()
)


def _terms(text: str) -> set[str]:
    return {t for t in re.findall(r"\w+", text.lower()) if t not in _STOP}


class FakeMediaWiki:
    """A MediaWiki `api.php` on 127.0.0.1 serving wikipedia-mini (see the module docstring)."""

    def __init__(self, articles: Path | Iterable[dict[str, Any]] = ARTICLES):
        rows = (
            [
                json.loads(line)
                for line in Path(articles).read_text(encoding="utf-8").splitlines()
                if line.strip()
            ]
            if isinstance(articles, (str, Path))
            else list(articles)
        )
        self.articles: dict[str, list[str]] = {r["title"]: list(r["sentences"]) for r in rows}
        self.disambiguation = {
            t: opts for t, opts in DISAMBIGUATION.items() if t not in self.articles
        }
        titles = list(self.articles) + list(self.disambiguation)
        self._ids = {title: str(i + 1) for i, title in enumerate(titles)}
        self._index = []
        for title in titles:
            body = self.articles.get(title) or [d for _, d in self.disambiguation[title]]
            self._index.append((title, _terms(title), _terms(" ".join(body))))
        self.requests: list[dict[str, str]] = []
        self._delay = 0.0
        self._delay_kind: str | None = None
        self._status: int | None = None
        self._stopping = threading.Event()
        self._server: ThreadingHTTPServer | None = None

    # --- lifecycle
    def start(self) -> FakeMediaWiki:
        server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        server.daemon_threads = True
        server.fake = self  # type: ignore[attr-defined]
        self._server = server
        threading.Thread(
            target=server.serve_forever, args=(0.05,), name="fake-mediawiki", daemon=True
        ).start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> FakeMediaWiki:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def base(self) -> str:
        if self._server is None:
            raise RuntimeError("FakeMediaWiki is not started")
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    @property
    def url(self) -> str:
        return f"{self.base}/w/api.php"

    def page_url(self, title: str) -> str:
        return f"{self.base}/wiki/{quote(title.replace(' ', '_'))}"

    # --- faults and counters
    def slow(self, seconds: float, kind: str | None = None) -> None:
        self._delay, self._delay_kind = seconds, kind

    def fail(self, status: int | None) -> None:
        self._status = status

    def count(self, kind: str | None = None) -> int:
        return sum(1 for r in list(self.requests) if kind is None or _kind(r) == kind)

    # --- the API
    def answer(self, params: dict[str, str]) -> dict[str, Any]:
        if params.get("action", "query") != "query":
            return {
                "error": {
                    "code": "badvalue",
                    "info": f"unsupported action {params.get('action')!r}",
                }
            }
        if params.get("list") == "search":
            return self._search(params)
        title = params.get("titles", "")
        if not title and "pageids" in params:
            by_id = {v: k for k, v in self._ids.items()}
            title = by_id.get(params["pageids"], "")
        pageid = self._ids.get(title)
        if pageid is None:
            return {"query": {"pages": {"-1": {"ns": 0, "title": title, "missing": ""}}}}
        page: dict[str, Any] = {"pageid": int(pageid), "ns": 0, "title": title}
        prop = params.get("prop", "")
        if "info" in prop:
            page |= {"fullurl": self.page_url(title), "canonicalurl": self.page_url(title)}
            if title in self.disambiguation and "pageprops" in prop:
                page["pageprops"] = {"disambiguation": ""}
        if "extracts" in prop:
            sentences = self.articles.get(title) or [f"{title} may refer to:"]
            lead, rest = sentences[0], sentences[1:]
            intro = "exintro" in params
            page["extract"] = (
                lead if intro or not rest else lead + "\n\n== Details ==\n" + " ".join(rest)
            )
        if "revisions" in prop:
            revision: dict[str, Any] = {"revid": 1000 + int(pageid), "parentid": 999 + int(pageid)}
            if "content" in params.get("rvprop", ""):
                revision["*"] = self._disambiguation_html(title)
            page["revisions"] = [revision]
        return {"batchcomplete": "", "query": {"pages": {pageid: page}}}

    def _search(self, params: dict[str, str]) -> dict[str, Any]:
        query = _terms(params.get("srsearch", ""))
        limit = int(params.get("srlimit", 10))
        scored = []
        for title, title_terms, body_terms in self._index:
            score = 3 * len(query & title_terms) + len(query & body_terms)
            if score:
                scored.append((-score, title))
        hits = [{"ns": 0, "title": t} for _, t in sorted(scored)[:limit]]
        out: dict[str, Any] = {
            "batchcomplete": "",
            "query": {"searchinfo": {"totalhits": len(scored)}, "search": hits},
        }
        return out

    def _disambiguation_html(self, title: str) -> str:
        items = "".join(
            f'<li><a href="/wiki/{quote(t.replace(" ", "_"))}" title="{t}">{t}</a>, {d}</li>'
            for t, d in self.disambiguation.get(title, [])
        )
        return f"<div><p><b>{title}</b> may refer to:</p><ul>{items}</ul></div>"


def _kind(params: dict[str, str]) -> str:
    if params.get("list") == "search":
        return "search"
    prop = params.get("prop", "")
    if "info" in prop:
        return "info"
    if "extracts" in prop:
        return "extract"
    if "revisions" in prop:
        return "revisions"
    return "other"


class _Handler(BaseHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    def do_GET(self) -> None:
        fake: FakeMediaWiki = self.server.fake  # type: ignore[attr-defined]
        url = urlparse(self.path)
        params = {k: v[0] for k, v in parse_qs(url.query, keep_blank_values=True).items()}
        fake.requests.append(params)
        delayed = fake._delay and fake._delay_kind in (None, _kind(params))
        if delayed and fake._stopping.wait(fake._delay):
            return
        try:
            if url.path != "/w/api.php":
                self._send(404, b"<html>not found</html>", "text/html")
            elif fake._status:
                self._send(fake._status, b"<html><body>Internal error</body></html>", "text/html")
            else:
                self._send(200, json.dumps(fake.answer(params)).encode(), "application/json")
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up first

    def _send(self, status: int, data: bytes, ctype: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", f"{ctype}; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
