"""Roles and order: where the evidence has a claim's predicate act on the other of two names ("npm
ignores the .npmignore" / "the .gitignore is ignored"), or runs the claim's range the other way
("from left to right" / "from right to left"). Each check returns the words a footnote quotes, or ''.
Reads spaCy parses (`pipeline.verify.meaning.parse`, cached) and plain strings; no I/O, no label."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from pipeline import names as namelib
from pipeline.text import FUNCTION_WORDS, content_stems, stem, words
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
    claim gives the other role, in a sentence that names the claim's too, and nowhere on the claim's.
    '' when there is none."""
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
                elif mine & {n.key for n in found if e.sent.start_char <= n.start < e.sent.end_char}:
                    disagree = disagree or e  # the claim's name in another role of the same statement, not
                    # in a sentence about something else ("BSD-licensed headers" / "a BSD-style license")
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


# What puts one name ahead of another: "package-lock.json is preferred over npm-shrinkwrap.json",
# "the flag takes precedence over the config file", "A rather than B", "A runs before B".
_AHEAD = re.compile(r"\b(?:over|rather than|instead of|ahead of|before|after)\b", re.IGNORECASE)
_AHEAD_SPAN = 40  # characters from the connector to the names it sets apart (one clause)


def preference_reversed(claim: str, sentences: Iterable[str]) -> str:
    """The evidence's words where it puts the other of two names first around the same connector
    ("`npm-shrinkwrap.json` will be preferred over the `package-lock.json` file" against
    "package-lock.json is preferred over npm-shrinkwrap.json"), and never the claim's way; '' otherwise."""
    wanted = set(_ordered_pairs(ANSWER_WORD.sub("", claim)).values())
    if not wanted:
        return ""
    found = [(text, pair) for s in sentences for text, pair in _ordered_pairs(s).items()]
    if any(pair in wanted for _, pair in found):
        return ""
    return next((text for text, (a, b, how) in found if (b, a, how) in wanted), "")


def _ordered_pairs(text: str) -> dict[str, tuple[str, str, str]]:
    """For each connector of `text` (`_AHEAD`) with a name just before it and one just after, in the
    same clause: its words ("npm-shrinkwrap.json will be preferred over the package-lock.json") →
    (the name before, the name after, the connector)."""
    found = namelib.names(text)
    out = {}
    for m in _AHEAD.finditer(text):
        before = [n for n in found if m.start() - _AHEAD_SPAN <= n.start and n.start + len(n.text) <= m.start()
                  and not re.search(r"[.;:!?]\s", text[n.start:m.start()])]
        after = [n for n in found if m.end() <= n.start <= m.end() + _AHEAD_SPAN
                 and not re.search(r"[.;:!?,]\s", text[m.end():n.start])]
        if before and after and before[-1].key != after[0].key:
            a, b = before[-1], after[0]
            start = len(re.sub(r"[\w.@/`-]+$", "", text[:a.start]))  # the whole name: "npm-shrinkwrap.json"
            out[text[start:b.start + len(b.text)].replace("`", "")] = (a.key, b.key, m.group(0).lower())
    return out


# Words that set two things apart by order, age, size or place: a claim that swaps them around the
# same predicate says the opposite ("the filters that appear earlier take precedence over those that
# appear later" / "… later … take precedence over … earlier").
_SWAPPABLE = (("earlier", "later"), ("earliest", "latest"), ("first", "last"), ("before", "after"),
              ("newer", "older"), ("newest", "oldest"), ("higher", "lower"), ("highest", "lowest"),
              ("larger", "smaller"), ("largest", "smallest"), ("faster", "slower"), ("above", "below"),
              ("inner", "outer"), ("left", "right"), ("parent", "child"), ("minimum", "maximum"))
SWAP_MIN_SHARED = 2  # content words between the two that both texts share (the predicate they sit around)
_SWAP_SPAN = 12  # words between the two, at most (one clause)


def antonyms_swapped(claim: str, sentences: Iterable[str]) -> str:
    """The evidence's words where it puts the two words of an ordered pair (`_SWAPPABLE`) the other way
    around the same words (at least SWAP_MIN_SHARED content words between them in both), and never the
    claim's way: "filters that appear later in the command take precedence over filters that appear
    earlier" against "the ones that appear earlier … take precedence over those that appear later".
    '' when none does."""
    mine = words(ANSWER_WORD.sub("", claim))
    for a, b in _SWAPPABLE:
        for first, second in ((a, b), (b, a)):
            between = _between(mine, first, second)
            if not between or _between(mine, second, first):
                continue
            for sentence in sentences:
                theirs = words(sentence)
                if _between(theirs, first, second):
                    return ""  # the evidence says it the claim's way too
                shared = _between(theirs, second, first) & between
                if len(shared) >= SWAP_MIN_SHARED:
                    return _span(sentence, second, first)
    return _antonym_in_place(mine, sentences)


_IN_PLACE = (("highest", "lowest"), ("earliest", "latest"), ("newest", "oldest"), ("largest", "smallest"),
             ("first", "last"), ("minimum", "maximum"))
_SUBJECT_SPAN = 8  # words before the pair's word that say what it is said of


def _antonym_in_place(mine: Sequence[str], sentences: Iterable[str]) -> str:
    """The evidence's words where it gives the same thing the other extreme before the same noun: "the
    one in your home directory has the highest priority" / "the home directory is the lowest priority".
    What it is said of: SWAP_MIN_SHARED content words among the _SUBJECT_SPAN words before both; neither
    text may have the other's phrase, and a comparison ("… than …") is left alone."""
    read = [(sentence, words(sentence)) for sentence in sentences]
    for a, b in _IN_PLACE:
        for word, other in ((a, b), (b, a)):
            for i in _slots(mine, word):
                noun, subject = mine[i + 1], _said_of(mine, i)
                if any(mine[j + 1] == noun for j in _slots(mine, other)):
                    continue
                for sentence, theirs in read:
                    if any(theirs[j + 1] == noun for j in _slots(theirs, word)):
                        break  # the evidence has the claim's phrase too
                    for j in _slots(theirs, other):
                        if theirs[j + 1] == noun and len(_said_of(theirs, j) & subject) >= SWAP_MIN_SHARED:
                            m = re.search(rf"(?:[\w`'-]+\W+){{0,4}}\b{other}\W+{re.escape(noun)}\b", sentence, re.IGNORECASE)
                            return m.group(0) if m else sentence
    return ""


def _said_of(tokens: Sequence[str], i: int) -> set[str]:
    """What the word at `i` is said of: the content stems (not numbers) of the _SUBJECT_SPAN words before it."""
    return {s for s in content_stems(list(tokens[max(0, i - _SUBJECT_SPAN):i])) if not s.isdigit()}


def _slots(tokens: Sequence[str], word: str) -> list[int]:
    """Where `word` stands before a noun-like word and no "than" follows within three words."""
    return [i for i, w in enumerate(tokens[:-1]) if w == word and tokens[i + 1] not in FUNCTION_WORDS
            and "than" not in tokens[i + 1:i + 4]]


def _between(tokens: Sequence[str], first: str, second: str) -> set[str]:
    """The content words (stems) between `first` and the nearest `second` after it, within _SWAP_SPAN
    words; empty when the two are not there in that order."""
    for i, w in enumerate(tokens):
        if w == first:
            for j in range(i + 1, min(len(tokens), i + _SWAP_SPAN + 2)):
                if tokens[j] == second:
                    return {stem(t) for t in tokens[i + 1:j] if t not in FUNCTION_WORDS and not t.isdigit()} or {""}
    return set()


def _span(sentence: str, first: str, second: str) -> str:
    """The evidence's words from `first` to `second` ("later in the command take precedence over filters
    that appear earlier")."""
    m = re.search(rf"\b{first}\b.*?\b{second}\b", sentence, re.IGNORECASE | re.DOTALL)
    return m.group(0) if m else sentence
