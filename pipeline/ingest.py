"""Loading documents from folders, files, web pages and sitemaps, reporting what had to be skipped.

Every format is normalised to Markdown-like text (headings as `#` lines, paragraphs separated by
blank lines) so chunking has one structure to follow. One bad file never stops a run.
"""

from __future__ import annotations

import logging
import re
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from pipeline.types import Document

log = logging.getLogger(__name__)

FORMATS = {".md": "markdown", ".markdown": "markdown", ".txt": "text", ".text": "text",
           ".rst": "rst", ".html": "html", ".htm": "html"}
USER_AGENT = "ravbot/0.1 (+https://github.com/ravbot/ravbot)"


@dataclass
class LoadReport:
    """Documents loaded from a source and (location, reason) for everything skipped."""

    documents: list[Document] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)


def load_source(name: str, locations: list[str], max_bytes: int = 5_000_000, timeout: float = 15.0) -> LoadReport:
    """Load every document of a source: folders (recursively), files, page URLs and sitemap URLs."""
    report = LoadReport()
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
        for file in _files(path):
            _add(report, str(file), lambda file=file: load_file(file, name, max_bytes))
    return report


def _add(report: LoadReport, location: str, load) -> None:
    try:
        report.documents.append(load())
    except (OSError, ValueError, urllib.error.URLError) as e:
        log.warning("skipped %s: %s", location, e)
        report.skipped.append((location, str(e)))


def _files(path: Path) -> Iterator[Path]:
    if path.is_file():
        yield path
        return
    for file in sorted(path.rglob("*")):
        if file.is_file() and file.suffix.lower() in FORMATS and not any(p.startswith(".") for p in file.relative_to(path).parts):
            yield file


def load_file(path: Path, source: str, max_bytes: int = 5_000_000) -> Document:
    """Load one file; raises ValueError naming the file when it is empty, binary, undecodable or too big."""
    size = path.stat().st_size
    if size == 0:
        raise ValueError(f"{path} is empty")
    if size > max_bytes:
        raise ValueError(f"{path} is {size} bytes, over the {max_bytes}-byte limit")
    fmt = FORMATS.get(path.suffix.lower(), "text")
    text, title = to_markdown(decode(path.read_bytes(), str(path)), fmt)
    if not text.strip():
        raise ValueError(f"{path} has no text")
    return Document(id=f"{source}:{path.resolve()}", source=source, title=title or path.stem.replace("_", " ").replace("-", " "),
                    text=text, path=str(path), modified=path.stat().st_mtime, domain="", format=fmt)


def load_url(url: str, source: str, max_bytes: int = 5_000_000, timeout: float = 15.0) -> Document:
    """Fetch one web page (HTML, Markdown or text) and load it."""
    body, content_type = fetch(url, max_bytes, timeout)
    fmt = "html" if "html" in content_type or not content_type else FORMATS.get(Path(urllib.parse.urlparse(url).path).suffix.lower(), "text")
    text, title = to_markdown(decode(body, url), fmt)
    if not text.strip():
        raise ValueError(f"{url} has no text")
    return Document(id=f"{source}:{url}", source=source, title=title or url, text=text, url=url,
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


def to_markdown(text: str, fmt: str) -> tuple[str, str]:
    """Normalise `text` of a format to Markdown-like text; returns (text, title or "")."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    if fmt == "html":
        return html_to_markdown(text)
    if fmt == "rst":
        text = rst_to_markdown(text)
    if fmt in ("markdown", "rst"):
        match = re.search(r"^#\s+(.+)$", text, flags=re.M)
        return text, match.group(1).strip() if match else ""
    return text, ""


_RST_UNDERLINE = re.compile(r"^([=\-~^\"'`#*+<>:._])\1{2,}\s*$")


def rst_to_markdown(text: str) -> str:
    """reStructuredText section titles (underlined, optionally overlined) become `#` headings by order of first use."""
    lines, out, levels = text.split("\n"), [], []
    i = 0
    while i < len(lines):
        line = lines[i]
        nxt = lines[i + 1] if i + 1 < len(lines) else ""
        if line.strip() and not _RST_UNDERLINE.match(line) and _RST_UNDERLINE.match(nxt) and len(nxt.strip()) >= len(line.strip()):
            char = nxt.strip()[0]
            if out and _RST_UNDERLINE.match(out[-1]) and out[-1].strip()[0] == char:
                out.pop()  # overline
            if char not in levels:
                levels.append(char)
            out.append("#" * min(len(levels[: levels.index(char) + 1]), 6) + " " + line.strip())
            i += 2
            continue
        out.append(line)
        i += 1
    return "\n".join(out)


def html_to_markdown(html: str) -> tuple[str, str]:
    """Main text of an HTML page: headings as `#` lines, block elements as paragraphs; scripts, navigation dropped."""
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(html, "lxml")
    title = soup.title.get_text(" ", strip=True) if soup.title else ""
    for tag in soup(["script", "style", "nav", "header", "footer", "aside", "noscript", "form", "svg"]):
        tag.decompose()
    root = soup.find("main") or soup.find("article") or soup.body or soup
    blocks = []
    for el in root.find_all(["h1", "h2", "h3", "h4", "h5", "h6", "p", "li", "pre", "td", "blockquote", "dd", "dt"]):
        if el.find_parent(["li", "blockquote", "td"]) and el.name in ("p",):
            continue
        words = el.get_text(" ", strip=True)
        if not words:
            continue
        if el.name[0] == "h" and el.name[1:].isdigit():
            blocks.append("#" * int(el.name[1]) + " " + words)
        elif el.name == "li":
            blocks.append("- " + words)
        else:
            blocks.append(words)
    if not title:
        h1 = root.find("h1")
        title = h1.get_text(" ", strip=True) if h1 else ""
    return "\n\n".join(blocks), title
