"""reStructuredText pages, Sphinx's dialect included, as the Markdown-like text the chunker reads:
what a reader of the rendered page sees.

- Section titles (underlined, optionally overlined) become `#` headings by order of first use.
- Directives: code (`code-block`, `::` literal blocks) becomes fenced code; admonitions and
  version notes lead their body ("Note: …", "New in version 3.1: …"); object descriptions
  (`.. option:: -S <path>`, `.. function:: f(x)`) lead theirs with the signature as code;
  a titled container (`tab`, `tab-item`, `topic`, `sidebar`, `dropdown`, `card`) leads its body with
  its title ("Windows: …", as an admonition does); every other directive (`only`, `container`, …)
  keeps its body; a `csv-table` becomes rows as tables do; a footnote's or citation's text is kept
  where it is defined; `toctree`, `contents`, `index`, `image`, `raw`, comments and link targets are
  dropped. `include` reads the file through the caller's `include` function (`pipeline.ingest`
  keeps it inside the source's folder).
- Definition lists read "term: definition"; simple and grid tables become one list item per row
  ("Header: cell — Header: cell"), as Markdown tables do (`pipeline.markup`).
- Inline markup: ``` ``literal`` ``` and code roles (`:command:`, `:func:`, `:variable:`, …) become
  `code`; prose roles (`:ref:`, `:doc:`, `:term:`, …) their text; `` `text <url>`_ `` a Markdown link;
  a substitution its `replace::` text where the page defines one, else its words; footnote references
  nothing.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from pipeline.text import ENDS_SENTENCE

_UNDERLINE = re.compile(r"^([=\-~^\"'`#*+<>:._])\1{2,}\s*$")
_DIRECTIVE = re.compile(r"^(?P<indent>[ \t]*)\.\.[ \t]+(?:\|[^|]+\|[ \t]+)?(?P<name>[\w.+-]+(?::[\w.+-]+)*)::(?:[ \t]+(?P<args>.*?))?[ \t]*$")
_EXPLICIT = re.compile(r"^[ \t]*\.\.(?:[ \t]|$)")  # a comment or link target: every other `..` line
_FIELD = re.compile(r"^:[\w-]+:(?:[ \t].*)?$")  # a directive option or page metadata (`:orphan:`)
_BULLET = re.compile(r"^[ \t]*(?:[-*+•]|#\.|\d+[.)]|\(?[a-zA-Z0-9]\)|[a-zA-Z][.)])[ \t]+")
_SIMPLE_BORDER = re.compile(r"^[ \t]*=+(?:[ \t]+=+)+[ \t]*$")
_GRID_BORDER = re.compile(r"^[ \t]*\+(?:[-=]+\+)+[ \t]*$")

CODE = {"code-block", "code", "sourcecode", "parsed-literal", "doctest", "productionlist", "highlight-block", "code-tab"}
# containers whose argument is a title the reader sees: a tab's platform, a topic's or a dropdown's title
TITLED = {"tab", "tab-item", "group-tab", "topic", "sidebar", "dropdown", "card", "grid-item-card"}
ADMONITIONS = {"note", "warning", "tip", "important", "caution", "attention", "hint", "danger", "error",
               "seealso", "todo", "admonition"}
VERSIONS = {"versionadded": "New in version", "versionchanged": "Changed in version",
            "deprecated": "Deprecated since version", "versionremoved": "Removed in version"}
DROPPED = {"contents", "toctree", "index", "image", "figure", "raw", "literalinclude", "highlight",
           "default-role", "default-domain", "module", "currentmodule", "program", "cmake-module", "meta",
           "sectionauthor", "moduleauthor", "codeauthor", "tabularcolumns", "autosummary", "automodule",
           "autoclass", "autofunction", "automethod", "autodata", "graphviz", "title", "role", "spelling"}
DESCRIPTIONS = {"option", "cmdoption", "envvar", "function", "class", "method", "attribute", "data",
                "exception", "decorator", "describe", "object", "command", "variable", "genex", "signature",
                "confval", "setting", "property", "macro", "type", "member", "staticmethod", "classmethod",
                "coroutinefunction", "program-option", "directive", "event"}
PROSE_ROLES = {"ref", "doc", "term", "any", "manual", "numref", "abbr", "download", "emphasis", "strong",
               "sup", "sub", "subscript", "superscript", "title-reference", "t", "math", "guilabel",
               "menuselection", "dfn", "guide", "token"}
_ROLE = re.compile(r":(?P<role>[\w-]+(?::[\w-]+)*):`(?P<text>[^`]+)`")
_LITERAL = re.compile(r"``(?P<code>.+?)``(?!`)")
_HYPERLINK = re.compile(r"`(?P<text>[^`<]*?)\s*<(?P<url>[^`>]+)>`__?")
_NAMED_REF = re.compile(r"`(?P<text>[^`<]+)`__?(?!\w)")
_FOOTNOTE = re.compile(r"^(?P<indent>[ \t]*)\.\.[ \t]+\[(?:#[\w-]*|\*|\d+|[A-Za-z][\w.-]*)\][ \t]+(?P<text>\S.*)$")
_REPLACE = re.compile(r"^[ \t]*\.\.[ \t]+\|(?P<name>[^|]+)\|[ \t]+replace::[ \t]+(?P<text>\S.*?)[ \t]*$", re.MULTILINE)
_FOOTNOTE_REF = re.compile(r"[ \t]*\[(?:#[\w-]*|\*|\d+|[A-Za-z][\w.-]*)\]_(?!\w)")
_SUBSTITUTION = re.compile(r"(?<![\w|])\|(?P<name>[^|\s][^|]*?)\|(?:__?)?(?![\w|])")

Include = Callable[[str], "str | None"]


def rst_to_markdown(text: str, include: Include | None = None) -> str:
    """A reStructuredText page as Markdown-like text (see the module's docstring). `include(name)`
    returns the text of a file named by an `.. include::` directive, or None (then it is dropped)."""
    text = _titled_references(text.replace("\t", "    "))
    replacements = {m.group("name"): m.group("text") for m in _REPLACE.finditer(text)}
    if replacements:  # `|name|` → its `.. |name| replace:: text`, outside the definitions themselves
        text = "\n".join(line if _REPLACE.match(line) else _SUBSTITUTION.sub(
            lambda m: replacements.get(m.group("name"), m.group(0)), line) for line in text.split("\n"))
    lines = _blocks(text.split("\n"), include, depth=0)
    return "\n".join(_headings(lines))


_LABEL = re.compile(r"^\.\.[ \t]+_`?(?P<label>[^:`]+)`?:[ \t]*$")


def _titled_references(text: str) -> str:
    """`:ref:`label`` to a section shows the section's title, as Sphinx shows it: the label is
    defined (`.. _label:`) right above the title."""
    lines = text.split("\n")
    titles: dict[str, str] = {}
    for n, line in enumerate(lines):
        if label := _LABEL.match(line):
            rest = [x for x in lines[n + 1:n + 8] if x.strip() and not _LABEL.match(x)]
            if len(rest) >= 2 and _UNDERLINE.match(rest[0]):
                rest = rest[1:]  # an overline
            if len(rest) >= 2 and not _UNDERLINE.match(rest[0]) and _UNDERLINE.match(rest[1]):
                titles[label.group("label").strip().lower()] = rest[0].strip()
    if not titles:
        return text
    return re.sub(r":ref:`(?P<label>[^`<>]+)`",
                  lambda m: f":ref:`{titles[key]} <{m.group('label')}>`" if (key := m.group("label").strip().lower()) in titles else m.group(0),
                  text)


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def _dedent(lines: list[str]) -> list[str]:
    width = min((_indent(x) for x in lines if x.strip()), default=0)
    return [x[width:] if x.strip() else "" for x in lines]


def _body(lines: list[str], i: int, indent: int) -> tuple[list[str], int]:
    """The block indented past `indent` starting at line `i` (blank lines inside it kept): its lines
    dedented, and the index after it."""
    end = i
    while end < len(lines) and (not lines[end].strip() or _indent(lines[end]) > indent):
        end += 1
    while end > i and not lines[end - 1].strip():
        end -= 1
    return _dedent(lines[i:end]), end


def fenced(body: list[str], language: str = "") -> list[str]:
    while body and not body[0].strip():
        body = body[1:]
    return ["", f"```{language}", *body, "```", ""] if body else []


_VERSION_NOTE = re.compile(rf"^({'|'.join(VERSIONS.values())}) (\S+)\.$")


def term_label(term: str) -> str:
    """A definition's term as the label that leads its text: "`--user`: " before "Install to the
    user's site.", but a term that is a sentence of its own ("Download a package supporting several
    ABIs." over "This is useful when …") is followed by its text as the next sentence, never by ".:"."""
    prose = re.sub(r"`[^`]*`", "", term)  # "`--skip=a,b,...`" is code, not a sentence's end
    # (a term that already ends on its colon gets none more; an ellipsis, as in "spec…", ends no sentence)
    return f"{term} " if re.search(r"[.!?:][\"'”’)\]]*$", prose.rstrip()) else f"{term}: "


def lead(label: str, rendered: list[str]) -> list[str]:
    """`label` before the first prose line of `rendered`, or as its own paragraph before a list,
    table or code block (as MkDocs admonitions are rendered in `pipeline.markup`). A version note
    with no text of its own that opens `rendered` goes into a term's label: "`23` (new in version
    3.20): C++23", not a sentence apart from what it dates."""
    rendered = list(rendered)
    for n, line in enumerate(rendered):
        if line.strip() and label.endswith(": ") and (note := _VERSION_NOTE.match(line.strip())):
            label = f"{label[:-2]} ({note.group(1)[0].lower()}{note.group(1)[1:]} {note.group(2)}): "
            rendered[n] = ""
            continue
        if line.strip():
            if line.startswith("```") or _BULLET.match(line) or line.startswith("#"):
                return ["", label.rstrip(), "", *rendered[n:]]
            return ["", label + line.lstrip(), *rendered[n + 1:], ""]
    label = label.rstrip(" :")
    return ["", label if ENDS_SENTENCE.search(label) else label + ".", ""] if label.strip() else []


def _directive(name: str, args: str, body: list[str], include: Include | None, depth: int) -> list[str]:
    """One directive (`name`, its arguments, its dedented body) as its reader sees it: the module's
    docstring lists how each kind renders. `name` may carry a domain ("py:function")."""
    base = name.rsplit(":", 1)[-1].lower()  # directive names are case-insensitive: ".. WARNING::" is ".. warning::"
    options: dict[str, str] = {}
    while body and _FIELD.match(body[0].strip()):  # the directive's options (`:caption: …`)
        key, _, value = body[0].strip()[1:].partition(":")
        options[key] = value.strip()
        body = body[1:]
    if base in DROPPED:
        return []
    if base == "include":
        found = include(args.strip()) if include and depth < 3 and args.strip() else None
        return _blocks(found.replace("\t", "    ").split("\n"), include, depth + 1) if found else []
    if base in CODE:
        body = [_inline(x) for x in body] if base == "parsed-literal" else body  # it holds inline markup
        return fenced(body, args.split()[0] if args and base in ("code-block", "sourcecode", "code", "code-tab") else "")
    if base == "list-table":
        return _list_table(body, int(options.get("header-rows", "0") or 0))
    if base == "csv-table":
        return _csv_table(body, options.get("header", ""))
    if base in ADMONITIONS and base != "admonition" and args:
        body = [*args.split("\n"), *body]  # `.. note:: Text` starts its body on the directive's line
    inner = _blocks(body, include, depth)
    if base in ADMONITIONS:
        title = args if base == "admonition" and args else ("See also" if base == "seealso" else base.capitalize())
        return lead(f"{_inline(title)}: ", inner)
    if base in VERSIONS:
        version, _, rest = args.partition(" ")
        inner = [rest, *inner] if rest.strip() else inner
        return lead(f"{VERSIONS[base]} {version}: ", inner)
    if base in DESCRIPTIONS or ":" in name:
        signatures = [s.strip() for s in args.split("\n") if s.strip()]
        if not signatures:
            return inner
        return lead(", ".join(f"`{s}`" for s in signatures) + ": ", inner)
    if base in TITLED and args.strip():  # (a tab whose body renders to nothing leaves no title alone)
        return lead(term_label(_inline(args.strip())), inner) if any(x.strip() for x in inner) else []
    if base == "rubric" and args:
        return ["", _inline(args), "", *inner]
    return ["", *inner, ""] if any(x.strip() for x in inner) else []


def _blocks(lines: list[str], include: Include | None, depth: int) -> list[str]:
    """Render block-level markup of `lines` (a page or a directive's dedented body)."""
    out: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        if not line.strip():
            out.append("")
            i += 1
            continue
        indent = _indent(line)
        if match := _DIRECTIVE.match(line):
            args = [match.group("args") or ""]
            i += 1
            while i < len(lines) and lines[i].strip() and _indent(lines[i]) > indent and not _FIELD.match(lines[i].strip()) \
                    and match.group("name").rsplit(":", 1)[-1] in DESCRIPTIONS:
                args.append(lines[i].strip())  # a description's further signatures
                i += 1
            body, i = _body(lines, i, indent)
            out += _directive(match.group("name"), "\n".join(args).strip(), body, include, depth)
            continue
        if footnote := _FOOTNOTE.match(line):  # a footnote's or citation's text, kept where it is defined
            body, i = _body(lines, i + 1, indent)
            out += ["", *_blocks([footnote.group("text"), *body], include, depth), ""]
            continue
        if _EXPLICIT.match(line):  # comment or target, with its indented continuation
            _, i = _body(lines, i + 1, indent)
            continue
        if indent == 0 and _FIELD.match(line.strip()) and not out:
            i += 1  # page metadata (`:orphan:`) before any text
            continue
        if _SIMPLE_BORDER.match(line) or _GRID_BORDER.match(line):
            end = i + 1
            while end < len(lines) and lines[end].strip():
                end += 1
            rows = _simple_table(lines[i:end]) if _SIMPLE_BORDER.match(line) else _grid_table(lines[i:end])
            if rows is not None:
                out += ["", *rows]
                i = end
                continue
        if bullet := _BULLET.match(line):  # a list item: its text and everything indented under it
            width = bullet.end()
            end = i + 1
            while end < len(lines) and (not lines[end].strip() or _indent(lines[end]) >= width):
                end += 1
            while end > i + 1 and not lines[end - 1].strip():
                end -= 1
            body = [line[width:], *(x[width:] if x.strip() else "" for x in lines[i + 1:end])]
            marker = "1. " if line.strip().startswith("#.") else line[indent:width].rstrip() + " "
            rendered = _blocks(body, include, depth)
            while rendered and not rendered[0].strip():
                rendered = rendered[1:]
            if rendered:
                out += [" " * indent + marker + rendered[0].lstrip(),
                        *(" " * (indent + len(marker)) + x if x.strip() else "" for x in rendered[1:])]
            i = end
            continue
        if indent > 0 and (not out or not out[-1].strip()):
            body, i = _body(lines, i, indent - 1)  # a block quote: its text, unindented
            out += _blocks(body, include, depth)
            continue
        # a paragraph: its lines up to a blank line or a change of indentation
        end = i + 1
        while end < len(lines) and lines[end].strip() and _indent(lines[end]) == indent \
                and not _DIRECTIVE.match(lines[end]) and not _EXPLICIT.match(lines[end]):
            end += 1
        paragraph = lines[i:end]
        if end < len(lines) and lines[end].strip() and _indent(lines[end]) > indent and not _BULLET.match(line) \
                and len(paragraph) == 1 and not paragraph[0].rstrip().endswith("::"):
            body, end = _body(lines, end, indent)  # a definition list item: "term: definition"
            out += lead(term_label(_inline(line.strip())), _blocks(body, include, depth))
            i = end
            continue
        literal = paragraph[-1].rstrip().endswith("::")
        if literal:
            last = paragraph[-1].rstrip()[:-2]
            last = last.rstrip() if last.endswith((" ", "\t")) or not last.strip() else last + ":"
            paragraph = [*paragraph[:-1], last] if last.strip() else paragraph[:-1]
        out += [" " * indent + x for x in _inline("\n".join(x.strip() for x in paragraph)).split("\n") if x.strip()]
        i = end
        if literal:
            start = i
            while i < len(lines) and not lines[i].strip():
                i += 1
            if i < len(lines) and _indent(lines[i]) > indent:
                body, i = _body(lines, i, indent)
                out += fenced(body)
            else:
                i = start
    return out


def _headings(lines: list[str]) -> list[str]:
    """Underlined (and overlined) section titles as `#` headings, outside fenced code."""
    out: list[str] = []
    levels: list[str] = []
    fenced = False
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("```"):
            fenced = not fenced
        nxt = lines[i + 1] if i + 1 < len(lines) else ""
        if not fenced and line.strip() and not _UNDERLINE.match(line) and _UNDERLINE.match(nxt) \
                and len(nxt.strip()) >= len(line.strip()):
            char = nxt.strip()[0]
            if out and _UNDERLINE.match(out[-1]) and out[-1].strip()[0] == char:
                out.pop()  # overline
            if char not in levels:
                levels.append(char)
            out.append("#" * min(levels.index(char) + 1, 6) + " " + line.strip())
            i += 2
            continue
        out.append(line)
        i += 1
    return out


def _simple_table(block: list[str]) -> list[str] | None:
    """A simple table (`=====  =====` borders) as list items; None when `block` is not one."""
    border = block[0]
    spans = [(m.start(), m.end()) for m in re.finditer(r"=+", border)]
    borders = [n for n, x in enumerate(block) if _SIMPLE_BORDER.match(x)]
    if len(borders) < 2:
        return None

    def cells(line: str) -> list[str]:
        edges = [s for s, _ in spans[1:]] + [len(line) + 1]
        return [line[start:edge].strip() for (start, _), edge in zip(spans, edges, strict=True)]

    header = [" ".join(c) for c in zip(*(cells(x) for x in block[borders[0] + 1:borders[1]]), strict=True)] \
        if len(borders) >= 3 else [""] * len(spans)
    body_start = borders[1] + 1 if len(borders) >= 3 else borders[0] + 1
    rows: list[list[str]] = []
    for line in block[body_start:]:
        if _SIMPLE_BORDER.match(line):
            continue
        row = cells(line)
        if rows and not row[0]:  # a continuation of the row above
            rows[-1] = [f"{a} {b}".strip() for a, b in zip(rows[-1], row, strict=True)]
        else:
            rows.append(row)
    return _rows(header, rows)


def _grid_table(block: list[str]) -> list[str] | None:
    """A grid table (`+---+---+` borders, `+===+` under the header) as list items; None when it is not one."""
    border = block[0].strip()
    edges = [m.start() for m in re.finditer(r"\+", border)]
    header: list[str] = []
    rows: list[list[str]] = []
    current: list[list[str]] = [[] for _ in edges[1:]]
    for line in (x.strip() for x in block[1:]):
        if _GRID_BORDER.match(line):
            row = [" ".join(c).strip() for c in current]
            if "=" in line and not header:
                header = row
            elif any(row):
                rows.append(row)
            current = [[] for _ in edges[1:]]
        elif line.startswith("|"):
            for n, (a, b) in enumerate(zip(edges, edges[1:], strict=False)):
                current[n].append(line[a + 1:b].strip(" |"))
        else:
            return None
    return _rows(header or [""] * (len(edges) - 1), rows)


def _list_table(body: list[str], header_rows: int) -> list[str]:
    """A `list-table` directive's body (a list of rows, each a list of cells) as list items."""
    rows: list[list[str]] = []
    for line in body:
        if row := re.match(r"^[*-][ \t]+[*-][ \t]+(.*)$", line):
            rows.append([row.group(1).strip()])
        elif (cell := re.match(r"^[ \t]+[*-][ \t]+(.*)$", line)) and rows:
            rows[-1].append(cell.group(1).strip())
        elif line.strip() and rows:
            rows[-1][-1] = f"{rows[-1][-1]} {line.strip()}".strip()
    header = rows[0] if header_rows and rows else [""] * max((len(r) for r in rows), default=0)
    return _rows(header, rows[header_rows:] if header_rows else rows)


def _csv_table(body: list[str], header: str) -> list[str]:
    """A `csv-table` directive's body (and its `:header:` option) as list items; a table read from
    a file (`:file:`, `:url:`) has no body here and gives nothing."""
    import csv

    def parse(lines: list[str]) -> list[list[str]]:
        return [[_inline(cell.strip()) for cell in row] for row in csv.reader(lines, skipinitialspace=True) if row]

    return _rows(parse([header])[0] if header.strip() else [], parse([x for x in body if x.strip()]))


def _rows(header: list[str], rows: list[list[str]]) -> list[str]:
    out = []
    for row in rows:
        pairs = [f"{_inline(h)}: {_inline(v)}" if h else _inline(v) for h, v in zip(header, row, strict=False) if v]
        if pairs:
            out += [f"- {' — '.join(pairs)}", ""]
    return out


def render_role(role: str, text: str) -> str:
    """A role's text as its reader sees it: code roles as `code`, prose roles as their words,
    `:pep:`8`` as "PEP 8"; "title <target>" shows the title. `role` may carry a domain ("py:func")."""
    role = role.rsplit(":", 1)[-1]
    titled = re.match(r"(?s)(?P<title>.*?)\s*<(?P<target>[^<>]+)>$", text)
    shown = titled.group("title") if titled and titled.group("title") else (titled.group("target") if titled else text)
    if role in ("pep", "rfc"):
        return f"{role.upper()} {shown}"
    if role in PROSE_ROLES:
        return shown.replace("&", "") if role == "guilabel" else shown
    shown = shown.lstrip("!")
    if re.fullmatch(r"~[A-Za-z_][\w.]*(?:\(\))?", shown):  # "~pkg.mod.run" shows "run"; "~/.cache" is a path
        shown = shown[1:].rsplit(".", 1)[-1]
    return f"`{shown}`"


def _inline(text: str) -> str:
    """Inline markup of one line of prose, as Markdown."""
    spans: list[str] = []

    def stash(code: str) -> str:
        spans.append(code)
        return f"\ue000{len(spans) - 1}\ue001"

    text = _LITERAL.sub(lambda m: stash(f"`{m.group('code')}`"), text)
    text = _ROLE.sub(lambda m: stash(render_role(m.group("role"), m.group("text"))), text)
    text = _HYPERLINK.sub(lambda m: f"[{m.group('text') or m.group('url')}]({m.group('url')})", text)
    text = _NAMED_REF.sub(lambda m: m.group("text"), text)
    text = _FOOTNOTE_REF.sub("", text)
    text = _SUBSTITUTION.sub(lambda m: m.group("name"), text)
    text = re.sub(r"\\ ", "", text)
    text = re.sub(r"\\(.)", r"\1", text)
    return re.sub(r"\ue000(\d+)\ue001", lambda m: spans[int(m.group(1))], text)
