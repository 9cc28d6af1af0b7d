"""HTML pages as their readers see them: the page's main text as Markdown-like text, the way
`pipeline.rst` and `pipeline.myst` render theirs.

The text is the page's `<main>`, else every top-level `<article>` (a list page has one per entry).
Navigation (menus, sidebars, tables of contents, "Prev / Up / Next" bars, Sphinx's ¶ links) is
dropped; headings become `#` lines, `<pre>` blocks fenced code, `<code>`/`<tt>`/`<kbd>` code spans,
lists list items, a definition list's terms lead their descriptions ("`--leak-check=full`: …", as an
rst option does), table rows "Header: cell — Header: cell" items, and an admonition's title leads its
text ("Note: …"). Whitespace inside prose is collapsed; inside `<pre>` it is kept. A plain-text file laid
out line by line (DocBook's "literallayout": a README) keeps its lines, and its underlined headings
become headings (`underlined_headings`, which plain-text files go through too) and its "-- " items
list items (`dashed_items`). A page nested deeper than Python can recurse (hundreds of levels)
is read as its plain text, one line per block. Pure: no I/O.
"""

from __future__ import annotations

import re

from pipeline.rst import fenced, lead, term_label

_DROPPED = ("script", "style", "nav", "header", "footer", "aside", "noscript", "form", "svg", "button",
            "template", "iframe", "head")
# class names of navigation in the common generators (DocBook, Sphinx, MkDocs, Docusaurus, Javadoc)
_NAVIGATION = {"nav", "navbar", "navheader", "navfooter", "navigation", "toc", "toctree-wrapper", "sidebar",
               "sphinxsidebar", "sphinxsidebarwrapper", "related", "breadcrumb", "breadcrumbs", "headerlink",
               "skip-link", "md-header", "md-footer", "md-sidebar", "md-nav", "theme-doc-toc-desktop",
               "table-of-contents", "pagination-nav", "topnav", "subnav"}
_ROLES = {"navigation", "banner", "contentinfo", "search", "menu", "menubar"}
_ADMONITIONS = {"note", "tip", "warning", "important", "caution", "danger", "attention", "hint", "seealso", "admonition"}
_CODE = {"code", "tt", "kbd", "samp"}
_HEADING = re.compile(r"^h([1-6])$")
_BLOCKS = {"p", "div", "section", "article", "main", "body", "ul", "ol", "li", "dl", "dt", "dd", "pre", "table",
           "blockquote", "figure", "figcaption", "hr", "details", "summary", "center", "fieldset",
           "h1", "h2", "h3", "h4", "h5", "h6"}


def html_to_markdown(html: str) -> tuple[str, str]:
    """The main text of an HTML page as Markdown-like text, and its title ("" if it has none)."""
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(html, "lxml")
    title = _one_line(soup.title.get_text(" ")) if soup.title else ""
    for tag in soup(_DROPPED):
        tag.decompose()
    for tag in soup.find_all(_is_navigation):
        tag.decompose()
    roots = _main_parts(soup)
    lines: list[str] = []
    for root in roots:
        try:
            lines += _blocks(root) + [""]
        except RecursionError:  # nested deeper than Python recurses (hundreds of levels): its text, block by block
            lines += [line for t in root.get_text("\n").split("\n") if t.strip() for line in (_one_line(t), "")]
    if not title:
        h1 = next((h for root in roots if (h := root.find("h1"))), None)
        title = _one_line(h1.get_text(" ")) if h1 else ""
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip(), title


def _main_parts(soup) -> list:
    """Where a page's text is: its `<main>`; else its articles, every one in page order (a list page,
    a blog or a changelog, has one per entry); else `role="main"`, Sphinx's `div.body`, the body."""
    if main := soup.find("main"):
        return [main]
    if articles := [a for a in soup.find_all("article") if not a.find_parent("article")]:
        return articles
    return [soup.find(attrs={"role": "main"}) or soup.find("div", class_="body") or soup.body or soup]


def _is_navigation(tag) -> bool:
    if tag.name is None or tag.attrs is None:
        return False
    classes = set(tag.get("class") or ())
    return bool(classes & _NAVIGATION) or tag.get("role") in _ROLES or (
        tag.name == "table" and "navigation" in str(tag.get("summary", "")).lower())


def _one_line(text: str) -> str:
    """`text` on one line: runs of whitespace (no-break spaces too) as one space."""
    return " ".join(text.replace("\xa0", " ").split())


def _inline(el) -> str:
    """An element's text as one line: code as code spans, everything else as its words."""
    return _inline_nodes(el.children)


def _inline_nodes(nodes) -> str:
    from bs4 import Comment, NavigableString

    parts: list[str] = []
    for child in nodes:
        if isinstance(child, Comment):
            continue
        if isinstance(child, NavigableString):
            parts.append(str(child).replace("\xa0", " "))
        elif child.name == "br":
            parts.append(" ")
        elif child.name in _CODE or (child.name == "span" and "command" in (child.get("class") or ())):
            code = _one_line(child.get_text(""))
            if code:
                parts.append(f"``{code}``" if "`" in code else f"`{code}`")
        elif child.name == "img":
            parts.append(child.get("alt") or "")
        else:
            parts.append(_inline(child))
    return re.sub(r"`\s*`", "", _one_line("".join(parts))) if parts else ""


def _blocks(el) -> list[str]:
    """The block-level content of `el` as lines: runs of inline content are paragraphs."""
    out: list[str] = []
    run: list = []

    def flush() -> None:
        if run:
            if text := _inline_nodes(run):
                out.extend(["", text, ""])
            run.clear()

    for child in el.children:
        name = getattr(child, "name", None)
        if name is None or name not in _BLOCKS:
            run.append(child)
            continue
        flush()
        out.extend(_block(child))
    flush()
    return out


def _block(el) -> list[str]:
    name = el.name
    if heading := _HEADING.match(name):
        text = _inline(el)
        return ["", "#" * int(heading.group(1)) + " " + text, ""] if text else []
    if name == "pre":
        return fenced(el.get_text("").replace("\xa0", " ").strip("\n").split("\n"))
    if name in ("ul", "ol"):
        return [line for item in el.find_all("li", recursive=False) for line in _item(item)]
    if name == "dl":
        return _definitions(el)
    if name == "table":
        return _table(el)
    if name == "hr":
        return []
    classes = set(el.get("class") or ())
    if "literallayout" in classes:  # a plain-text file (a README) laid out line by line
        return ["", *dashed_items(underlined_headings(_lines(el))).split("\n"), ""]
    if name == "div" and classes & _ADMONITIONS:
        title = el.find(class_=("title", "admonition-title"))
        label = _inline(title) if title else ""
        if title:
            title.decompose()
        label = label or next(iter(sorted(classes & _ADMONITIONS))).capitalize()
        return lead(f"{label.rstrip(':')}: ", _blocks(el))
    return _blocks(el)


def _lines(el) -> str:
    """The text of an element laid out in lines (`<br>` ends one), less the indent they all share; a
    line that opens with "#" (a shell prompt, a comment) is indented as code, never a heading."""
    from bs4 import NavigableString

    for br in el.find_all("br"):
        after = br.next_sibling
        br.replace_with("" if isinstance(after, NavigableString) and str(after).startswith("\n") else "\n")
    lines = [line.rstrip().replace("\xa0", " ") for line in el.get_text("").strip("\n").split("\n")]
    indent = min((len(x) - len(x.lstrip()) for x in lines[1:] if x.strip()), default=0)
    lines = [x[indent:] if len(x) - len(x.lstrip()) >= indent else x.lstrip() for x in lines]
    return "\n".join("    " + x if x.startswith("#") else x for x in lines)


_UNDERLINE = re.compile(r"^([=\-~^*])\1{2,}$")
_LEVELS = {"=": "#", "-": "##", "~": "###"}


def underlined_headings(text: str) -> str:
    """Plain text's underlined headings ("Requirements" over "------------") as `#` headings; a line
    of such marks on its own (a separator) is dropped."""
    lines, out = text.split("\n"), []
    i = 0
    while i < len(lines):
        line = lines[i].strip()
        below = lines[i + 1].strip() if i + 1 < len(lines) else ""
        if line and not _UNDERLINE.match(line) and len(line) <= 80 and _UNDERLINE.match(below):
            out += ["", f"{_LEVELS.get(below[0], '###')} {line}", ""]
            i += 2
            continue
        if not _UNDERLINE.match(line):
            out.append(lines[i])
        i += 1
    return re.sub(r"\n{3,}", "\n\n", "\n".join(out)).strip("\n")


_DASHED_ITEM = re.compile(r"^([ \t]*)--[ \t]+(?=\S)", re.M)


def dashed_items(text: str) -> str:
    """Plain text's list items marked with a double dash ("-- If your toolchain supports lto, …") as
    Markdown's ("- If your toolchain …"): left as they are, their sentences open with the dashes."""
    return _DASHED_ITEM.sub(r"\1- ", text)


def _item(li) -> list[str]:
    """A list item: its prose on one `- ` line, then its nested lists and code blocks."""
    lines = _blocks(li)
    if not any(x.strip() for x in lines):
        return []
    first = next(i for i, x in enumerate(lines) if x.strip())
    if lines[first].startswith(("```", "- ", "#")):  # no prose of its own: its blocks as they are
        return lines
    return ["", f"- {lines[first]}", *lines[first + 1:]]


def _definitions(dl) -> list[str]:
    """`<dt>` terms lead their `<dd>` description: "`--log-file=<filename>`: Specifies a file …"."""
    out: list[str] = []
    terms: list[str] = []
    for child in dl.find_all(["dt", "dd"], recursive=False):
        if child.name == "dt":
            if term := _inline(child):
                terms.append(term)
            continue
        label = term_label(", ".join(terms)) if terms else ""
        out.extend(lead(label, _blocks(child)) if label else _blocks(child))
        terms = []
    if terms:
        out.extend(lead(term_label(", ".join(terms)), []))  # terms with no description: each a sentence
    return out


def table_rows(fragment: str) -> list[str]:
    """The rows of the first HTML table in `fragment` (a Markdown page's `<table>` block) as
    `_table` writes an HTML page's: ["", "- Header: cell — Header: cell", "", …]."""
    from bs4 import BeautifulSoup

    table = BeautifulSoup(fragment, "lxml").find("table")
    return _table(table) if table else []


def _table(table) -> list[str]:
    """Each row as a list item "Header: cell — Header: cell" (the header row's cells label the others)."""
    rows = [tr for tr in table.find_all("tr") if tr.find_parent("table") is table]
    header: list[str] = []
    out: list[str] = []
    for tr in rows:
        cells = tr.find_all(["th", "td"], recursive=False)
        values = [_inline(c) for c in cells]
        if cells and all(c.name == "th" for c in cells) and not header:
            header = values
            continue
        out += ["", *row_item(header, values)]
    return out


def row_item(header: list[str], values: list[str]) -> list[str]:
    """A table row as a list item, each cell led by its column's header: ["- Header: cell — Header:
    cell", ""]; empty cells left out, nothing for an empty row. (Markdown tables read the same way.)"""
    pairs = [f"{h}: {v}" if h else v for h, v in zip([*header, *[""] * len(values)], values, strict=False) if v]
    return [f"- {' — '.join(pairs)}", ""] if pairs else []
