"""Roles and order: where the evidence has a claim's predicate act on the other of two names ("npm
ignores the .npmignore" / "the .gitignore is ignored"), or runs the claim's range the other way
("from left to right" / "from right to left"). Each check returns the words a footnote quotes, or ''.
Reads spaCy parses (`pipeline.verify.meaning.parse`, cached) and plain strings; no I/O, no label."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from pipeline import names as namelib
from pipeline.verify.meaning import (
    ANSWER_WORD,
    _lemma,
    _negated,
    _own_clause,
    _predicates,
    conditions,
    parse,
)


def _patients(token, names: Sequence[namelib.Name]) -> set[str]:
    """Of `names` (those of the token's text), the ones (normal form) a predicate acts on: those that
    begin in its object, or its subject when it is passive, not counting what is attached to that noun
    ("npm ignores the .npmignore", "the .gitignore is ignored"; not "AdTrav" in "hotels booked through
    AdTrav are charged")."""
    if token.pos_ != "VERB":
        return set()
    core: list = []
    for c in token.children:
        if c.dep_ in ("dobj", "nsubjpass", "oprd"):
            attached = {w.i for a in c.children if a.dep_ in ("prep", "acl", "relcl", "conj", "cc") for w in a.subtree}
            core += [w for w in c.subtree if w.i not in attached]
    return {n.key for n in names if any(w.idx <= n.start < w.idx + len(w.text) for w in core)}


def swapped(claim: str, sentences: Iterable[str]) -> str:
    """The evidence's words where a predicate of the claim acts on another of two names that both
    texts hold: "npm ignores the .npmignore and uses the .gitignore" against "the .gitignore is
    ignored, and only the .npmignore is used". The same predicate, said the same way, on the name the
    claim gives the other role, and nowhere on the claim's. '' when there is none."""
    claim_text = ANSWER_WORD.sub("", claim)
    claim_names = namelib.names(claim_text)
    claim_keys = {n.key for n in claim_names}
    if len(claim_keys) < 2:
        return ""
    docs = [(d, namelib.names(d.user_data.get("text", d.text))) for d in (parse(s) for s in sentences if s)]
    docs = [(d, found, conditions(d, unless=True)) for d, found in docs if len(claim_keys & {n.key for n in found}) >= 2]
    claim_doc = parse(claim_text)
    claim_conditions = conditions(claim_doc, unless=True)
    for t in _predicates(claim_doc):
        mine = _patients(t, claim_names) & claim_keys
        if not mine:
            continue
        agree, disagree = False, None
        for doc, found, doc_conditions in docs:
            for e in _predicates(doc):
                if t.i in claim_conditions and e.i not in doc_conditions:
                    continue  # "if you called unref()" is no statement about what "call ref()" acts on
                theirs = _patients(e, found) & claim_keys
                if _lemma(e) != _lemma(t) or _negated(e) != _negated(t) or not theirs:
                    continue
                if theirs & mine:
                    agree = True
                else:
                    disagree = disagree or e
        if disagree is not None and not agree:
            e, doc = disagree, disagree.doc
            skip = {w.i for c in e.children if c.dep_ in ("advcl", "cc", "advmod", "mark") for w in c.subtree}
            kept = sorted(w.i for w in _own_clause(e) if w.i not in skip and not w.is_punct)
            text = doc.user_data.get("text", doc.text)
            return text[doc[kept[0]].idx:doc[kept[-1]].idx + len(doc[kept[-1]].text)]  # "the `.gitignore` is ignored"
    return ""


_RANGE = re.compile(r"\bfrom (?:the )?([a-z]\w*) to (?:the )?([a-z]\w*)\b", re.IGNORECASE)


def reversed_order(claim: str, sentences: Iterable[str]) -> str:
    """The evidence's words where it runs the claim's "from X to Y" the other way ("processed from right
    to left" against "from left to right"), and never the claim's way; '' when none does."""
    wanted = {(a.lower(), b.lower()) for a, b in _RANGE.findall(claim) if a.lower() != b.lower()}
    if not wanted:
        return ""
    found = [(m.group(0), (m.group(1).lower(), m.group(2).lower())) for s in sentences for m in _RANGE.finditer(s)]
    if any(pair in wanted for _, pair in found):
        return ""
    return next((text for text, (a, b) in found if (b, a) in wanted), "")
