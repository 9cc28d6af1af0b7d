"""The text rules every stage shares: words, stop words, stems, sentences, citations and name labels.

One place for them, so that what the index matches, what verification compares and what an
answer quotes all read text the same way:
- `words` / `terms`: a text's words, for search (`\\w+`) and for comparing wording (hyphenated
  words and contractions kept whole);
- `QUERY_STOPWORDS` (dropped from a search query) and `FUNCTION_WORDS` (ignored when two texts'
  content is compared);
- `NEGATIONS` / `is_negation`: the words that negate;
- `stem`: Porter's stemmer, the one SQLite's FTS5 `porter` tokenizer applies to the embedded
  index, so a stem computed here is a term that index holds (a test compares the two). Two rules
  still compare word prefixes, each because Porter stems there measured worse: alignment's word
  overlap (`verify.candidates._overlap_key`) and the extractive ranker (`generate._terms`);
  tests/test_text.py names them;
- `SENTENCE_END` / `split_sentences`: where a sentence ends (never after "e.g." or "approx.");
- `CITATION` / `cited_numbers`: answer citation markers such as `[1]` or `[2, 3]`;
- `markdown_sentences`: the sentences of a chunk (hard-wrapped lines joined, blocks apart);
  `ANSWER_SENTENCE`, `ENDS_SENTENCE`, `SENTENCE_BREAK`: an answer's sentences, a sentence's end,
  where a long message may be cut;
- `NAME_LABELS` (the spaCy entity labels that are names) and `COMMON_CAPITALS` (capitalised words
  that name nothing).
"""

from __future__ import annotations

import functools
import re

# --- words

WORD = re.compile(r"\w+")
TERM = re.compile(r"[A-Za-z0-9][A-Za-z0-9\-'’]*")  # "opt-in", "don't" stay one term


def words(text: str) -> list[str]:
    """The lower-cased `\\w+` words of `text` (what search indexes and queries are made of)."""
    return WORD.findall(text.lower())


def terms(text: str) -> list[str]:
    """The lower-cased terms of `text` for comparing wording: hyphenated words and contractions
    whole, stray hyphens and apostrophes at the ends removed."""
    return [w.lower().strip("'’-") for w in TERM.findall(text)]


QUERY_STOPWORDS = frozenset(
    "a an and are as at be by can do does for from has have how i if in is it its of on or "
    "our should that the their there these this to was we what when where which who why will with you your".split()
)
FUNCTION_WORDS = frozenset(
    "a an the of in on at to for from by with and or but as is are was were be been being has have had do does "
    "did that this these those it its their there than then which who whom whose what when where while also "
    "not no can could may might will would shall should into over under about after before between among "
    "more most less such only very much many some any each other both all per via we our they them he she his her".split()
)


# --- negation: words that say something is not so ("not", "nothing"), and words that negate what
# they govern ("without a receipt", "fails to start"); contractions ("don't") end in "n't"
NEGATION_WORDS = frozenset("not no never none nobody nothing neither nor cannot".split())
SELF_NEGATING = frozenset("without lack lacks lacking fail fails failed absence absent unable".split())
NEGATIONS = NEGATION_WORDS | SELF_NEGATING


def is_negation(word: str) -> bool:
    """Whether a lower-case word negates: one of `NEGATIONS` or a contraction in "n't"."""
    return word in NEGATIONS or word.endswith("n't")


# A participle negated by its prefix, said of the subject: "are left uncompressed" says "are not
# compressed" ("is unused", "stays unchanged"); "unlimited number", "unauthenticated users" say no such thing.
_UN_PARTICIPLE = re.compile(r"un(?!der|it|if|ion)[a-z]{2,}ed")
_PREDICATIVE = frozenset("is are was were be been being left remain remains remained stay stays stayed kept "
                         "go goes went get gets got become becomes became".split())


def negates_at(words: list[str], i: int) -> bool:
    """Whether `words[i]` negates where it stands: `is_negation`, or an "un…ed" participle right after
    a verb that says it of the subject."""
    return is_negation(words[i]) or (i > 0 and words[i - 1] in _PREDICATIVE and bool(_UN_PARTICIPLE.fullmatch(words[i])))


# --- stems: M. F. Porter, "An algorithm for suffix stripping" (1980), as SQLite's FTS5 applies it

_STEP2 = (("ational", "ate"), ("tional", "tion"), ("enci", "ence"), ("anci", "ance"), ("izer", "ize"),
          ("logi", "log"), ("bli", "ble"), ("alli", "al"), ("entli", "ent"), ("eli", "e"), ("ousli", "ous"),
          ("ization", "ize"), ("ation", "ate"), ("ator", "ate"), ("alism", "al"), ("iveness", "ive"),
          ("fulness", "ful"), ("ousness", "ous"), ("aliti", "al"), ("iviti", "ive"), ("biliti", "ble"))
_STEP3 = (("icate", "ic"), ("ative", ""), ("alize", "al"), ("iciti", "ic"), ("ical", "ic"), ("ful", ""), ("ness", ""))
_STEP4 = ("al", "ance", "ence", "er", "ic", "able", "ible", "ant", "ement", "ment", "ent", "ion", "ou", "ism",
          "ate", "iti", "ous", "ive", "ize")


def _consonant(w: str, i: int) -> bool:
    if w[i] in "aeiou":
        return False
    if w[i] == "y":
        return i == 0 or not _consonant(w, i - 1)
    return True


def _measure(w: str) -> int:
    """Porter's m: how many vowel-consonant sequences `w` has."""
    shape = "".join("c" if _consonant(w, i) else "v" for i in range(len(w)))
    return len(re.findall(r"v+c+", shape))


def _has_vowel(w: str) -> bool:
    return any(not _consonant(w, i) for i in range(len(w)))


def _cvc(w: str) -> bool:
    """Consonant-vowel-consonant at the end, the last consonant not w, x or y ("hop", not "snow")."""
    return (len(w) >= 3 and _consonant(w, len(w) - 3) and not _consonant(w, len(w) - 2)
            and _consonant(w, len(w) - 1) and w[-1] not in "wxy")


def _double(w: str) -> bool:
    return len(w) >= 2 and w[-1] == w[-2] and _consonant(w, len(w) - 1)


def _replace(w: str, rules, min_measure: int) -> str:
    """The first rule whose suffix ends `w` decides: applied when the rest has m > `min_measure`."""
    for suffix, replacement in rules:
        if w.endswith(suffix):
            rest = w[: len(w) - len(suffix)]
            return rest + replacement if _measure(rest) > min_measure else w
    return w


@functools.lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """The Porter stem of a lower-case word ("indexing" → "index", "requirements" → "requir").
    Words under three letters are their own stem, as in FTS5."""
    w = word
    if len(w) < 3:
        return w
    # step 1a: plurals
    if w.endswith("sses") or w.endswith("ies"):
        w = w[:-2]
    elif w.endswith("s") and not w.endswith("ss"):
        w = w[:-1]
    # step 1b: -eed, -ed, -ing
    if w.endswith("eed"):
        if _measure(w[:-3]) > 0:
            w = w[:-1]
    else:
        for suffix in ("ed", "ing"):
            if w.endswith(suffix) and _has_vowel(w[: -len(suffix)]):
                w = w[: -len(suffix)]
                if w.endswith(("at", "bl", "iz")):
                    w += "e"
                elif _double(w) and w[-1] not in "lsz":
                    w = w[:-1]
                elif _measure(w) == 1 and _cvc(w):
                    w += "e"
                break
    # step 1c: y → i after a vowel
    if w.endswith("y") and _has_vowel(w[:-1]):
        w = w[:-1] + "i"
    w = _replace(w, _STEP2, 0)
    w = _replace(w, _STEP3, 0)
    # step 4: suffixes dropped when m > 1 ("-ion" only after s or t)
    for suffix in _STEP4:
        if w.endswith(suffix):
            rest = w[: len(w) - len(suffix)]
            if _measure(rest) > 1 and (suffix != "ion" or rest.endswith(("s", "t"))):
                w = rest
            break
    # step 5a: a final e; 5b: a final double l
    if w.endswith("e"):
        rest = w[:-1]
        if _measure(rest) > 1 or (_measure(rest) == 1 and not _cvc(rest)):
            w = rest
    if w.endswith("ll") and _measure(w) > 1:
        w = w[:-1]
    return w


def content_stems(tokens: list[str]) -> list[str]:
    """The stems of the content words among `tokens` (`words` of a text), in order: three letters or
    more, no function word ("the `doc` directory" → ["doc", "directori"])."""
    return [stem(w) for w in tokens if len(w) > 2 and w not in FUNCTION_WORDS]


# --- sentences

# a sentence ends at . ! or ? (and any closing quote or bracket) before a space and a capital, digit,
# opening quote, bracket or code span
SENTENCE_END = re.compile(r"(?<=[.!?])([\"')\]]*)\s+(?=[\"'(\[`]?[A-Z0-9`])")
# an answer's sentence, as claims are cut from it: also ends before a code name written in lower
# case ("… defaults to True. check_dir defaults to …")
ANSWER_SENTENCE = re.compile(r".+?(?:[.!?][\"')\]]*(?=\s+(?:[\"'(`]?[A-Z0-9]|`|[a-z][a-z0-9]*_\w))|$)")
# text that ends as a sentence does (a full stop, question or exclamation mark, colon or ellipsis)
ENDS_SENTENCE = re.compile(r"[.!?:…][\"'”’)\]]*$")
# where a long message may be cut between sentences: after sentence punctuation, or at a line break
SENTENCE_BREAK = re.compile(r"(?<=[.!?…])\s+|\n+")
ABBREVIATION = re.compile(r"(?:^|[\s(])(?:e\.g|i\.e|ex|etc|vs|approx|incl|esp|cf|Mr|Mrs|Ms|Dr|No|Nos|Fig|St|Jr|Sr|Inc|Ltd|Co)"
                          r"\.[\"')\]]*$", re.I)


def split_sentences(text: str) -> list[str]:
    """`text` split into sentences by rule (fast; no parse): at `SENTENCE_END`, except after a
    common abbreviation ("e.g.", "approx.")."""
    out: list[str] = []
    pieces, start = [], 0
    for m in SENTENCE_END.finditer(text):  # the closing quote or bracket stays with its sentence: "(See below.)"
        pieces.append(text[start:m.start()] + m.group(1))
        start = m.end()
    pieces.append(text[start:])
    for piece in (s.strip() for s in pieces):
        if not piece:
            continue
        if out and ABBREVIATION.search(out[-1]):
            out[-1] = f"{out[-1]} {piece}"
        else:
            out.append(piece)
    return out


_BLOCK_START = re.compile(r"\s*(?:[-*+•]\s|\d+[.)]\s|#|\||>|```|!!!|\?\?\?|:::)")


def markdown_lines(text: str) -> list[str]:
    """The text's lines, with the hard-wrapped lines of a paragraph joined back into one: a line
    continues the one before unless it is blank or starts a block (a list item, heading, table
    row, quote, fence or admonition), or the line before ends its own block (a heading, a table
    row, a line of code, or a short unpunctuated line followed by a capital: a title)."""
    out: list[str] = []
    joinable = in_code = False
    for line in text.splitlines():
        fence = line.lstrip().startswith(("```", "~~~"))
        in_code = in_code != fence
        if not line.strip():
            joinable = False
            continue
        heading_like = bool(out) and len(out[-1]) < 50 and not out[-1].endswith(tuple(".,;:!?-–—")) \
            and line.lstrip()[:1].isupper()
        if joinable and not heading_like and not _BLOCK_START.match(line) and out:
            out[-1] = f"{out[-1]} {line.strip()}"
        else:
            out.append(line.strip())
        joinable = not (in_code or fence or line.lstrip().startswith(("#", "|")))
    return out


def join_sentences(first: str, second: str) -> str:
    """Two adjacent sentences as one text (a two-sentence window). A first that ends on a word, as a
    heading or a label does ("Example 4: Sync … files that do not match"), is closed with a period, so
    that the parser reads two statements and not one running on into the next."""
    end = first.rstrip()[-1:]
    return f"{first}. {second}" if end.isalnum() or end in ")*_" else f"{first} {second}"


def markdown_sentences(text: str) -> list[str]:
    """The sentences of a Markdown text such as a chunk: its lines (`markdown_lines`: wrapped lines
    joined, list items, headings, table rows and code apart), each split by `split_sentences`."""
    return [s for line in markdown_lines(text) for s in split_sentences(line)]


# --- code fences

FENCE = re.compile(r"^[ \t]*(`{3,}|~{3,})", re.M)  # a line that opens or closes a fenced code block


def fence_after(fence: str, mark: str) -> str:
    """The open fence after a fence line `mark` ("" = none open): it closes `fence` when it is made
    of the same character and at least as long (CommonMark), else it opens one if none is open."""
    if fence:
        return "" if mark[0] == fence[0] and len(mark) >= len(fence) else fence
    return mark


LIST_ITEM = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")  # a Markdown list item's marker: "- ", "* ", "2. "


MD_LINK = re.compile(r"!?\[([^\]\n]*)\]\(([^)\s]*)\)")  # an inline Markdown link or image: [text](url)


MD_ESCAPE = re.compile(r"\\([!-/:-@\[-`{-~])")  # a Markdown backslash escape of punctuation: node\_wasi.h


def unescaped(text: str) -> str:
    """`text` with Markdown's backslash escapes read as the characters they escape ("node\\_wasi.h" → "node_wasi.h")."""
    return MD_ESCAPE.sub(r"\1", text)


def link_text(text: str) -> str:
    """Markdown links reduced to their text, with the site's name for a link to another site, and
    images dropped: "use [KeePassXC](https://www.keepassxc.org/download)" → "use KeePassXC
    (keepassxc.org)"."""
    def link(m: re.Match) -> str:
        if m.group(0).startswith("!"):
            return ""
        host = re.match(r"https?://(?:www\.)?([^/?#:]+)", m.group(2))
        if host and host.group(1).lower() not in m.group(1).lower():
            return f"{m.group(1)} ({host.group(1)})"
        return m.group(1)

    return MD_LINK.sub(link, text)


INLINE_CODE = re.compile(r"(`+)(?!`)(.+?)(?<!`)\1(?!`)")  # a code span on one line: `x`, ``a`b``


def code_spans(text: str) -> list[tuple[int, int]]:
    """Where `text` holds code: each fenced block (fence lines included; an unclosed one runs to the
    end) and each inline code span outside them, as (start, end) offsets in order."""
    spans: list[tuple[int, int]] = []
    fence, opened, pos = "", 0, 0
    for line in text.splitlines(keepends=True):
        mark = FENCE.match(line)
        if mark:
            after = fence_after(fence, mark.group(1))
            if not fence and after:
                opened = pos
            elif fence and not after:
                spans.append((opened, pos + len(line)))
            fence = after
        elif not fence:
            spans.extend((pos + m.start(), pos + m.end()) for m in INLINE_CODE.finditer(line))
        pos += len(line)
    if fence:
        spans.append((opened, len(text)))
    return sorted(spans)


# --- citations

# One marker: numbers (or "source 2", "S2") in brackets, apart by a comma, semicolon, dash or space.
# Each number must be followed by a separator or the closing bracket, so that a list of numbers that
# is no marker ("[3, 4, 10, 11, … 57 (peak)]") fails in one pass; an optional separator there let
# "10" be read as "1" and "0", and the match backtracked through every split of every number.
_ITEM = r"(?:source[- ]?\d+|[A-Za-z]?\d+)"
_MARK = rf"\[\s*{_ITEM}(?:(?:\s*[,;–-]\s*|\s+){_ITEM})*(?:\s*[,;–-])?\s*\]"
MARK = re.compile(_MARK, re.IGNORECASE)  # one marker
CITATION = re.compile(rf"\s*{_MARK}", re.IGNORECASE)  # one marker, with the space before it
CITATIONS = re.compile(rf"(?:\s*{_MARK})+", re.IGNORECASE)  # a run of markers ("[1][2]")


def marked_numbers(marker: str) -> list[int]:
    """The source numbers one marker cites, in its order ("[2, 3]" → [2, 3], "[source 1]" → [1])."""
    return [int(n) for n in re.findall(r"\d+", marker)]


def cited_numbers(text: str) -> tuple[int, ...]:
    """The source numbers cited in `text` ("… [1, 3]." → (1, 3))."""
    return tuple(sorted({n for m in MARK.finditer(text) for n in marked_numbers(m.group(0))}))


# --- names

# spaCy entity labels that name something (a person, organisation, place, product, law…), as
# opposed to those that quantify (DATE, CARDINAL, MONEY…)
NAME_LABELS = frozenset({"PERSON", "ORG", "GPE", "LOC", "NORP", "FAC", "PRODUCT", "EVENT", "WORK_OF_ART", "LAW", "LANGUAGE"})
# Words that start a sentence or follow a colon in capitals without naming anything.
COMMON_CAPITALS = frozenset(
    "a an the this that these those it its if when while for to in on at by with from of and or but so "
    "yes no not you your we our they their he she his her there here then also each every any all some "
    "most many few one two three use using set see note after before once unlike like instead however "
    "because since unless until although though even only just first next finally also example for "
    "i my me us what which who how why where can could should would will may might must do does did "
    "is are was were be been has have had january february march april may june july august september "
    "october november december monday tuesday wednesday thursday friday saturday sunday".split()
)
