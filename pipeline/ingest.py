"""Loading documents from folders, files, web pages and sitemaps, reporting what had to be skipped.

Each document's text is rendered to Markdown-like text by `pipeline.markup` (headings as `#` lines,
paragraphs separated by blank lines) so chunking has one structure to follow. One bad file never
stops a run.
"""

from __future__ import annotations

import dataclasses
import logging
import posixpath
import re
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from pipeline.markup import FORMATS, Site, split_front_matter, to_markdown
from pipeline.types import Document

log = logging.getLogger(__name__)

USER_AGENT = "ravbot/0.1 (+https://github.com/ravbot/ravbot)"


@dataclass
class LoadReport:
    """Documents loaded from a source and (location, reason) for everything skipped."""

    documents: list[Document] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)


def load_source(name: str, locations: list[str], max_bytes: int = 5_000_000, timeout: float = 15.0,
                url_base: str = "", url_pattern: str = "{path}") -> LoadReport:
    """Load every document of a source: folders (recursively), files, page URLs and sitemap URLs.
    Files are linked as `url_base` + `url_pattern` (see `Site`), else by their path relative to
    the location they were found under."""
    report = LoadReport()
    site = Site(url_base, url_pattern or "{path}")
    for location in locations:
        if location.startswith(("http://", "https://")):
            urls = _sitemap_urls(location, timeout, report) if _is_sitemap(location) else [location]
            for url in urls:
                _add(report, url, lambda url=url: load_url(url, name, max_bytes, timeout))
            continue
        path = Path(location).expanduser()
        if not path.exists():
            report.skipped.append((location, "does not exist"))
            continue
        root = path if path.is_dir() else path.parent
        here = dataclasses.replace(site, folder=root.resolve().name)
        for file in _files(path):
            _add(report, str(file), lambda file=file, root=root, here=here: load_file(file, name, max_bytes, root=root, site=here))
    return report


def _add(report: LoadReport, location: str, load) -> None:
    """Load one document into `report`; one that cannot be read is skipped with its reason, and
    never stops the others (a parser's own error included: it names the error's type)."""
    try:
        report.documents.append(load())
    except Exception as e:  # a parser's failure on a malformed document is that document's, not the source's
        known = isinstance(e, (OSError, ValueError, urllib.error.URLError))  # these name the file and the fault
        reason = str(e) if known else f"could not be read ({type(e).__name__}: {e})"
        log.warning("skipped %s: %s", location, reason)
        report.skipped.append((location, reason))


def _files(path: Path) -> Iterator[Path]:
    if path.is_file():
        yield path
        return
    for file in sorted(path.rglob("*")):
        if file.is_file() and file.suffix.lower() in FORMATS and not any(p.startswith(".") for p in file.relative_to(path).parts):
            yield file


TITLE_LIMIT = 200  # characters of a document's title shown as a source


def shown_title(title: str) -> str:
    """A title as sources show it: one line, at most TITLE_LIMIT characters ("…" ends a cut one).
    A page's `<title>` or front matter may hold anything; a Slack or Discord source line may not."""
    line = " ".join(title.split())
    return line if len(line) <= TITLE_LIMIT else line[:TITLE_LIMIT - 1].rstrip() + "…"


def load_file(path: Path, source: str, max_bytes: int = 5_000_000, root: Path | None = None,
              site: Site | None = None) -> Document:
    """Load one file; raises ValueError naming the file when it is empty, binary, undecodable or too big.

    Front matter is read (its `title` names the document, its `permalink`/`url` gives the link) and
    not indexed. The document's `path` is relative to `root` (default: the file's folder), after
    `site.folder`."""
    size = path.stat().st_size
    if size == 0:
        raise ValueError(f"{path} is empty")
    if size > max_bytes:
        raise ValueError(f"{path} is {size} bytes, over the {max_bytes}-byte limit")
    fmt = FORMATS.get(path.suffix.lower(), "text")
    site = site or Site()
    rel = path.relative_to(root).as_posix() if root and path.is_relative_to(root) else path.name
    raw = decode(path.read_bytes(), str(path))
    meta = split_front_matter(raw.replace("\r\n", "\n"))[0] if fmt in ("markdown", "html") else {}
    text, title = to_markdown(raw, fmt, rel=rel, site=site, include=_includer(path, root or path.parent))
    if not text.strip():
        raise ValueError(f"{path} has no text")
    if not title:
        title = path.stem.replace("_", " ").replace("-", " ")
        if fmt == "markdown" and title.lower() == "index" and rel.count("/"):
            title = posixpath.basename(posixpath.dirname(rel)).replace("_", " ").replace("-", " ")
        title = title[:1].upper() + title[1:] if fmt == "markdown" else title
    return Document(id=f"{source}:{path.resolve()}", source=source, title=shown_title(title), text=text, path=site.shown(rel),
                    url=site.page_url(rel, meta), modified=path.stat().st_mtime, domain="", format=fmt)


def _includer(page: Path, root: Path, max_bytes: int = 1_000_000):
    """What a reStructuredText `.. include:: name` of `page` reads: the named file, relative to the page
    (or, written `/name`, to `root`), only inside `root` and only when it is a readable text file."""
    top = root.resolve()

    def read(name: str) -> str | None:
        target = (top / name.lstrip("/")) if name.startswith("/") else (page.parent / name)
        try:
            target = target.resolve()
            if not target.is_relative_to(top) or not target.is_file() or target.stat().st_size > max_bytes:
                return None
            return decode(target.read_bytes(), str(target))
        except (OSError, ValueError):
            return None

    return read


def load_url(url: str, source: str, max_bytes: int = 5_000_000, timeout: float = 15.0) -> Document:
    """Fetch one web page (HTML, Markdown or text) and load it."""
    body, content_type = fetch(url, max_bytes, timeout)
    fmt = "html" if "html" in content_type or not content_type else FORMATS.get(Path(urllib.parse.urlparse(url).path).suffix.lower(), "text")
    text, title = to_markdown(decode(body, url), fmt)
    if not text.strip():
        raise ValueError(f"{url} has no text")
    return Document(id=f"{source}:{url}", source=source, title=shown_title(title or url), text=text, url=url,
                    domain=urllib.parse.urlparse(url).netloc, format=fmt)


def fetch(url: str, max_bytes: int, timeout: float) -> tuple[bytes, str]:
    request = urllib.request.Request(url, headers={"User-Agent": USER_AGENT})
    with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310 (http/https only, checked by caller)
        body = response.read(max_bytes + 1)
        if len(body) > max_bytes:
            raise ValueError(f"{url} is over the {max_bytes}-byte limit")
        return body, response.headers.get("Content-Type", "")


def _is_sitemap(url: str) -> bool:
    return urllib.parse.urlparse(url).path.lower().endswith(".xml")


def _sitemap_urls(url: str, timeout: float, report: LoadReport) -> list[str]:
    try:
        body, _ = fetch(url, 20_000_000, timeout)
    except (OSError, ValueError, urllib.error.URLError) as e:
        report.skipped.append((url, f"sitemap unreadable: {e}"))
        return []
    locs = re.findall(rb"<loc>\s*(.*?)\s*</loc>", body, flags=re.S)
    urls: list[str] = []
    for loc in (x.decode("utf-8", "replace") for x in locs):
        urls += _sitemap_urls(loc, timeout, report) if _is_sitemap(loc) else [loc]
    return urls


def decode(data: bytes, where: str) -> str:
    """UTF-8 (with or without BOM) text; binary or undecodable data raises ValueError naming `where`."""
    if b"\x00" in data[:8192]:
        raise ValueError(f"{where} looks binary")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise ValueError(f"{where} is not UTF-8 text ({e.reason} at byte {e.start})") from None
