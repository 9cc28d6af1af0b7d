"""Typed values in text: find numbers, years, percentages, quantities and ordinals, normalised so they compare.

"3.5 million" and "3,500,000" are the same number; "12%", "12 percent" and "twelve per cent" the
same percentage; "in 2018" is a year. `extract_values` finds them in a sentence, `same_value`
says whether two agree (allowing for the precision the less precise one was written with), and
`comparable` whether two are of the same kind, so that a different value is a conflict.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from pipeline.text import FUNCTION_WORDS, stem, words

KINDS = ("year", "decade", "percent", "number", "ordinal", "month", "version")

_SCALES = {
    "thousand": 1e3, "k": 1e3, "million": 1e6, "m": 1e6, "mn": 1e6, "millions": 1e6,
    "billion": 1e9, "bn": 1e9, "b": 1e9, "billions": 1e9, "trillion": 1e12, "tn": 1e12,
    "lakh": 1e5, "crore": 1e7, "thousands": 1e3, "hundred": 1e2, "hundreds": 1e2,
}
_WORDS = {
    "zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
    "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14,
    "fifteen": 15, "sixteen": 16, "seventeen": 17, "eighteen": 18, "nineteen": 19, "twenty": 20,
    "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80, "ninety": 90,
    "dozen": 12, "twice": 2, "half": 0.5, "single": 1, "double": 2, "triple": 3,
}
_ORDINALS = {
    "first": 1, "second": 2, "third": 3, "fourth": 4, "fifth": 5, "sixth": 6, "seventh": 7,
    "eighth": 8, "ninth": 9, "tenth": 10, "eleventh": 11, "twelfth": 12, "twentieth": 20,
    "hundredth": 100,
}
_MONTHS = {
    m: i + 1
    for i, names in enumerate(
        [("january", "jan"), ("february", "feb"), ("march", "mar"), ("april", "apr"), ("may",),
         ("june", "jun"), ("july", "jul"), ("august", "aug"), ("september", "sep", "sept"),
         ("october", "oct"), ("november", "nov"), ("december", "dec")]
    )
    for m in names
}
# Words after a 4-digit number that still leave it a year ("in 2018 and", "2018 was").
_YEAR_FOLLOWERS = {
    "and", "or", "to", "in", "when", "the", "was", "were", "is", "are", "that", "with", "by", "at",
    "as", "for", "which", "after", "before", "a", "an", "it", "there", "we", "they", "he", "she",
    "on", "of", "through", "until", "onwards", "onward", "ad", "bc", "bce", "ce", "election",
    "census", "season", "report", "study", "survey", "data", "levels", "level", "average", "baseline",
    "winter", "summer", "spring", "autumn", "fall", "edition", "olympics", "world", "but", "saw",
    "had", "has", "did", "showed", "this", "these", "than", "from",
}
_CURRENCIES = {"$": "dollar", "€": "euro", "£": "pound", "¥": "yen"}
_UNIT_SKIP = {"of", "the", "a", "an", "per", "more", "fewer", "less", "additional", "new", "other", "total"}

_NUM = r"(?:\d{1,3}(?:,\d{3})+|\d+)(?:[.·]\d+)?|[.·]\d+"
_WORD_NUM = "|".join(sorted(_WORDS, key=len, reverse=True))
_VERSION = r"\bv?\d+(?:\.\d+){2,}\b|\bv\d+\.\d+\b"  # 0.40.0, v1.2.3, v2.37 (two parts, "0.40", stay a number …)
# … unless a product's name comes just before them: "Git 2.37", "Python 3.10" ("version 3.16" stays a number,
# which another "3.16" or "8.0" compares with)
_VERSION_LABEL = re.compile(r"\b(?P<name>[A-Z](?=[A-Za-z]*[a-z])[A-Za-z]*(?:\.js)?)\s+$")  # not "USD 3.50"
_LABELS_NOT_NAMES = frozenset("figure table section chapter step page item version versions release releases within almost "
                              "just since until every".split())
_TOKEN = re.compile(
    rf"(?P<ver>{_VERSION})"
    rf"|(?P<num>{_NUM})"
    rf"|(?P<word>\b(?:{_WORD_NUM})(?:[- ](?:one|two|three|four|five|six|seven|eight|nine))?\b)"
    rf"|(?P<ord>\b(?:{'|'.join(_ORDINALS)})\b|\b\d+(?:st|nd|rd|th)\b)"
    rf"|(?P<month>\b(?:{'|'.join(m for m in _MONTHS if len(m) > 3 or m == 'may')})\b)",
    re.IGNORECASE,
)
_PERCENT = re.compile(r"\s*(?:%|percent\b|per\s*cent\b|pct\b|percentage points?\b)", re.IGNORECASE)
_SCALE = re.compile(r"[\s-]*(" + "|".join(sorted(_SCALES, key=len, reverse=True)) + r")\b", re.IGNORECASE)
_RANGE_TAIL = re.compile(rf"\s*(?:-|–|—|to)\s*(?:{_NUM})", re.IGNORECASE)
_NEXT_WORD = re.compile(r"[\s(]*([A-Za-zµμ°]+[A-Za-z0-9/]*)")


@dataclass(frozen=True)
class Value:
    """A typed value found in text: `kind` is one of KINDS, `value` normalised, `text` as written."""

    kind: str
    value: float
    text: str
    unit: str = ""  # for numbers: the (singular, lowercase) word after it, "" if none
    start: int = 0
    end: int = 0
    precision: float = 0.0  # half a unit of the last written digit, in normalised units

    def __str__(self) -> str:
        return self.text


def parse_number(text: str) -> float | None:
    """The value of a number as written: "3.5 million" → 3500000.0, "3,500,000", "twelve", "½" → None."""
    values = [v for v in extract_values(text) if v.kind in ("number", "year", "percent", "decade")]
    return values[0].value if values else None


def _singular(word: str) -> str:
    word = word.lower()
    if len(word) > 3 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        return word[:-1]
    return word


def _precision(digits: str, scale: float) -> float:
    decimals = len(digits.split(".")[1]) if "." in digits else 0
    return 0.5 * 10 ** (-decimals) * scale


# A keyword argument or setting right before a number: its name's last part is the unit ("max_files=").
_KEYWORD = re.compile(r"\b([A-Za-z][A-Za-z0-9_]*)\s*=\s*$")


def _version_labelled(text: str, start: int, end: int, digits: str) -> bool:
    """Whether a two-part number is a version by what comes before it ("Git 2.37", "Python 3.10"): a
    name, and no unit or percent after it ("About 2.5 million")."""
    if not re.fullmatch(r"\d+\.\d+", digits) or _SCALE.match(text, end) or _PERCENT.match(text, end):
        return False
    label = _VERSION_LABEL.search(text, max(0, start - 30), start)
    name = label.group("name").lower() if label else ""
    return (bool(name) and name not in FUNCTION_WORDS and name not in _LABELS_NOT_NAMES
            and not name.endswith("ly"))  # not "About 2.5", "Figure 2.1", "Currently 7.0"


def extract_values(text: str) -> list[Value]:
    """Every typed value in `text`, in order; ranges ("35.5% to 50.3%", "76-85%") give both ends."""
    out: list[Value] = []
    pos = 0
    while True:
        m = _TOKEN.search(text, pos)
        if not m:
            return out
        pos = m.end()
        start, end = m.start(), m.end()
        if m.group("ver"):
            parts = [int(p) for p in m.group("ver").lstrip("vV").split(".")]
            number = sum(min(p, 999) * 1000.0 ** -i for i, p in enumerate(parts))  # 0.40.1 → 0.040001
            out.append(Value("version", number, m.group(0), start=start, end=end))
            continue
        if m.group("month"):
            word = m.group("month").lower()
            if word == "may" and not (text[start].isupper() and start > 0):
                continue  # "may" the verb
            out.append(Value("month", float(_MONTHS[word]), m.group(0), start=start, end=end))
            continue
        if m.group("ord"):
            raw = m.group("ord").lower()
            value = _ORDINALS.get(raw) or int(re.sub(r"\D", "", raw))
            unit = _unit_after(text, end)
            out.append(Value("ordinal", float(value), m.group(0), unit, start, end))
            continue
        if m.group("num"):
            before = text[max(0, start - 2):start]
            if before[-1:].isalpha() or re.match(r"[A-Za-z][-/]$", before) or before[-1:] == "_":
                # part of a name: "COVID-19", "B12", "SARS-CoV-2", "H2A"
                pos = _skip_word(text, end)
                continue
            if text[end:end + 1].isalpha() and not re.match(r"(?:[A-Za-zµμ]{1,4}\b|[A-Za-zµμ]{1,4}/)", text[end:end + 6]):
                pos = _skip_word(text, end)
                continue
            if _version_labelled(text, start, end, m.group("num")):
                parts = [int(p) for p in m.group("num").split(".")]
                out.append(Value("version", parts[0] + min(parts[1], 999) / 1000, m.group(0), start=start, end=end))
                continue
            digits = m.group("num").replace(",", "").replace("·", ".")
            if digits.startswith("."):
                digits = "0" + digits
            number = float(digits)
            scale_digits = digits
        else:
            words = re.split(r"[- ]", m.group("word").lower())
            number = float(sum(_WORDS[w] for w in words))
            scale_digits = str(int(number)) if number == int(number) else str(number)
        # decade: "1990s"
        if m.group("num") and re.match(r"'?s\b", text[end:end + 2]) and re.fullmatch(r"1\d{3}|20\d{2}", digits):
            out.append(Value("decade", number, text[start:end + 1], start=start, end=end + 1))
            pos = end + 1
            continue
        scale = 1.0
        sm = _SCALE.match(text, end)
        if sm and not (sm.group(1).lower() in ("m", "b", "k") and not sm.group(0).startswith(sm.group(1))):
            # "3.5 million", "3.5m" (a bare m/b/k only when attached)
            scale = _SCALES[sm.group(1).lower()]
            end = sm.end()
        value = number * scale
        precision = _precision(scale_digits, scale)
        pm = _PERCENT.match(text, end)
        rng = _RANGE_TAIL.match(text, end) if not pm else None
        if rng:
            # "76-85%": the first end takes the second's kind
            after = _PERCENT.match(text, rng.end())
            if after:
                out.append(Value("percent", value, text[start:end], start=start, end=end, precision=precision))
                continue
        if pm:
            end = pm.end()
            out.append(Value("percent", value, text[start:end], start=start, end=end, precision=precision))
            pos = end
            continue
        unit = _unit_after(text, end)
        if (
            m.group("num")
            and scale == 1.0
            and text[start - 1:start] not in ("/", ":")
            and re.fullmatch(r"1[5-9]\d{2}|20\d{2}", digits)
            and (unit == "" or unit in _YEAR_FOLLOWERS or _singular(unit) in _YEAR_FOLLOWERS)
        ):
            out.append(Value("year", value, text[start:end], start=start, end=end))
        else:
            currency = text[max(0, start - 1):start]
            if m.group("num") and currency in _CURRENCIES:  # "$75": the currency is its unit, and part of it
                unit, start = _CURRENCIES[currency], start - 1
            elif not unit and (key := _KEYWORD.search(text, max(0, start - 40), start)):
                unit = _singular(key.group(1).rsplit("_", 1)[-1].lower())  # "max_files=1000" counts files
            out.append(Value("number", value, text[start:end], unit, start, end, precision))
        pos = end


def _skip_word(text: str, pos: int) -> int:
    while pos < len(text) and (text[pos].isalnum() or text[pos] in "-_."):
        pos += 1
    return pos


# Words that end the search for a unit of time behind a number's modifiers ("3 attempts per hour").
_UNIT_STOPS = _UNIT_SKIP | {"in", "on", "at", "for", "to", "from", "by", "with", "and", "or", "is", "are", "was",
                            "were", "be", "each", "every", "that", "which", "than"}


def _unit_after(text: str, end: int) -> str:
    """The word right after a number, singular and lowercase ("12 patients" → "patient"); a unit of
    time behind up to two modifiers wins over the first of them ("240 annual leave hours" → "hour",
    "10 business days" → "day")."""
    pos = end
    for _ in range(2):
        m = _NEXT_WORD.match(text, pos)
        if not m:
            return ""
        word = m.group(1).lower()
        if word not in _UNIT_SKIP:
            unit = _singular(word)
            if unit not in TIME_UNITS:
                after = m.end()
                for _ in range(2):
                    m = _NEXT_WORD.match(text, after)
                    if not m or m.group(1).lower() in _UNIT_STOPS or not text[after:m.start(1)].isspace():
                        break
                    if _singular(m.group(1).lower()) in TIME_UNITS:
                        return _singular(m.group(1).lower())
                    after = m.end()
            return unit
        pos = m.end()
    return ""


def same_value(a: Value, b: Value) -> bool:
    """Whether two values agree, allowing the rounding of the less precise one."""
    if a.value == b.value:
        return True
    if {a.kind, b.kind} <= {"year", "number"} and a.kind != b.kind:
        return False
    tolerance = max(a.precision, b.precision, abs(max(a.value, b.value)) * 1e-9)
    return abs(a.value - b.value) <= tolerance + 1e-12


def comparable(claim: Value, evidence: Value) -> bool:
    """Whether a different `evidence` value would contradict `claim` (same kind, and same unit for numbers)."""
    if claim.kind != evidence.kind:
        return False
    if claim.kind in ("number", "ordinal"):
        return bool(claim.unit) and claim.unit == evidence.unit
    return True


def present(value: Value, candidates: list[Value]) -> bool:
    """Whether `value` appears among `candidates` (any kind that can hold the same number)."""
    for c in candidates:
        if {c.kind, value.kind} == {"version", "number"} and c.text.lstrip("vV") == value.text.lstrip("vV"):
            return True  # "2.37" as a version ("Git 2.37") and unlabelled
        if c.kind == value.kind or {c.kind, value.kind} <= {"year", "number"}:
            if c.value == value.value or (c.kind == value.kind and same_value(value, c)):
                return True
    return False


TIME_UNITS = frozenset("second minute hour day week month year".split())


def checkable(value: Value) -> bool:
    """A value an answer must not state unless its source does: one written in digits, or a
    spelled-out length of time ("two weeks"). Other number words ("three ways", "one of") are often
    the answer's own counting."""
    return any(c.isdigit() for c in value.text) or value.unit in TIME_UNITS


def as_written(text: str, value: Value) -> str:
    """`value` as `text` writes it, with its unit word when one follows: "two weeks", "3-week", "$50";
    not a function word ("pip 22.3 its version", "126 or 127": the word after is the unit that values
    are compared by, not part of the value)."""
    found = re.match(rf"{re.escape(value.text)}[\s-]*{re.escape(value.unit[:3])}\w*", text[value.start:], re.I) \
        if value.unit and value.unit not in FUNCTION_WORDS else None
    return found.group(0) if found else value.text


# A bound on a value: "at least 48 hours" is a floor, "at most 48 hours" a ceiling.
_FLOOR_BEFORE = re.compile(r"\b(?:at least|no (?:less|fewer) than|not (?:less|fewer) than|a minimum of|minimum of|minimum"
                           r"|more than|greater than|over|above|exceeding|in excess of)\s+[$€£¥]?$")
_CEILING_BEFORE = re.compile(r"\b(?:at most|no more than|not more than|no longer than|up to|a maximum of|maximum of|maximum"
                             r"|less than|fewer than|under|below|within|not (?:to )?exceed(?:ing)?)\s+[$€£¥]?$")
_FLOOR_AFTER = re.compile(r"^(?:[\s-]+[a-z]+){0,2}\s+or (?:more|longer|greater|above|later)\b")
_CEILING_AFTER = re.compile(r"^(?:[\s-]+[a-z]+){0,2}\s+or (?:less|fewer|shorter|below|earlier)\b")


def bound(text: str, value: Value) -> tuple[int, str]:
    """Whether `text` states `value` as a floor (+1: "at least 48 hours", "48 hours or more"), a
    ceiling (-1: "at most 48 hours", "up to 48 hours") or neither (0), with the bounded value as written."""
    before, after = text[:value.start].lower(), text[value.end:].lower()
    written = as_written(text, value)
    for sign, pattern in ((1, _FLOOR_BEFORE), (-1, _CEILING_BEFORE)):
        if m := pattern.search(before):
            return sign, f"{text[value.start - len(m.group(0)):value.start]}{written}"
    for sign, pattern in ((1, _FLOOR_AFTER), (-1, _CEILING_AFTER)):
        if m := pattern.match(after):
            return sign, f"{text[value.start:value.end]}{text[value.end:value.end + m.end()]}"
    return 0, ""


def bound_flipped(claim: str, value: Value, sentence: str, values: list[Value]) -> str:
    """The sentence's bound on the claim's value ("at least 48 hours") when the claim bounds it the
    other way ("at most 48 hours"), else ""."""
    sign, _ = bound(claim, value)
    if not sign:
        return ""
    for twin in values:
        if same_value(value, twin) and twin.kind == value.kind:
            other, written = bound(sentence, twin)
            if other == -sign:
                return written
    return ""


def same_role(claim: str, value: Value, sentence: str, other: Value) -> bool:
    """Whether two versions stand in the same place: a content word shared among the three words before
    each (a product's name right before the value left out), or none before either, and the same word
    after each, or none ("Git 2.36 changed" / "Git 2.35 changed"; not "starting with Git 2.36" /
    "regressions in Git 2.34"); or the same product's name before and the same word after ("requires
    Python 3.8 or newer" / "Use Python 3.10 or newer"). "fixed in 2.37.1" and "appeared in Git 2.25", or "introduced in CMake 3.13" and "in
    CMake 3.12 and below", are versions of two events, not one value changed."""
    def place(text: str, v: Value) -> tuple[set[str], str, str]:
        """(content words among the three before, the product's name right before, the word after)."""
        head, label = text[:v.start], _PRODUCT_BEFORE.search(text[:v.start])
        if label:
            head = head[:label.start()]  # the product a version is of ("Git") says no place
        m = re.match(r"\s+([A-Za-z]+)", text[v.end:])
        return ({w for w in words(head)[-3:] if w not in FUNCTION_WORDS and not w.isdigit()},
                label.group(1).lower() if label else "", stem(m.group(1).lower()) if m else "")  # "weeks" / "week"

    (mine, my_label, my_after), (theirs, their_label, their_after) = place(claim, value), place(sentence, other)
    if my_after != their_after:
        return False
    if my_after and my_label and my_label == their_label:
        return True  # "requires Python 3.8 or newer" / "Use Python 3.10 or newer"
    return bool(mine & theirs) or not (mine or theirs)


_PRODUCT_BEFORE = re.compile(r"\b([A-Z][\w.]*)\s+$")  # "Git " in "Git 2.37"
