"""Which predicates are opposites: a small lexicon of antonym pairs ("allow"/"forbid",
"required"/"optional", "before"/"after") and the negating prefixes ("unsafe"/"safe"). The flip check
(`pipeline.verify.flips.flipped`) reads it; a pure lookup, no parse.
"""

from __future__ import annotations

# Predicates whose lemmas are opposites: one in the claim where the evidence has the other flips it.
OPPOSITES = (
    ("allow", "forbid"), ("allow", "prohibit"), ("allow", "disallow"), ("permit", "forbid"), ("permit", "prohibit"),
    ("allowed", "prohibited"), ("allowed", "forbidden"), ("required", "optional"), ("require", "optional"),
    ("mandatory", "optional"), ("paid", "unpaid"), ("enable", "disable"), ("enabled", "disabled"),
    ("supported", "unsupported"), ("synchronous", "asynchronous"), ("before", "after"), ("increase", "decrease"),
    ("increase", "reduce"), ("include", "exclude"), ("accept", "reject"), ("public", "private"),
    ("always", "never"), ("keep", "forfeit"), ("paid", "forfeit"), ("valid", "invalid"), ("available", "unavailable"),
    ("encrypted", "unencrypted"), ("secure", "insecure"), ("automatic", "manual"), ("automatically", "manually"),
    ("succeed", "fail"), ("approve", "reject"), ("approve", "deny"), ("grant", "deny"), ("wrap", "unwrap"),
    ("work", "fail"), ("keep", "return"), ("keep", "discard"), ("keep", "remove"), ("keep", "delete"), ("keep", "revert"), ("retain", "revert"), ("retain", "remove"), ("retain", "discard"), ("store", "discard"),
    ("show", "hide"), ("visible", "hidden"), ("open", "close"), ("start", "stop"), ("add", "remove"),
    ("include", "omit"), ("inclusive", "exclusive"), ("local", "remote"), ("internal", "external"),
    ("minimum", "maximum"), ("present", "absent"), ("same", "different"), ("connect", "disconnect"),
    ("honor", "ignore"), ("honour", "ignore"), ("respect", "ignore"), ("obey", "ignore"),
    ("prefer", "ignore"), ("first", "last"), ("earliest", "latest"), ("oldest", "newest"),
    ("change", "unchanged"), ("change", "fixed"), ("apply", "ignore"),
)
# Predicates a negating prefix turns into their opposite when the rest is the other word: "unsafe" /
# "safe", "invalid" / "valid", "non-blocking" / "blocking", "unlock" / "lock" (adjectives; verbs with "un").
_ADJ_PREFIXES = ("un", "in", "im", "il", "ir", "non-", "non")
OPPOSITE: dict[str, set[str]] = {}
for _a, _b in OPPOSITES:
    OPPOSITE.setdefault(_a, set()).add(_b)
    OPPOSITE.setdefault(_b, set()).add(_a)


def opposed(a: str, b: str, pos: str = "ADJ") -> bool:
    """Whether two predicate lemmas are opposites: listed in OPPOSITES, or one is the other with a
    negating prefix (any of _ADJ_PREFIXES for adjectives, "un" for verbs) on a stem of 4+ letters."""
    if b in OPPOSITE.get(a, ()):
        return True
    prefixes = _ADJ_PREFIXES if pos == "ADJ" else ("un",)
    return any(len(y) - len(p) >= 4 and y == p + x for x, y in ((a, b), (b, a)) for p in prefixes)
