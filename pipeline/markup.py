"""Rendering a page's text (Markdown, reStructuredText, HTML, plain text) as Markdown-like text.

Every format is normalised to one structure for chunking: headings as `#` lines, paragraphs
separated by blank lines. Markdown is rendered as its documentation site shows it: front matter,
template tags and shortcodes, admonitions, tables, links (resolved with `Site`), inline HTML and
emphasis markers.
"""

from __future__ import annotations

import posixpath
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass

from markdown_it import MarkdownIt

from pipeline.html import dashed_items, html_to_markdown, row_item, table_rows, underlined_headings
from pipeline.myst import myst_to_markdown
from pipeline.rst import Include, rst_to_markdown
from pipeline.text import FENCE, INLINE_CODE

FORMATS = {".md": "markdown", ".markdown": "markdown", ".txt": "text", ".text": "text",
           ".rst": "rst", ".html": "html", ".htm": "html"}


def to_markdown(text: str, fmt: str, rel: str = "", site: Site | None = None,
                include: Include | None = None) -> tuple[str, str]:
    """Normalise `text` of a format to Markdown-like text; returns (text, title or "").

    Markdown is rendered as a documentation site shows it (`render_markdown`): MyST's directives and
    roles (`pipeline.myst`), front matter, template tags, admonitions, tables, inline HTML and
    emphasis markers become plain Markdown;
    links are resolved against the page at `rel`. reStructuredText is first made Markdown
    (`pipeline.rst`; `include` reads the files its `include` directives name), then rendered the
    same way. HTML is read by `pipeline.html` (the page's main text, its <title>). The title is front
    matter's, else the first `#` heading outside code blocks."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    if fmt in ("markdown", "html"):
        meta, text = split_front_matter(text)
    if fmt == "html":
        return html_to_markdown(text)
    if fmt == "rst":
        text = render_markdown(rst_to_markdown(text, include), rel, site)
        return text, markdown_title(text)
    if fmt == "markdown":
        text = render_markdown(myst_to_markdown(text), rel, site)
        title = meta.get("title")
        title = " ".join(str(title).split()) if isinstance(title, (str, int, float)) else ""
        return text, title or markdown_title(text)
    return dashed_items(underlined_headings(text)), ""  # plain text: a README's underlined headings and "-- " items


# --------------------------------------------------------------------------- documentation sites

_FRONT_MATTER = re.compile(r"\A(---|\+\+\+)[ \t]*\n(.*?)\n\1[ \t]*(?:\n|\Z)", re.S)


def split_front_matter(text: str) -> tuple[dict, str]:
    """YAML (`---`) or TOML (`+++`) front matter at the very start: (its table, the text after it).
    Unreadable front matter gives an empty table; the text is returned without it either way."""
    match = _FRONT_MATTER.match(text)
    if not match:
        return {}, text
    raw, rest = match.group(2), text[match.end():]
    try:
        if match.group(1) == "+++":
            meta = tomllib.loads(raw)
        else:
            import yaml

            meta = yaml.safe_load(raw)
    except Exception:  # noqa: BLE001 - any parser error: the block is still front matter, not text
        meta = None
    return (meta if isinstance(meta, dict) else {}), rest


@dataclass(frozen=True)
class Site:
    """Where a source's pages are published: links become `url_base` + `url_pattern` filled with the
    page's path relative to the source root (`{path}` as is, `{stem}` without its extension and
    without a trailing `index`). Without a `url_base`, links are the source-relative path, after
    `folder` (the name of the folder the source points at, e.g. "docs/reindexing.md")."""

    url_base: str = ""
    url_pattern: str = "{path}"
    folder: str = ""

    def shown(self, rel: str) -> str:
        """How a source-relative path is shown when there is no published URL."""
        return f"{self.folder}/{rel}" if self.folder else rel

    def page_url(self, rel: str, meta: Mapping | None = None) -> str:
        """The published URL of the page at source-relative `rel` ("" without a url_base)."""
        link = str((meta or {}).get("permalink") or (meta or {}).get("url") or "")
        if re.match(r"https?://", link):
            return link
        if not self.url_base:
            return ""
        return self.join(link) if link else self.join(self.fill(rel))

    def fill(self, rel: str) -> str:
        stem = re.sub(r"(^|/)index$", "", posixpath.splitext(rel)[0])
        return self.url_pattern.replace("{path}", rel).replace("{stem}", stem)

    def join(self, site_path: str) -> str:
        base = self.url_base if self.url_base.endswith("/") else self.url_base + "/"
        return base + re.sub(r"/{2,}", "/", site_path.lstrip("/"))

    def resolve(self, target: str, rel: str) -> str:
        """A link target written in the page at `rel`, as a URL (or, without a url_base, a
        source-relative path); "" when it cannot be resolved (a site path with no url_base)."""
        target = target.strip().strip("<>")
        if not target or re.match(r"[a-zA-Z][a-zA-Z0-9+.-]*:", target):
            return target
        path, _, fragment = target.partition("#")
        anchor = f"#{fragment}" if fragment else ""
        if not path:
            page = self.page_url(rel) or self.shown(rel)
            return page + anchor
        if path.startswith("/"):
            return self.join(path) + anchor if self.url_base else ""
        joined = posixpath.normpath(posixpath.join(posixpath.dirname(rel), path))
        if joined.startswith("../"):
            return ""
        if not self.url_base:
            return self.shown(joined) + anchor
        if posixpath.splitext(joined)[1].lower() in FORMATS:
            return self.join(self.fill(joined)) + anchor
        return self.join(joined + ("/" if path.endswith("/") else "")) + anchor


_ADMONITION = re.compile(r"^(?P<indent>[ \t]*)(?:!!!|\?\?\?\+?)[ \t]+(?P<kind>[\w-]+)(?:[ \t]+\"(?P<title>[^\"]*)\")?[ \t]*$")
_TABBED = re.compile(r"^(?P<indent>[ \t]*)===!?\+?[ \t]+\"(?P<title>[^\"]*)\"[ \t]*$")  # pymdownx.tabbed: `=== "Windows"`
_DOCUSAURUS = re.compile(r"^[ \t]*(?P<fence>:{3,})[ \t]*(?P<kind>[a-zA-Z][\w-]*)(?:\[(?P<t1>[^\]]*)\]|[ \t]+(?P<t2>.+?))?[ \t]*$")
_MKDOCSTRINGS = re.compile(r"^[ \t]*:::[ \t]+[\w.]+[ \t]*$")


def _label(kind: str, title: str | None) -> str:
    """"Title: " for a titled admonition, "Note: " for an untitled one, "" for an empty title."""
    if title is not None:
        return f"{title.strip()}: " if title.strip() else ""
    return kind.replace("-", " ").capitalize() + ": "


def _prefix_first(lines: list[str], label: str) -> list[str]:
    """`label` put before the first prose line of `lines` (or as its own paragraph before a list/code)."""
    if not label:
        return lines
    for i, line in enumerate(lines):
        if line.strip():
            if FENCE.match(line) or re.match(r"^\s*([-*+]|\d+[.)])\s|^\s*\|", line):
                return [*lines[:i], label.rstrip(), "", *lines[i:]]
            return [*lines[:i], label + line.lstrip(), *lines[i + 1:]]
    return []


def render_blocks(text: str) -> str:
    """MkDocs admonitions (`!!! note "Title"`, collapsible `???`) and content tabs (`=== "Windows"`),
    Docusaurus `:::note` blocks and mkdocstrings `::: module.name` directives made plain: the body
    unindented and led by its title or kind ("Note: ..."); directives and admonitions left empty by
    them are dropped."""
    lines, out, i, fence = text.split("\n"), [], 0, ""
    while i < len(lines):
        line = lines[i]
        fence_match = FENCE.match(line)
        if fence:
            out.append(line)
            if fence_match and fence_match.group(1)[0] == fence[0] and len(fence_match.group(1)) >= len(fence):
                fence = ""
            i += 1
            continue
        if fence_match:
            fence = fence_match.group(1)
            out.append(line)
            i += 1
            continue
        if _MKDOCSTRINGS.match(line):
            indent = len(line) - len(line.lstrip())
            i += 1
            while i < len(lines) and (not lines[i].strip() or len(lines[i]) - len(lines[i].lstrip()) > indent):
                i += 1
            continue
        if match := _ADMONITION.match(line) or _TABBED.match(line):
            indent = len(match.group("indent").expandtabs(4))
            body, i = [], i + 1
            while i < len(lines) and (not lines[i].strip() or len(lines[i].expandtabs(4)) - len(lines[i].expandtabs(4).lstrip()) >= indent + 4):
                body.append(lines[i].expandtabs(4)[indent + 4:] if lines[i].strip() else "")
                i += 1
            inner = render_blocks("\n".join(body)).split("\n")
            kind = match.groupdict().get("kind") or ""  # (a tab has a title and no kind)
            rendered = _prefix_first(inner, _label(kind, match.group("title")))
            if any(x.strip() for x in rendered):
                out += ["", *[" " * indent + x if x else x for x in rendered], ""]
            continue
        if (match := _DOCUSAURUS.match(line)) and not _MKDOCSTRINGS.match(line):
            close = re.compile(rf"^[ \t]*{match.group('fence')}[ \t]*$")
            body, i = [], i + 1
            while i < len(lines) and not close.match(lines[i]):
                body.append(lines[i])
                i += 1
            i += 1
            title = match.group("t1") if match.group("t1") is not None else match.group("t2")
            inner = render_blocks("\n".join(body)).split("\n")
            rendered = _prefix_first(inner, _label(match.group("kind"), title))
            if any(x.strip() for x in rendered):
                out += ["", *rendered, ""]
            continue
        out.append(line)
        i += 1
    return "\n".join(out)


_COMMENTS = re.compile(r"<!--.*?(?:-->|\Z)|\{%-?\s*comment\s*-?%\}.*?(?:\{%-?\s*endcomment\s*-?%\}|\Z)|\{#.*?#\}", re.S)
_LINK_TAG = re.compile(r"\{%-?\s*(?:page|link|post_url|url)\s+[\"']?([^\"'%]+?)[\"']?\s*-?%\}")
_CHANNEL_TAG = re.compile(r"\{%-?\s*[\w-]*channel[\w-]*\s+[\"']?#?([^\"'%\s]+)[\"']?\s*-?%\}")
_HUGO_REF = re.compile(r"\{\{[<%]\s*(?:rel)?ref\s+[\"']?([^\"'>%]+?)[\"']?\s*[>%]\}\}")
_URL_FILTER = re.compile(r"\{\{-?\s*[\"']([^\"']+)[\"']\s*\|\s*(?:relative_url|absolute_url|url)\s*-?\}\}")
_NOT_BLANK = r"(?:(?!\n[ \t]*\n).)*?"  # anything within one paragraph
_TEMPLATE = re.compile(rf"\{{%{_NOT_BLANK}%\}}|\{{\{{[<%]{_NOT_BLANK}[>%]\}}\}}|\{{\{{{_NOT_BLANK}\}}\}}", re.S)
_TABLE_SEPARATOR = re.compile(r"^\s*\|?\s*:?-{2,}:?\s*(\|\s*:?-{2,}:?\s*)*\|?\s*$")
_IMAGE = re.compile(r"!\[[^\]\n]*\]\([^)\n]*\)|!\[[^\]\n]*\]\[[^\]\n]*\]")
_LINK = re.compile(r"(?<!!)\[([^\]\n]+(?:\n[^\]\n]+)*)\]\(\s*<?([^)\s>]*)>?(?:\s+[\"'][^\n]*?[\"'])?\s*\)")
_REF_LINK = re.compile(r"(?<!!)\[([^\]\n]+(?:\n[^\]\n]+)*)\]\[([^\]\n]*)\]")
# A shortcut reference ("[the Git Protocol]" with "[the Git Protocol]: https://…" on the page), or an
# image's ("![logo]"): not a footnote, an escaped bracket, a link's text ("[x](…)", "[x][y]") or a
# definition ("[x]:").
_REF_SHORTCUT = re.compile(r"(?<![\]\\])(!?)\[([^\]\[\n^][^\]\[\n]*(?:\n[^\]\[\n]+)*)\](?![(\[:])")
_REF_DEFINITION = re.compile(r"^ {0,3}\[([^\]\n]+)\]:\s*<?(\S+?)>?(?:\s+[\"'(].*[\"')])?\s*$", re.M)
_HTML_LINK = re.compile(r"<a\s[^>]*?href=[\"']([^\"']*)[\"'][^>]*>(.*?)</a\s*>", re.S | re.I)
_HTML_CODE = re.compile(r"<code>(.*?)</code>", re.S | re.I)
_HTML_TAG = re.compile(r"</?(?:a|abbr|b|big|blockquote|body|br|center|code|dd|details|div|dl|dt|em|figcaption|figure|font|h[1-6]|head|hr|html|i|iframe|img|input|kbd|li|link|mark|meta|ol|p|picture|pre|s|section|small|source|span|strong|sub|summary|sup|table|tbody|td|th|thead|title|tr|u|ul|video)\b[^>]*>", re.I)
_HTML_TABLE = re.compile(r"<table\b.*?</table\s*>", re.S | re.I)
_EMPHASIS = (re.compile(r"(?<![\w*\\])(\*\*\*|\*\*|\*)(?=[^\s*])(.+?)(?<=[^\s*\\])\1(?![\w*])", re.S),
             re.compile(r"(?<![\w\\])(___|__|_)(?=[^\s_])(.+?)(?<=[^\s_\\])\1(?!\w)", re.S))


def _site_path(target: str) -> str:
    """A generator's page reference (`{% page "tools/x" %}`) is relative to the site root."""
    target = target.strip()
    return target if re.match(r"[a-zA-Z][a-zA-Z0-9+.-]*:", target) else "/" + target.lstrip("/")


def _table(rows: list[str]) -> list[str]:
    """A Markdown table as list items of "Header: cell — Header: cell" (empty cells left out)."""
    def cells(row: str) -> list[str]:
        row = row.strip()
        row = row[1:] if row.startswith("|") else row
        row = row[:-1] if row.endswith("|") and not row.endswith("\\|") else row
        return [c.strip().replace("\\|", "|") for c in re.split(r"(?<!\\)\|", row)]

    header = cells(rows[0])
    return [line for row in rows[2:] for line in row_item(header, cells(row))]


def render_tables(text: str) -> str:
    """Every pipe table (header row, separator row, rows) becomes one list item per row."""
    lines, out, i = text.split("\n"), [], 0
    while i < len(lines):
        if "|" in lines[i] and i + 1 < len(lines) and _TABLE_SEPARATOR.match(lines[i + 1]) and "|" in lines[i + 1]:
            end = i + 2
            while end < len(lines) and "|" in lines[end] and lines[end].strip():
                end += 1
            out += ["", *_table(lines[i:end])]
            i = end
            continue
        out.append(lines[i])
        i += 1
    return "\n".join(out)


def render_html_tables(text: str) -> str:
    """Every HTML `<table>` of a Markdown page (Node.js's API docs write theirs so) becomes one list
    item per row, "Header: cell — Header: cell", as a pipe table and an HTML page's table do: its cells
    run together into one sentence otherwise ("Keybindings Description Notes Ctrl+Shift+Backspace …")."""
    return _HTML_TABLE.sub(lambda m: "\n".join(["", *table_rows(m.group(0)), ""]), text)


def _strip_emphasis(text: str) -> str:
    paragraphs = re.split(r"(\n[ \t]*\n)", text)
    for i in range(0, len(paragraphs), 2):
        for pattern in _EMPHASIS:
            for _ in range(3):  # nested emphasis
                paragraphs[i] = pattern.sub(r"\2", paragraphs[i])
    return "".join(paragraphs)


def reference_definitions(text: str) -> dict[str, str]:
    """A page's reference-link definitions (`[label]: url`), label lower-cased → url."""
    return {k.lower(): v for k, v in _REF_DEFINITION.findall(text)}


def render_prose(text: str, rel: str = "", site: Site | None = None, refs: Mapping[str, str] | None = None) -> str:
    """Markdown prose (no code blocks) as a documentation site shows it: comments and template tags
    rendered to their text or dropped, tables as rows, links resolved against the page, inline HTML
    as text, emphasis markers removed. Inline code spans are left exactly as they are. `refs`: the
    page's reference-link definitions (`reference_definitions`), which may sit in another block
    than the links (the foot of the page, after a code block); this block's own are read too."""
    site = site or Site()
    spans: list[str] = []

    def stash(code: str) -> str:
        spans.append(code)
        return f"\ue000{len(spans) - 1}\ue001"

    text = INLINE_CODE.sub(lambda m: stash(m.group(0)), text)
    for _ in range(3):  # blockquote markers, nested ones too: the quoted text reads as prose
        text = re.sub(r"^([ \t]{0,3})>[ \t]?", r"\1", text, flags=re.M)
    text = _COMMENTS.sub("", text)
    text = _LINK_TAG.sub(lambda m: _site_path(m.group(1)), text)
    text = _HUGO_REF.sub(lambda m: m.group(1).strip(), text)
    text = _URL_FILTER.sub(lambda m: m.group(1), text)
    text = _CHANNEL_TAG.sub(lambda m: "#" + m.group(1), text)
    text = _TEMPLATE.sub("", text)
    text = _HTML_CODE.sub(lambda m: stash(f"`{m.group(1)}`"), text)
    text = _HTML_LINK.sub(lambda m: f"[{' '.join(_HTML_TAG.sub('', m.group(2)).split())}]({m.group(1)})", text)
    text = re.sub(r"<br\s*/?>", " ", text, flags=re.I)
    text = _HTML_TAG.sub("", text)
    text = render_tables(text)
    refs = {**(refs or {}), **reference_definitions(text)}
    text = _REF_DEFINITION.sub("", text)

    def ref_link(m: re.Match) -> str:
        label = " ".join((m.group(2) or m.group(1)).split()).lower()
        return f"[{m.group(1)}]({refs[label]})" if label in refs else m.group(1)

    text = _REF_LINK.sub(ref_link, text)

    def shortcut(m: re.Match) -> str:
        if (label := " ".join(m.group(2).split()).lower()) not in refs:
            return m.group(0)  # brackets as written: "[kernel variant args]", "--[no-]edit"
        return "" if m.group(1) else f"[{m.group(2)}]({refs[label]})"  # an image is dropped, as `_IMAGE` drops it

    text = _REF_SHORTCUT.sub(shortcut, text)
    text = _IMAGE.sub("", text)

    def link(match: re.Match) -> str:
        words = " ".join(match.group(1).split())
        target = site.resolve(match.group(2), rel)
        return f"[{words}]({target})" if target and words else words

    text = _LINK.sub(link, text)
    text = _strip_emphasis(text)
    text = re.sub(r"[ \t]+$", "", text, flags=re.M)
    return re.sub(r"\ue000(\d+)\ue001", lambda m: spans[int(m.group(1))], text)


def render_markdown(text: str, rel: str = "", site: Site | None = None) -> str:
    """A documentation page's Markdown (front matter already removed) as readable Markdown:
    blocks rendered (`render_blocks`), prose rendered (`render_prose`), HTML blocks as their text,
    code blocks untouched."""
    text = render_blocks(text)
    lines = text.split("\n")
    kinds = ["prose"] * len(lines)
    for token in MarkdownIt("commonmark").parse(text):
        if token.map and token.type in ("fence", "code_block", "html_block"):
            kind = "html" if token.type == "html_block" else "code"
            for n in range(token.map[0], min(token.map[1], len(lines))):
                kinds[n] = kind
    refs = reference_definitions("\n".join(line for line, kind in zip(lines, kinds, strict=True) if kind == "prose"))
    out: list[str] = []
    start = 0
    for n in range(1, len(lines) + 1):
        if n == len(lines) or kinds[n] != kinds[start]:
            block = "\n".join(lines[start:n])
            if kinds[start] == "prose":
                out.append(render_prose(block, rel, site, refs))
            elif kinds[start] == "html":
                html = render_prose(render_html_tables(block), rel, site, refs)
                out.append("\n".join(x.strip() for x in html.split("\n") if x.strip()) + "\n")
            else:
                out.append(block)
            start = n
    return re.sub(r"\n[ \t]*(?:\n[ \t]*){2,}", "\n\n", "\n".join(out)).strip("\n")


def markdown_title(text: str) -> str:
    """The first level-1 heading outside code blocks, as plain text ("" when there is none)."""
    tokens = MarkdownIt("commonmark").parse(text)
    for i, token in enumerate(tokens):
        if token.type == "heading_open" and token.tag == "h1" and i + 1 < len(tokens):
            return " ".join(_LINK.sub(r"\1", tokens[i + 1].content).replace("`", "").split())
    return ""
