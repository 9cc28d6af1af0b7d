"""What a question asks for: the kind of value ("how many" → a number, "when" → a date or a span,
"which version", "what default", "who" → a name) and how a sentence writes each kind. The extractive
answer (`pipeline.generate`) prefers the sentences that carry it. Pure patterns; no I/O.
"""

from __future__ import annotations

import re

from pipeline.text import split_sentences

_NUMBER_WORDS = r"one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|fifteen|twenty|thirty|forty|fifty|sixty|ninety|hundred"
_UNITS = (r"(?:hours?|hrs?|days?|weeks?|months?|years?|minutes?|mins?|seconds?|secs?|ms|milliseconds?|pay periods?"
          r"|characters?|chars|lines?|words?|bytes?)")  # … and lengths: "how long may the first line be?"
_MONTHS = r"(?:Jan(?:uary)?|Feb(?:ruary)?|Mar(?:ch)?|Apr(?:il)?|May|June?|July?|Aug(?:ust)?|Sep(?:t|tember)?|Oct(?:ober)?|Nov(?:ember)?|Dec(?:ember)?)"
_DURATION = rf"\b(?:\d+(?:[.,]\d+)?|{_NUMBER_WORDS})(?:\s*(?:-|to)\s*\d+)?[\s-]*(?:business |calendar |work )?{_UNITS}\b"
ANSWER_TYPES: dict[str, tuple[re.Pattern, re.Pattern]] = {
    # type: (question pattern, value pattern)
    "duration": (re.compile(r"\bhow (?:long|often|soon|quickly|early|late)\b|\bhow (?:far|much) (?:in advance|ahead|notice)\b"
                            r"|\bhow many " + _UNITS, re.I),
                 re.compile(_DURATION, re.I)),
    "number": (re.compile(r"\bhow (?:many|much)\b|\bwhat (?:is the )?(?:number|amount|percentage|limit|maximum|minimum|size)\b|\b(?:maximum|minimum|max|min)\b", re.I),
               re.compile(rf"\b\d+(?:[.,]\d+)*\b|\b(?:{_NUMBER_WORDS})\b|\$\d", re.I)),
    # a "when" is answered by a date or by a span of time ("after 90 days", "within 72 hours")
    "date": (re.compile(r"^\s*when\b|\bwhen (?:is|are|do|does|did|will|should|must|can|was)\b|\bwhat (?:date|day|year|month)\b|\b(?:deadline|due date)\b|\bby when\b", re.I),
             re.compile(rf"\b{_MONTHS}\.?\s+\d{{1,2}}\b|\b\d{{4}}-\d{{2}}-\d{{2}}\b|\b\d{{1,2}}/\d{{1,2}}/\d{{2,4}}\b|\b{_MONTHS}\s+\d{{4}}\b|\b(?:19|20)\d{{2}}\b|\bFY\s?\d{{2}}\b|\b(?:Mon|Tues|Wednes|Thurs|Fri|Satur|Sun)day\b|{_DURATION}", re.I)),
    # ("a security release" asks for no version; "which release", "released", "since when" do)
    "version": (re.compile(r"\bversions?\b|\b(?:which|what) (?:\w+ )?releases?\b|\breleased\b|\bsince\b"
                           r"|\b(?:introduced|added|new in)\b", re.I),
                re.compile(r"\b\d+\.\d+(?:\.\d+)*\b|\bv\d+\b", re.I)),
    "default": (re.compile(r"\bdefaults?\b|\bdefault value\b", re.I),
                re.compile(r"\bdefaults?\b.*?(?:`[^`]+`|\b\d+\b|\"[^\"]+\"|'[^']+'|\b(?:True|False|None)\b)|(?:`[^`]+`|\b\d+\b|\b(?:True|False|None)\b).*?\bdefaults?\b", re.I)),
}
# "which tool / who / what package does …": asks for a name, when it asks for no value of a type above
# ("in which situations", "which value" ask for a condition or a setting, not a name)
_OPENS_NAME = re.compile(r"^\s*(?:which|who|whom)\b")
_ASKS_NAME = re.compile(r"(?<!\bin )(?<!\bunder )\bwhich (?!values?\b|situations?\b|cases?\b"
                        r"|ways?\b|order\b|conditions?\b|circumstances\b)\w+|\bwho (?!is\b|are\b)\w+"
                        r"|\bwhat (?!is\b|are\b|was\b|were\b|does\b|do\b|did\b|happens\b|if\b|should\b|can\b|will\b)\w+"
                        r"(?: \w+)? (?:does|do|did|should|is|are|can|will|must)\b", re.I)
# a name: a code span, a word with an inner capital (KeePassXC, GitHub), an acronym, or a
# capitalised word that does not start the sentence (… in Kansas City, MO)
_NAME = re.compile(r"`([^`\n]+)`|\b([A-Za-z][a-z0-9]*[A-Z][\w-]*|[A-Z]{2,}[a-z]?)\b|(?<=[\w,;:)] )([A-Z][a-z][\w-]*(?: [A-Z][a-z][\w-]*)*)")

_LINK = re.compile(r"!?\[([^\]\n]*)\]\([^)\s]*\)")


# An opening condition ("When we call configure_file with X, what permissions …?", "If I pass two
# filters, which one wins?"): the question asks what its main clause asks, not "when".
_CONDITION = re.compile(r"^\s*(?:when|whenever|if|once|after|before|while)\b[^?,]*,\s*"
                        r"(?=(?:what|which|who|whom|how|when|where|why|is|are|was|were|do|does|did|can|could"
                        r"|should|will|would|must|may)\b)", re.I)
# A manual page's section ("cargo-test(1)", "ctest(1)") is part of a name, never a figure.
MANUAL_PAGE = re.compile(r"\b[a-z][\w.+-]*\([1-9][a-z]?\)")


# "Is GraphQL still built into Starlette?", "Is that format stable yet?": whether a state lasts
# asks when it changed, which a version or a date says. Only a state ("is … still"): "can users still
# press Ctrl+C", "will pip still reuse the wheels" ask what holds despite a condition, and "a flag
# which still works" qualifies a noun.
_LASTS = re.compile(r"^(?:is|are)\b(?:(?!\b(?:which|who|whose|if|when|because)\b)[^?])*"
                    r"\b(?:still|yet|anymore|any longer|no longer)\b", re.I)


def answer_types(question: str) -> list[str]:
    """The kinds of value a question asks for ("duration", "number", "date", "version", "default"),
    or ["name"] for a which/who/what-thing question that asks for none of those; whether a state
    lasts ("Is GraphQL still built in?") asks for the version or date it changed. An opening
    condition ("When we call X, what …") is read past: the main clause says what is asked."""
    main = _CONDITION.sub("", question)
    types = [name for name, (asks, _) in ANSWER_TYPES.items() if asks.search(main)]
    if not types and any(_LASTS.search(s) for s in split_sentences(main)):
        types = ["version", "date"]
    # (after a condition, "…, which value does Config use?" is read as a clause, not an opening)
    opens = main == question and _OPENS_NAME.search(question)
    return types or (["name"] if opens or _ASKS_NAME.search(main) else [])


def sentence_names(sentence: str) -> list[str]:
    """The names `sentence` mentions: code spans, words with an inner capital, acronyms and
    capitalised words past its first word."""
    text = _LINK.sub(lambda m: m.group(1), sentence)
    return [next(g for g in m.groups() if g) for m in _NAME.finditer(text)]
