"""Names in text: the code identifiers and proper names a claim relies on, and the matching rule for them.

A *name* is what an answer can invent while still sounding grounded: a code identifier (`url_prefix`,
`request.client.host`, `TestClient()`, `SecretStr`, `--reload`, `RAVBOT_DATA_DIR`), an acronym
(`OPM`, `SF50`) or a proper name of a product, team, tool or place ("Microsoft Teams", "Fort Worth").
`names(text)` finds them; `normal(text)` is the form both sides are compared in, so that "the
`force_rollback=True` flag" contains the name "force_rollback" and "Google Meet." contains "google meet".
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from pipeline.text import COMMON_CAPITALS, FUNCTION_WORDS

# Acronyms of general technical vocabulary: no document needs to spell out "CI" or "JSON" for an
# answer to use it, and no team owns them, so they are words rather than names.
GENERIC_ACRONYMS = frozenset(
    "api url uri http https html css json xml yaml toml csv pdf sql ci cd cli gui ui ux os cpu gpu ram usb ip "
    "tcp udp dns ssh tls ssl vpn id faq todo pr qa ok utc ascii utf rest sdk ide kb mb gb tb".split()
)
_BACKTICK = re.compile(r"`([^`\n]{1,80})`")
_CALL = re.compile(r"\b([A-Za-z_][\w.]*)\(")  # foo( / a.b.foo(
_DOTTED = re.compile(r"(?<![\w.])\.?[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+(?![\w(])|(?<![\w.])\.[A-Za-z_]\w+")
_SNAKE = re.compile(r"(?<![\w.-])-{0,2}_*[A-Za-z]\w*_\w*[A-Za-z0-9](?![\w])"  # url_prefix, RAVBOT_DATA_DIR
                    r"|(?<![\w.-])_+[A-Za-z][A-Za-z0-9]+_*(?![\w])")  # _cacache, __init__
_FLAG = re.compile(r"(?<![\w-])--?[a-z][\w-]+")
# a handle or package scope (@nodejs/releasers), a path or repository (nodejs/admin, src/node_wasi.cc), a
# label or identifier of three or more hyphenated parts (request-ci-failed, backport-open-vN.x); not
# "and/or", "read/write", "up-to-date", "state-of-the-art"
_HANDLE = re.compile(r"(?<![\w@/])@[A-Za-z][\w.-]*(?:/[\w.-]*\w)?")
_PATH = re.compile(r"(?<![\w@/.-])[A-Za-z_][\w.-]*(?:/[\w.-]*\w)+/?")
_KEBAB = re.compile(r"(?<![\w@/.-])[a-z][a-z0-9]*(?:-[a-zA-Z0-9][\w.]*){2,}(?<![.])(?![\w-])")
_SLASH_WORDS = frozenset("and or input output read write yes no on off he she his her him true false client server "
                         "request response either i o pass fail open close start stop get set s "
                         # placeholders: "a username/project pair", "owner/repo"
                         "user username owner org organization repo repository project name package path file "
                         "folder dir directory version tag branch".split())
_CAMEL = re.compile(r"\b[A-Za-z]*[a-z][A-Z][A-Za-z0-9]*\b|\b[A-Z]{2,}[a-z]+[A-Za-z0-9]*\b")  # KeePassXC, SecretStr
_ACRONYM = re.compile(r"\b[A-Z][A-Z0-9&-]*[A-Z0-9]\b")  # OPM, SF50, CORS
_CAPITALISED = re.compile(r"\b[A-Z][a-z0-9]+(?:[ -](?:of (?:the )?|the |and |for )?[A-Z][A-Za-z0-9]+)*\b")
_NORMAL_DROP = re.compile(r"[^a-z0-9_.]+")
_LOOSE_DOT = re.compile(r"\.(?![a-z0-9_])|(?<![a-z0-9_])\.(?![a-z_])")
_BOOLEANS = frozenset({"true", "false"})
_URL = re.compile(r"(?:[a-z][a-z0-9+.-]*://|www\.|mailto:)[^\s)\]>]+|\b[\w.-]+@[\w-]+(?:\.[\w-]+)+", re.IGNORECASE)


@dataclass(frozen=True)
class Name:
    """A name found in text: `text` as written, `kind` "code" or "proper", `start` its offset."""

    text: str
    kind: str
    start: int

    @property
    def key(self) -> str:
        return normal(self.text)


def normal(text: str) -> str:
    """Lowercase words, underscores and inner dots kept, everything else one space: the form
    names are compared in ("`request.client.host`." → "request.client.host")."""
    text = _NORMAL_DROP.sub(" ", text.lower())
    return " ".join(_LOOSE_DOT.sub(" ", text).split())


_ONE_WORD_FLAG = re.compile(r"--?([A-Za-z][A-Za-z0-9]*)")


def mentions(name: str, text: str) -> bool:
    """Whether `text` contains `name` as whole words, in normal form. A part of a dotted name counts
    ("iter_bytes" in "websocket.iter_bytes()", "WebSocketDisconnect" in
    "starlette.websockets.WebSocketDisconnect"), and so does an import of it ("starlette.config.environ"
    in "from starlette.config import environ"); so does a name joined by "and" or "or" whose two
    sides are there ("Makefile and Ninja" in "Makefile Generators and Ninja Generators"). A flag of one
    word needs its dashes, code quotes or a heading of its own ("--python" is not in "the Python
    interpreter"; "--maxsockets" is in "Config Settings > maxsockets")."""
    if flag := _ONE_WORD_FLAG.fullmatch(name.strip()):  # "--python" is not the word "python" ("the Python
        # interpreter"): it is there as a flag of either length or as code ("`python`", an option's heading)
        word = re.escape(flag.group(1))
        return re.search(rf"(?<![\w-])(?:--?{word}|`{word}`)(?![\w-])|(?:^|[>#][ \t]*){word}[ \t]*(?:$|\*)", text,
                         re.IGNORECASE | re.MULTILINE) is not None  # … or as a heading: "Config Settings > maxsockets"
    key, body = normal(name), f" {normal(text)} "
    if not key:
        return False
    if f" {key} " in body or re.search(rf"[ .]{re.escape(key)}[ .]", body):
        return True
    sides = re.split(r"\s+(?:and|or|&)\s+", name.strip(), maxsplit=1)
    if len(sides) == 2 and all(sides) and all(mentions(side, text) for side in sides):
        return True
    module, _, last = key.rpartition(".")
    return bool(module) and " " not in key and re.search(
        rf" from {re.escape(module)} import (?:[\w ]* )?{re.escape(last)} ", body) is not None


def _code_names(text: str) -> list[Name]:
    found: list[Name] = []
    for m in _BACKTICK.finditer(text):
        inner = m.group(1).strip()
        head = re.match(r"@?[-\w.]+(?:/[-\w.]+)*", inner)  # `doc/api/errors.md`, `@nodejs/releasers`
        if head and len(head.group(0)) > 1:
            found.append(Name(head.group(0).lstrip("."), "code", m.start(1)))
    for m in _HANDLE.finditer(text):
        found.append(Name(m.group(0), "code", m.start()))
    for m in _PATH.finditer(text):
        parts = [p for p in m.group(0).lower().split("/") if p]
        if len(parts) >= 2 and not all(p in _SLASH_WORDS for p in parts) and all(len(p) >= 2 for p in parts):
            found.append(Name(m.group(0).rstrip("/"), "code", m.start()))
    for m in _KEBAB.finditer(text):
        if not FUNCTION_WORDS & set(m.group(0).lower().split("-")):  # "up-to-date", "state-of-the-art"
            found.append(Name(m.group(0), "code", m.start()))
    for pattern in (_CALL, _DOTTED, _SNAKE, _FLAG, _CAMEL):
        for m in pattern.finditer(text):
            word = (m.group(1) if pattern is _CALL else m.group(0)).strip()
            if pattern is _DOTTED and re.fullmatch(r"[\d.]+", word.replace(".", "")):
                continue
            if pattern is _DOTTED and word.lower().startswith(("e.g", "i.e", "etc")):
                continue
            if pattern is _CAMEL and re.fullmatch(r"[A-Z]{2,}s", word) and word[:-1].lower() in GENERIC_ACRONYMS:
                continue  # "APIs", "URLs"
            found.append(Name(word, "code", m.start(1) if pattern is _CALL else m.start()))
    return found


def _proper_names(text: str) -> list[Name]:
    found: list[Name] = []
    for m in _ACRONYM.finditer(text):
        if len(m.group(0)) >= 2 and not m.group(0).isdigit() and m.group(0).lower() not in GENERIC_ACRONYMS:
            found.append(Name(m.group(0), "proper", m.start()))
    for m in _CAPITALISED.finditer(text):
        words = m.group(0).split()
        start = m.start()
        sentence_start = start == 0 or re.search(r"(?:^|[.!?:;]\s+|\n\s*|[\"'(]\s*)$", text[:start]) is not None
        if sentence_start or words[0].lower() in COMMON_CAPITALS:
            # "Report it with…": drop the first word when it only starts the sentence
            if len(words) == 1 or words[0].lower() in COMMON_CAPITALS or sentence_start:
                rest = m.group(0)[len(words[0]):].lstrip(" -")
                if not rest or not rest[:1].isupper():
                    continue
                start += len(m.group(0)) - len(rest)
                words = rest.split()
        phrase = " ".join(words)
        if phrase.lower() in COMMON_CAPITALS or len(phrase) < 2:
            continue
        found.append(Name(phrase, "proper", start))
    return found


def names(text: str) -> list[Name]:
    """The names of `text` (citation markers should be removed first), each once, in text order.
    A proper name inside a longer one is dropped ("Teams" inside "Microsoft Teams")."""
    text = _URL.sub(lambda m: " " * len(m.group(0)), text)  # a link's address is no name the answer asserts
    found = sorted(_code_names(text) + _proper_names(text), key=lambda n: (n.start, -len(n.text)))
    out: list[Name] = []
    for n in found:
        if not n.key or n.key in _BOOLEANS or n.key in GENERIC_ACRONYMS:
            continue
        if any(n.start >= o.start and n.start + len(n.text) <= o.start + len(o.text) for o in out):
            continue
        if any(o.key == n.key for o in out):
            continue
        out.append(n)
    return out


def spelled_alike(a: str, b: str) -> bool:
    """Whether two names differ only in case, punctuation or a plural "s" ("follow_symlink" /
    "follow_symlinks", "Pay.gov" / "pay-gov")."""
    def key(name: str) -> str:
        return re.sub(r"[^a-z0-9]", "", name.lower()).removesuffix("s")

    return key(a) == key(b)


_NOT_INITIALS = frozenset("of and the for on in to a an &".split())


def abbreviates(a: str, b: str) -> bool:
    """Whether one name is the other's acronym, words both start with aside: "GPL" / "General Public
    License", "GNU GPL" / "GNU General Public License", "EAP" / "Employee Assistance Program"."""
    short, long = sorted((a.split(), b.split()), key=lambda w: len(" ".join(w)))
    while short and long and short[0].lower() == long[0].lower():
        short, long = short[1:], long[1:]
    if len(short) != 1 or len(long) < 2:
        return False
    letters = short[0]
    if not (2 <= len(letters) <= 8 and letters.isalpha() and sum(c.isupper() for c in letters) >= 2):
        return False
    return "".join(w[0] for w in long if w.lower() not in _NOT_INITIALS).lower() == letters.lower()


# Words that say what kind of value a name is, after the name ("Location URL", "Function ARN"): the
# documents' key `Location` with the kind of its value, no name of its own.
KIND_WORDS = frozenset({"URL", "URI", "ID", "ARN", "UUID"})


def halves(name: str) -> list[tuple[str, str]]:
    """The ways a proper name of four or more words splits into two names of two or more words each:
    "Commit Queue GitHub Action" → ("Commit Queue", "GitHub Action"), ("Commit Queue GitHub", "Action")
    is not one; a name joined by "and"/"or" into its two sides ("Makefile and Ninja"); and a name
    before the kind of its value ("Location URL" → ("Location", "URL"), `KIND_WORDS`). Two documented
    names side by side are no invented name."""
    joined = re.split(r"\s+(?:and|or|&)\s+", name, maxsplit=1)
    if len(joined) == 2 and all(joined):
        return [(joined[0], joined[1])]
    words = name.split()
    if len(words) > 1 and words[-1] in KIND_WORDS:
        return [(" ".join(words[:-1]), words[-1])]
    return [(" ".join(words[:i]), " ".join(words[i:])) for i in range(2, len(words) - 1)]
