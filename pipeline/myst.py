"""MyST Markdown (Sphinx's Markdown dialect) as the plain Markdown the renderer reads: what a reader
of the rendered page sees.

- A directive is a fence whose info string is `{name}` (```` ```{note} ````, ```` ````{tab} ````,
  `:::{warning}`), with `:key: value` options (or a `---` block of them) opening its body. Each renders
  as `pipeline.rst` renders the same Sphinx directive: code directives become fenced code,
  admonitions and version notes lead their body ("Note: …", "New in version 22.3: …"), object
  descriptions lead theirs with the signature as code, a titled container (`{tab-item} Windows`,
  `{dropdown} Title`) leads its body with its title (a `{tab}` opens with its title in bold), `eval-rst`
  bodies are reStructuredText,
  `toctree`, `image` and the like are dropped, and every other directive keeps its body (a body that
  opens with a console prompt, such as `$ pip install …`, is a console session: code).
- A role (`` {ref}`Title <label>` ``, `` {pep}`517` ``, `` {file}`pip.conf` ``) renders as the rst role does.
- Targets (`(label)=`) and comments (`% …`) are dropped.
Fenced code that is not a directive, and inline code, are left as they are.
"""

from __future__ import annotations

import re

from pipeline import rst

_OPEN = re.compile(r"^[ \t]*(?P<fence>`{3,}|~{3,}|:{3,})\{(?P<name>[\w.:+-]+)\}[ \t]*(?P<args>.*?)[ \t]*$")
_FENCE = re.compile(r"^[ \t]*(?P<fence>`{3,}|~{3,})")
_OPTION = re.compile(r"^:[\w-]+:(?:[ \t].*)?$")
_ROLE = re.compile(r"\{(?P<role>[\w.:+-]+)\}`(?P<text>[^`\n]+)`")
_TARGET = re.compile(r"^[ \t]*\([\w.:+-]+\)=[ \t]*$")
_COMMENT = re.compile(r"^[ \t]*%")
_CONSOLE = re.compile(r"^(?:\$|>>>|\.\.\.|C:\\>|PS>)[ \t]")
_INLINE_CODE = re.compile(r"(`+)(?!\{)[^`\n]+?\1")


def is_myst(text: str) -> bool:
    """Whether a Markdown page uses MyST's syntax: a directive fence or a role."""
    return bool(re.search(r"^[ \t]*(?:`{3,}|~{3,}|:{3,})\{[\w.:+-]+\}", text, re.MULTILINE) or _ROLE.search(text))


def myst_to_markdown(text: str) -> str:
    """A MyST page as plain Markdown (see the module's docstring); a page without MyST syntax is
    returned as it is."""
    if not is_myst(text):
        return text
    return "\n".join(_blocks(text.split("\n")))


def _blocks(lines: list[str]) -> list[str]:
    out: list[str] = []
    i, fence = 0, ""
    while i < len(lines):
        line = lines[i]
        if fence:  # inside fenced code that is not a directive
            out.append(line)
            if (m := _FENCE.match(line)) and m.group("fence")[0] == fence[0] and len(m.group("fence")) >= len(fence) \
                    and not line.strip()[len(m.group("fence")):].strip():
                fence = ""
            i += 1
            continue
        if opening := _OPEN.match(line):
            body, i = _directive_body(lines, i + 1, opening.group("fence"))
            out += _directive(opening.group("name"), opening.group("args"), body)
            continue
        if m := _FENCE.match(line):
            fence = m.group("fence")
            out.append(line)
        elif _TARGET.match(line) or _COMMENT.match(line):
            pass
        else:
            out.append(_roles(line))
        i += 1
    return out


def _directive_body(lines: list[str], i: int, fence: str) -> tuple[list[str], int]:
    """The lines of a directive's body up to its closing fence (the same character, at least as
    long, alone on its line), and the index after that fence. An unclosed one runs to the end."""
    start = i
    while i < len(lines):
        stripped = lines[i].strip()
        if stripped and set(stripped) == {fence[0]} and len(stripped) >= len(fence):
            return lines[start:i], i + 1
        i += 1
    return lines[start:], i


def _directive(name: str, args: str, body: list[str]) -> list[str]:
    """One directive as its reader sees it (the module's docstring)."""
    base = name.rsplit(":", 1)[-1]
    if body and body[0].strip() == "---":  # options as a YAML block: none changes what a reader sees
        end = next((n for n, x in enumerate(body[1:], start=1) if x.strip() == "---"), 0)
        body = body[end + 1:] if end else body
    while body and _OPTION.match(body[0].strip()):  # … nor as `:key: value` lines
        body = body[1:]
    if base in rst.DROPPED:
        return []
    if base in rst.CODE:
        return rst.fenced(body, args.split()[0] if args else "")
    if base == "eval-rst":
        return ["", *rst.rst_to_markdown("\n".join(body)).split("\n"), ""]
    if base in rst.ADMONITIONS and base != "admonition" and args:
        body = [args, *body]  # ```{note} Text: the body starts on the directive's line
    if _CONSOLE.match(next((x.strip() for x in body if x.strip()), "")):
        return rst.fenced(body, "console")  # `{pip-cli}` and the like: a console session (output too) is code
    inner = _blocks(body)
    if base in rst.ADMONITIONS:
        title = args if base == "admonition" and args else ("See also" if base == "seealso" else base.capitalize())
        return rst.lead(f"{_roles(title)}: ", inner)
    if base in rst.VERSIONS:
        version, _, rest = args.partition(" ")
        inner = [_roles(rest), *inner] if rest.strip() else inner
        return rst.lead(f"{rst.VERSIONS[base]} {version}: ", inner)
    if base in rst.DESCRIPTIONS:
        signatures = [s.strip() for s in args.split("\n") if s.strip()]
        return rst.lead(", ".join(f"`{s}`" for s in signatures) + ": ", inner) if signatures else inner
    if base == "tab" and args:
        return ["", f"**{_roles(args)}**", "", *inner, ""]
    if base in rst.TITLED and args.strip():  # `{tab-item} Windows`, `{dropdown} Title`: the title leads
        return rst.lead(rst.term_label(_roles(args.strip())), inner) if any(x.strip() for x in inner) else []
    return ["", *inner, ""] if any(x.strip() for x in inner) else []


def _roles(line: str) -> str:
    """The roles of one line of prose rendered (`pipeline.rst.render_role`); inline code kept."""
    if "{" not in line:
        return line

    def render(prose: str) -> str:
        return _ROLE.sub(lambda m: rst.render_role(m.group("role"), m.group("text")), prose)

    parts, pos = [], 0
    for code in _INLINE_CODE.finditer(line):
        if code.start() > 0 and line[code.start() - 1] == "}":
            continue  # a role's own backticks
        parts += [render(line[pos:code.start()]), code.group(0)]
        pos = code.end()
    return "".join([*parts, render(line[pos:])])
