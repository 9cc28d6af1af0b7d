"""Roles and order: where the evidence has a claim's predicate act on the other of two names ("npm
ignores the .npmignore" / "the .gitignore is ignored"), or runs the claim's range the other way
("from left to right" / "from right to left"), puts the other side ahead ("command-specific sections
override the global one"), does two actions in the other order ("copies, then deletes"), or keeps
what the claim sets aside ("the current system, and not the most restrictive constraints"). Each
check returns the words a footnote quotes, or ''.
Reads spaCy parses (`pipeline.verify.meaning.parse`, cached) and plain strings; no I/O, no label."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from pipeline import names as namelib
from pipeline.text import FUNCTION_WORDS, WORD, content_stems, stem, words
from pipeline.verify.meaning import (
    _LIGHT,
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


# What puts one thing ahead of another, and what puts the second ahead (a passive names the winner
# second): precedence ("command-specific sections override the global section", "the exclusion takes
# precedence over dependencies", "… is overridden by …"), time ("the local file is newer than the
# copy", "… was modified more recently than …"), speed.
_ORDERINGS = {
    "precedence": (r"overrides?|overrode|supersedes?|trumps?|outranks?|takes? (?:precedence|priority) over"
                   r"|(?:has|have) (?:precedence|priority) over|wins? over|(?:is|are) preferred (?:over|to)"
                   r"|(?:has|have) (?:a )?higher priority than",
                   r"(?:is|are) (?:overridden|superseded|trumped|outranked) by|(?:has|have) (?:a )?lower priority than"),
    "time": (r"newer than|more recent(?:ly)? than|later than", r"older than|less recent(?:ly)? than|earlier than"),
    "speed": (r"faster than|quicker than", r"slower than"),
}
_AHEAD_OF = {kind: (re.compile(rf"\b(?:{ahead})\b", re.IGNORECASE), re.compile(rf"\b(?:{behind})\b", re.IGNORECASE))
             for kind, (ahead, behind) in _ORDERINGS.items()}
_SIDE_WORDS = 8  # words on each side of the connector, within its clause


def precedence_reversed(claim: str, sentences: Iterable[str]) -> str:
    """The evidence's words where it puts the other side ahead (`_ORDERINGS`): "values in command-specific
    sections override values in the global section" against "a value in the [global] section overrides
    the same name in a command-specific section"; "the local file is newer than the S3 object" against
    "the S3 object was modified more recently than the local file". What sets the claim's first side
    apart from its second (its own content words) is on the evidence's second side only, and what sets
    the second apart on the first side, more of them than the other way round (sides that share words
    such as "the same name" are read by the balance), for the same kind of order; no sentence says it
    the claim's way. '' when none does."""
    found = ""
    for kind, ahead, behind, _ in _ordered(ANSWER_WORD.sub("", claim)):
        mine, other = ahead - behind, behind - ahead
        if not mine or not other:
            continue
        for sentence in sentences:
            for their_kind, first, second, text in _ordered(sentence):
                if their_kind != kind:
                    continue
                first, second = first - second, second - first
                agree, disagree = len(mine & first) + len(other & second), len(mine & second) + len(other & first)
                if agree > disagree:
                    return ""  # the evidence says it the claim's way (too)
                if disagree > agree and mine & second and other & first:
                    found = found or text
    return found


def _ordered(text: str) -> list[tuple[str, set[str], set[str], str]]:
    """Each "X overrides Y" of `text` (`_ORDERINGS`): (the kind of order, the content stems of the side
    put ahead, those of the other, the words that say it), each side read up to _SIDE_WORDS words
    within its clause."""
    out = []
    for kind, (ahead_of, behind) in _AHEAD_OF.items():
        for m in [*ahead_of.finditer(text), *behind.finditer(text)]:
            left = _CLAUSE_BREAK.split(text[:m.start()])[-1]
            right = _CLAUSE_BREAK.split(text[m.end():])[0]
            before = content_stems(words(left))[-_SIDE_WORDS:]
            after = content_stems(words(right))[:_SIDE_WORDS]
            if not before or not after:
                continue
            first, second = (set(after), set(before)) if behind.fullmatch(m.group(0)) else (set(before), set(after))
            out.append((kind, first, second, (left.strip() + " " + m.group(0) + right).strip().rstrip(".")))
    return out


_CLAUSE_BREAK = re.compile(r"[,;:()]|\.\s|\s[-*•]\s|\b(?:if|when|whenever|and|or|but|so|because|while|whereas)\b",
                           re.IGNORECASE)  # … and a list item's bullet


def sequence_reversed(claim: str, sentences: Iterable[str]) -> str:
    """The evidence's sentence where the claim's actions come in the other order: "mv deletes the source
    first and only then writes it to the destination" against "copies the source … to the destination
    and then deletes the source". An action (verb lemma) the claim does first is done second in the
    evidence, or one it does second is done first, and none keeps its place. '' when none does."""
    first, second = _sequence(parse(ANSWER_WORD.sub("", claim)))
    if not first or not second:
        return ""
    for sentence in sentences:
        doc = parse(sentence)
        theirs_first, theirs_second = _sequence(doc)
        if first & theirs_first or second & theirs_second:
            return ""  # the evidence does them the claim's way
        if first & theirs_second or second & theirs_first:
            return doc.user_data.get("text", doc.text).strip()
    return ""


def _sequence(doc) -> tuple[set[str], set[str]]:
    """The verb lemmas done first and second where the text orders two actions: "copies it and then
    deletes it" (`then` on the second verb), "deletes it before copying it" / "…, after it is copied"
    (`before`/`after` opening a clause or a gerund under the first verb). Empty sets when it has none;
    an "after the trip" orders no actions."""
    for t in doc:
        head = t.head
        if t.lower_ == "then" and t.dep_ == "advmod":
            after = next((v for v in t.doc[t.i + 1:t.i + 4] if _acts(v)), None)
            before = next((v for v in reversed(t.doc[t.sent.start:t.i]) if _acts(v) and v.dep_ != "amod"
                           and _lemma(v) not in _LIGHT and not _conditional(v)), None)
            if after is None or before is None:
                continue
            earlier, later = {_lemma(before)}, {_lemma(after)}
        elif t.lower_ in ("before", "after") and t.dep_ == "mark" and head.pos_ == "VERB" and _acts(head.head):
            earlier, later = {_lemma(head.head)}, {_lemma(head)}
        elif t.lower_ in ("before", "after") and t.dep_ == "prep" and _acts(head):
            done = [c for c in t.children if c.dep_ == "pcomp" and c.pos_ == "VERB"]
            if not done:
                continue
            earlier, later = {_lemma(head)}, {_lemma(done[0])}
        else:
            continue
        earlier, later = earlier - _LIGHT - later, later - _LIGHT - earlier
        if earlier and later:
            return (later, earlier) if t.lower_ == "after" else (earlier, later)  # "writes it after deleting"
    return set(), set()


def _conditional(verb) -> bool:
    """Whether a verb heads or sits in an "if"/"when"/"unless" clause (a condition, not an action done)."""
    return any(c.dep_ == "mark" and c.lower_ in ("if", "when", "unless") for v in (verb, *verb.ancestors) for c in v.children)


def _acts(token) -> bool:
    """Whether a token is a verb, or a main word the tagger took for a noun while it has an object or a
    verb joined to it ("The command copies the file", "… copies it and then deletes it": "copies")."""
    return token.pos_ == "VERB" or token.dep_ == "ROOT" and any(
        c.dep_ == "dobj" or c.dep_ == "conj" and c.pos_ == "VERB" for c in token.children)


# A list the source gives in order ("The order in which configuration values are read is: * From an
# environment variable. * From the `.env` file. * The default value"), and what orders a claim's parts.
_ORDER_LEAD = re.compile(r"\b(?:order|precedence|priority|sequence)\b[^:]{0,80}:\s", re.IGNORECASE)
_ITEM = re.compile(r"(?:^|\s)(?:[*•-]|\d+[.)])\s+")
_NEXT = re.compile(r"\b(?:and then|then|followed by|after that|finally)\b", re.IGNORECASE)
_PART_WORDS = 4  # content words before an ordering word that name the part it orders


def list_order_reversed(claim: str, sentences: Iterable[str]) -> str:
    """The source's ordered list where the claim names two of its items in the other order: "reads a
    value from the .env file first, then from the environment" against "The order in which values are
    read is: * From an environment variable. * From the `.env` file. * …". Each part of the claim
    (the last words before "then", "followed by", …, and the words after the last of them) stands
    for the one item whose own words it shares most; '' when no two parts are reversed."""
    pieces = [content_stems(words(p)) for p in _NEXT.split(ANSWER_WORD.sub("", claim))]
    if len(pieces) < 2:
        return ""
    parts = [p[-_PART_WORDS:] for p in pieces[:-1]] + [pieces[-1][:_PART_WORDS]]  # the last part opens its piece
    for sentence in sentences:
        lead = _ORDER_LEAD.search(sentence)
        items = [set(content_stems(words(i))) for i in _ITEM.split(sentence[lead.end():])] if lead else []
        items = [i for i in items if i]
        if len(items) < 2:
            continue
        own = [item - set().union(*(o for o in items if o is not item)) for item in items]
        places = [_item_of(set(part), own) for part in parts]
        places = [p for p in places if p is not None]
        if any(a > b for a, b in zip(places, places[1:], strict=False)):
            return sentence.strip()
    return ""


def _item_of(part: set[str], own: list[set[str]]) -> int | None:
    """The index of the one item whose own words (`own`: those in no other item) `part` shares most;
    None on a tie."""
    shared = [len(part & mine) for mine in own]
    best = max(shared)
    return shared.index(best) if best and shared.count(best) == 1 else None


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


# What keeps one thing and sets another aside: "A rather than B", "A instead of B", "A, and not B".
_SET_ASIDE = re.compile(r"\s+(?:rather than|instead of)\s+|,\s+(?:and\s+)?not\s+", re.IGNORECASE)
_SIDE_END = re.compile(r"[.;:!?]\s|\s\(|[.;:!?]?$|,\s")  # a side runs to its clause's end (or an aside)


def alternative_reversed(claim: str, sentences: Iterable[str]) -> str:
    """The evidence's words where it keeps what the claim sets aside and sets aside what it keeps:
    "defaults to the most restrictive value rather than to the current system" against "default to the
    current system/interpreter, and not to the most restrictive constraints". Each side is its own
    content words (the kept side: as many of the last words before the connector as the set-aside side
    has) less those both sides have ("the wheel cache rather than the HTTP cache"), and neither side
    may share a word with the same side of the other text. '' otherwise."""
    mine = _alternatives(ANSWER_WORD.sub("", claim))
    for sentence in sentences:
        for kept, aside, quote in _alternatives(sentence):
            for my_kept, my_aside, _ in mine:
                if my_kept & aside and my_aside & kept and not my_kept & kept and not my_aside & aside:
                    return quote
    return ""


def _alternatives(text: str) -> list[tuple[set[str], set[str], str]]:
    """(the kept side's stems, the set-aside side's, the words from one to the other) per connector."""
    out = []
    for m in _SET_ASIDE.finditer(text):
        end = _SIDE_END.search(text, m.end()).start()  # the pattern matches at the text's end at the latest
        aside = content_stems(words(text[m.end():end]))
        before = [(w.start(), stem(w.group(0).lower())) for w in WORD.finditer(text[:m.start()])
                  if len(w.group(0)) > 2 and w.group(0).lower() not in FUNCTION_WORDS]
        kept = before[-len(aside):] if aside else []
        if kept:  # quoted from up to three words before the kept side, in its clause
            lead = [w.start() for w in WORD.finditer(text[:kept[0][0]])][-3:]
            start = next((at for at in lead if not re.search(r"[.;:!?,]", text[at:kept[0][0]])), kept[0][0])
            mine, other = {s for _, s in kept}, set(aside)  # the words that tell the sides apart
            out.append((mine - other, other - mine, text[start:end].strip()))
    return out
