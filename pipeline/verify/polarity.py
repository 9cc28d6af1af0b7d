"""Polarity: whether a claim and the sentence it is aligned with differ in negation or direction ("is not
paid" / "is paid", "increases" / "reduces"), by words and, where words disagree, by the parse; and
whether the claim lifts a condition or a restriction the source sets ("even if" / "only if", "not just"
/ "only"). Plain strings in, booleans or the source's words out; `pipeline.verify.align` reads them."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import NamedTuple

from pipeline.text import (
    NEGATIONS,
    content_stems,
    markdown_sentences,
    negates_at,
    stem,
    terms,
    words,
)
from pipeline.verify import meaning
from pipeline.verify.candidates import content_words
from pipeline.verify.lemmas import lemmas
from pipeline.verify.opposites import opposed
from pipeline.verify.sides import statements

UP_WORDS = ("increas", "rise", "rising", "rose", "higher", "greater", "elevat", "enhanc", "improv", "promot", "boost", "accelerat", "grow", "grew", "gain", "raise", "larger", "more ", "exceed", "stimulat", "activat", "induc", "upregulat", "warm")
DOWN_WORDS = ("decreas", "reduc", "lower", "declin", "drop", "fall", "fell", "inhibit", "suppress", "impair", "diminish", "attenuat", "slow", "smaller", "fewer", "less ", "prevent", "block", "downregulat", "cool", "shrink", "loss")


# a bound on a figure ("no more than 72", "50 or fewer", "at least 2"); not a comparison ("lower than live birth")
_BOUND_WORDS = re.compile(r"\b(?:(?:no |not )?(?:more|less|fewer|greater|larger|smaller|higher|lower) than(?= [$€£¥]?\d)"
                          r"|(?<=\d)(?: [a-z]+)? or (?:more|less|fewer)|at (?:least|most))\b")


# Words with a direction's stem that name no change: a fallback, lowercase, a pointer "for more details".
_NO_CHANGE = re.compile(r"\b(?:fall(?:s|ing)? back|fell back|fallbacks?|lower-?cas\w*|for more (?:details|information|on|about|examples))\b")


def direction(text: str) -> int:
    """+1 when the text says more of something goes up than down ("increases"), -1 the reverse, 0 neither.
    A block that is a thing ("freed blocks", "a code block") blocks nothing: "block" counts as a verb only."""
    low = _BOUND_WORDS.sub(" ", text.lower())  # "no more than 72", "50 or fewer": a bound, no direction
    low = " " + _NO_CHANGE.sub(" ", low) + " "
    up = sum(low.count(" " + w) for w in UP_WORDS)
    down = sum(low.count(" " + w) for w in DOWN_WORDS if w != "block")
    if " block" in low:
        down += sum(t.lemma_.lower() == "block" and t.pos_ == "VERB" for t in meaning.parse(text))
    return (up > down) - (down > up)


# A quoted word or code is a value, not a negation: "values are 'lax' and 'none'", "`f(reason=None)`".
# (A phrase in double quotes stays: an answer may repeat "405 Method not allowed" without its quotes.)
# So is what a parenthesis gives as an example: "(e.g. platform any, abi none, etc)".
_QUOTED = re.compile(r"(?<!`)`[^`\n]{1,200}`(?!`)|(?<!\w)'[^'\s]{1,30}'"
                     r"|\((?:e\.g\.|i\.e\.|eg\b|for example|for instance|such as)[^()\n]{0,200}\)", re.IGNORECASE)


# Words that negate nothing where they stand: inside a code name ("SCHED_NONE", "ERR_PACKAGE_PATH_NOT_EXPORTED")
# or an option's value ("--error-limit=no"),
# and "the lack of X", which negates X, not what is said of it ("the lack of a shim causes the global npm to be used").
_NOT_A_NEGATION = re.compile(r"\b\w+_\w+\b|\S+=\S+|\b(?:the|a|an|this|that) (?:lack|absence) of\b", re.IGNORECASE)


# "keeps X out of Y", "leaves X out of Y", "leaves out X": X is not in Y, said without a negation word.
_KEPT_OUT = re.compile(r"\b(?:keep|keeps|kept|keeping|leave|leaves|leaving)\b(?=\s+out\b|[^.;:]{0,60}?\bout of\b)", re.IGNORECASE)


# The alternatives an "only" sets aside: "only heap memory, not memory from mmap, nor its code segments".
_ONLY_NOT = re.compile(r"\bonly\b[^.;:]*?,\s+(?:and\s+)?(not|nor)\b", re.IGNORECASE)


def _only_said(text: str) -> str:
    """`text` without the "not"/"nor" of the alternatives an "only" sets aside."""
    while (m := _ONLY_NOT.search(text)):
        text = text[:m.start(1)] + " " + text[m.end(1):]
    return text


def negated(text: str, unless: bool = True) -> bool:
    """Whether the text says something in the negative: it has a negation word, or an "unless" (or an
    "except" that restricts no negation), but not both ("unless" is "if not": "doesn't follow links
    unless told to" is "follows links when told to"). Presence, not parity: "Don't click the links,
    and don't delete it" is negative once.
    With `unless` false, an "unless" clause is an exception that leaves the negation as it is ("no
    longer available unless you export them" against "no longer available")."""
    text = meaning.ANSWER_WORD.sub("", text)  # "No, X isn't Y" negates once
    text = _KEPT_OUT.sub("not", _NOT_A_NEGATION.sub(" ", meaning.NOT_NEGATING.sub(" ", _QUOTED.sub(" ", text))))
    words = terms(text)
    negative = any(negates_at(words, i) for i in range(len(words)))
    restricts = negative and bool(meaning.EXCEPTION.search(text))
    if restricts:
        negative = False  # "never needed for any reason other than X" restricts: "only needed for X"
    # "all components except those marked X" is "all components unless marked X"
    return negative != (unless and ("unless" in words or ("except" in words and not restricts)))


def _focus(claim: str, sentence: str) -> list[str]:
    """The sentences of an aligned window that share the most content words with the claim (ties kept)."""
    parts = markdown_sentences(sentence)
    if len(parts) < 2:
        return [sentence]
    words = content_words(claim)
    shared = [len(words & content_words(p)) for p in parts]
    return [p for p, n in zip(parts, shared, strict=True) if n == max(shared)]


def _other_side_said(claim: str, sentence: str, negative: bool) -> bool:
    """Whether each statement of the claim (`sides.statements`; the claim `negative` or not when it
    makes one) restates one side of the statements the sentence joins, the side that shares strictly
    the most of its content words, with the same polarity: "otherwise Memcheck may report false errors" says what
    "Failure to select this does not cause stability problems, but may cause Memcheck to report false
    errors" says after its "but". A statement as near to two sides decides nothing ("…, and when it does
    make them, that is treated as a vulnerability" against "works to help code avoid mistakes, but not
    doing so is not considered a vulnerability")."""
    sides = statements(sentence)
    if len(sides) < 2:
        return False
    parts, side_words = statements(claim), [(content_words(side), side) for side in sides]
    said = False
    for part in parts:
        words = content_words(part)
        shared = sorted(((len(words & theirs), side) for theirs, side in side_words), key=lambda x: -x[0])
        (most, side), runner_up = shared[0], shared[1][0]
        if most == 0:
            continue  # "Yes": no statement of the sentence's
        if most == runner_up or negated(side) != (negative if len(parts) == 1 else negated(part)):
            return False
        said = True
    return said


def _negation_differs(claim: str, sentence: str, evidence: Sequence[str] = ()) -> bool:
    """Whether the claim is negated and the aligned `sentence` (its focus, `_focus`) not, or the other
    way round, both as written and once conditional clauses are set aside ("… is raised if it isn't
    supported" asserts no negation); where the claim is the negated side, the negation must be about
    the matter the evidence states:

    - a negation of the claim ("Sick leave isn't paid out, but …") differs only where the evidence
      sentences that state its predicate ("paid") and most of its words do not negate it; where no
      evidence sentence states the predicate, the claim adds something (not a flip).

    `evidence` is the claim's evidence passages: a negation of the claim may be backed by a sentence
    outside the aligned window. A claim's "unless" is "if not" against a sentence with a condition of
    its own ("doesn't follow links unless told to" says "follows links when told to"); against one without, it
    may add an exception, so the claim differs only if it does read either way ("no longer available
    unless exported" agrees with "no longer available")."""
    claim_words, words = terms(claim), terms(sentence)
    conditional = sum(w in meaning.CONDITION_WORDS for w in words) > sum(w in meaning.CONDITION_WORDS - {"unless"} for w in claim_words)
    readings = (True, False) if {"unless", "except"} & set(claim_words) and not conditional else (True,)
    return all(_negation_differs_as(claim, sentence, evidence, unless) for unless in readings)


def _negation_differs_as(claim: str, sentence: str, evidence: Sequence[str], unless: bool) -> bool:
    """`_negation_differs`, with the claim's "unless" read as a negation (`unless`) or as an exception."""
    focus = _focus(claim, sentence)
    negative = negated(claim, unless)
    if all(negated(s) == negative for s in focus):
        return False  # the common case, decided without a parse
    if all(_other_side_said(claim, s, negative) for s in focus):
        return False  # "… does not cause crashes, but may cause false errors": the claim says the second side
    if negative and not negated(_only_said(claim), unless) and all(_ONLY.search(s) and not negated(s) for s in focus):
        return False  # "only heap memory, not memory from mmap" / "only heap memory": the "not" says "only" again
    if any(restated_by_opposite(claim, s) for s in focus):
        return False  # "keeps the package" / "not to remove the package"
    if all(bool(_THEN.search(s)) != bool(_THEN.search(claim)) for s in focus):
        return False  # "earlier versions didn't have a branch predictor": then, not now
    if any((found := _default_reading(claim, s)) and found[0] for s in focus):
        return False  # "by default it doesn't check …" / "[default: no]: Controls whether it checks …"
    stated = [s for s in focus if meaning.states(s)]  # a heading ("Meals and Incidental Expenses") asserts nothing
    asserts_negative = negated(meaning.asserted(claim), unless)
    if not stated or not all(negative != negated(s) and asserts_negative != negated(meaning.asserted(s))
                             for s in stated):
        return False
    if not asserts_negative and all(_only_fails(s, claim) for s in stated):
        return False  # "the option fails the clone when …": what the option does, no negation of "added an option"
    if asserts_negative:
        scopes = meaning.negation_scopes(claim)
        if any(negated(s) and core & lemmas(s) for s in markdown_sentences(sentence) for _, core in scopes):
            return False  # the window's other sentence says it: "… is not allowed to have crates which …"
        sentences = [s for text in evidence for s in markdown_sentences(text)] or markdown_sentences(sentence)
        return not scopes or any(_unbacked(words, core, sentences) for words, core in scopes)  # no scope: "unless"
    if all(_side_negations_only(s) for s in stated):  # "learned to fetch everything without telling the other
        cores = [core for s in stated for _, core in meaning.negation_scopes(s)]  # side": a negation in a clause
        return any(core & lemmas(claim) for core in cores)  # beside the statement, of what the claim never says
    return True


_SIDE_CLAUSES = frozenset({"relcl", "acl", "pcomp", "advcl"})


def _side_negations_only(sentence: str) -> bool:
    """Whether every negation the sentence asserts sits in a clause beside its statement: "without …", or
    within a relative, participle or adverbial clause ("using Python that has not been modified by a
    redistributor")."""
    cues = [t for t in meaning.parse(meaning.asserted(sentence))
            if (t.lower_ in NEGATIONS or t.lower_.endswith("n't")) and t.dep_ != "intj"]
    return bool(cues) and all(t.lower_ == "without" or any(a.dep_ in _SIDE_CLAUSES for a in t.ancestors) for t in cues)


_FAILS = frozenset({"fail", "fails", "failed", "failing"})


def _only_fails(sentence: str, claim: str) -> bool:
    """Whether the sentence's only negation is a "fail" the claim does not speak of: the behaviour it
    describes ("--reject-shallow fails the clone"), not a negation of what the claim says."""
    found = [w for w in terms(sentence) if w in NEGATIONS]
    if re.search(r"\bfail(?:s|ed|ing)? to\b", sentence, re.IGNORECASE):
        return False  # "fails to improve survival" negates the improving
    return bool(found) and set(found) <= _FAILS and not _FAILS & set(terms(claim))


# A statement about an earlier time ("earlier versions of X didn't have Y", "X used to …"): no flip of
# one about now.
_THEN = re.compile(r"\b(?:earlier|older|previous|prior|past|old) (?:versions?|releases?)\b|\bprior to (?:version |v)?\d"
                   r"|\bbefore (?:version |v)\d|\bused to\b|\bin the past\b|\bformerly\b|\bhistorically\b", re.IGNORECASE)


def _unbacked(words: str, core: frozenset[str], sentences: Sequence[str]) -> bool:
    """Whether the sentences that state a negated predicate (`core` lemmas) and most of its clause's
    `words` state it without a negation. False when no sentence states the predicate."""
    scope = content_words(words) - NEGATIONS
    most = max(1, (len(scope) + 1) // 2)  # "Visual Studio won't produce the file" is not stated by "generates a … file"
    near = sorted(((len(scope & content_words(s)), s) for s in dict.fromkeys(sentences)), key=lambda x: -x[0])
    about = [(n, s) for n, s in near[:12] if n >= most and core & lemmas(s)]  # parse only the closest
    if not about:
        return False
    best = [s for n, s in about if n == about[0][0]]
    # a negation in the sentence's own condition backs it too: "If a callback is not given, the error
    # is emitted" states what "without a callback it is emitted" does
    return not any(negated(s) or predicate_negated(s, core) for s in best)


_CONDITION_MARKS = meaning.CONDITION_WORDS - {"unless"}


class _Condition(NamedTuple):
    """An "if"/"when" clause: said "even if", said "only if" ("only" before the mark or on the
    predicate it conditions), negated, its content lemmas, its words as written."""

    even: bool
    only: bool
    negative: bool
    words: set[str]
    text: str


def _marked_conditions(text: str) -> list[_Condition]:
    """Each "if"/"when" clause of `text` (`_Condition`)."""
    doc = meaning.parse(meaning.ANSWER_WORD.sub("", text))
    original = doc.user_data.get("text", doc.text)
    out = []
    for mark in doc:
        if mark.lower_ not in _CONDITION_MARKS or not (mark.dep_ == "mark" or (mark.dep_ == "advmod" and mark.head.dep_ == "advcl")):
            continue  # "if …", and "when …" which the parser may read as an adverb of its clause
        head, before = mark.head, doc[mark.i - 1].lower_ if mark.i > 0 else ""
        clause = sorted(head.subtree, key=lambda t: t.i)
        out.append(_Condition(
            even=before == "even" or any(c.dep_ == "advmod" and c.lower_ == "even" for c in head.children),
            only=before == "only" or any(c.lower_ == "only" for c in head.head.children if head.head.i != head.i),
            negative=any(t.dep_ == "neg" or t.lower_ in NEGATIONS for t in clause),
            words={t.lemma_.lower() for t in clause if t.pos_ in meaning.CONTENT_POS and not t.is_stop},
            text=original[clause[0].idx:clause[-1].idx + len(clause[-1].text)],
        ))
    return out


def condition_flipped(claim: str, sentences: Sequence[str]) -> str:
    """The evidence's condition where the claim says something holds "even if" a condition is not met
    and the evidence that it holds "only if" (or "only when") it is: "rewritten even if its content has
    not changed" / "updated only if its content is changed"; '' otherwise."""
    conceded = [c for c in _marked_conditions(claim) if c.even]
    if not conceded:
        return ""
    for sentence in sentences:
        for source in _marked_conditions(sentence):
            if source.only and any(c.negative != source.negative and c.words & source.words for c in conceded):
                return source.text
    return ""


# A restriction lifted: "not just the Makefile and Ninja generators" against "only by Makefile Generators
# and Ninja Generators", or the other way round. "only if"/"only when" is a condition (above), "not
# only … but" and "if only" restrict nothing.
_LIFTED = re.compile(r"\bnot (?:just|only|solely|exclusively|merely|limited to|restricted to)\b", re.IGNORECASE)
_ONLY = re.compile(r"(?<!\bnot )(?<!\bif )\bonly\b(?! (?:if|when|once|after|before|unless|until|then)\b)", re.IGNORECASE)
_RESTRICTED_SPAN = 6  # words after (and, for "A only", before) the restricting word that say what it restricts


def restriction_flipped(claim: str, sentences: Sequence[str]) -> str:
    """The evidence's restriction where the claim lifts it ("implemented by all generators, not just the
    Makefile and Ninja generators" / "implemented only by Makefile Generators and Ninja Generators"), or
    its "not just …" where the claim restricts to "only": both about the same thing (a content word
    shared near the two words). '' otherwise."""
    for sentence in sentences:
        for lifted, only in ((claim, sentence), (sentence, claim)):
            for m in _LIFTED.finditer(lifted):
                near = _restricted(lifted, m.start(), m.end())
                for o in _ONLY.finditer(only):
                    if near & _restricted(only, o.start(), o.end()):
                        at = o if only is sentence else m  # the source's own words
                        return _phrase(sentence, at.start(), at.end())
    return _exception_flipped(claim, sentences)


_EXCEPT = re.compile(r"\b(?:except(?: for)?|other than|apart from|save for)\b", re.IGNORECASE)
_ACTION_SPAN = 8  # words before "except" / "only" in which the action both restrict must stand


def _exception_flipped(claim: str, sentences: Sequence[str]) -> str:
    """The evidence's "only X" where the claim acts on everything "except X", or its "except X" where
    the claim says "only X": the same action (a content word just before both) on the same X (the first
    content word after both). "removes everything in the target directory except the doc directory" /
    "remove only the `doc` directory". '' otherwise."""
    for sentence in sentences:
        for excepting, only in ((claim, sentence), (sentence, claim)):
            for m in _EXCEPT.finditer(excepting):
                after, before = _first_content(excepting[m.end():]), content_stems(words(excepting[:m.start()]))[-_ACTION_SPAN:]
                for o in _ONLY.finditer(only):
                    if after and after == _first_content(only[o.end():]) \
                            and set(before) & set(content_stems(words(only[:o.start()]))[-3:]):
                        at = o if only is sentence else m
                        return _phrase(sentence, at.start(), at.end())
    return ""


def _first_content(text: str) -> str:
    """The stem of the first content word of `text` ("the `doc` directory" → "doc")."""
    return next(iter(content_stems(words(text))), "")


# An option's switch and its default ("`--check-stack-var=<yes|no> [default: no]`: Controls whether DRD
# detects …", "Default: false. Whether to …"); and what a claim says happens by default.
_SWITCH_DEFAULT = re.compile(r"\bdefault(?: value)?(?: is)?\s*[:=]?\s*[`'\"]?(yes|no|true|false|on|off|enabled|disabled)\b",
                             re.IGNORECASE)
_WHETHER = re.compile(r"\b(?:whether|if)\b(?! (?:set|given|specified|enabled|present)\b)([^.;]*)", re.IGNORECASE)
_BY_DEFAULT = re.compile(r"\bby default\b", re.IGNORECASE)
_ON = frozenset({"yes", "true", "on", "enabled"})


def default_flipped(claim: str, sentences: Sequence[str]) -> str:
    """An option entry's default where the claim says the other happens by default ("By default DRD
    checks stack variables for races" / "`--check-stack-var=<yes|no> [default: no]`: Controls whether
    DRD detects data races on stack variables"): the claim's "by default" clause and the entry's
    "whether …" share two content words. '' otherwise."""
    for sentence in sentences:
        if (found := _default_reading(claim, sentence)) and not found[0]:
            return found[1]
    return ""


def _default_reading(claim: str, sentence: str) -> tuple[bool, str] | None:
    """Whether the claim's "by default" clause agrees with an option entry's default in `sentence`, and
    the entry's words for it; None when the sentence is no such entry about the same thing."""
    pieces = re.split(r"[,;:]\s+(?:so|and|but|which|since|because)?\b|\.\s", claim)
    k = next((i for i, c in enumerate(pieces) if _BY_DEFAULT.search(c)), None)
    switch, whether = _SWITCH_DEFAULT.search(sentence), _WHETHER.search(sentence)
    if k is None or not switch or not whether:
        return None
    said, about = pieces[k], pieces[k]
    for before in reversed(pieces[max(0, k - 2):k]):  # its subject before an aside: "Stack profiling, on the
        if len(words(before)) > 5:  # other hand, is on by default"
            break
        about = before + " " + about
    shared = {stem(w) for w in content_words(about)} & {stem(w) for w in content_words(whether.group(1))}
    if len(shared - {"default"}) < 2:
        return None
    states = _states(about)  # "stack profiling is off by default": off, with no negation word
    on = states[-1][1] if states else not negated(_BY_DEFAULT.sub(" ", said))
    return on == (switch.group(1).lower() in _ON), switch.group(0).strip()


def _restricted(text: str, start: int, end: int) -> set[str]:
    """The stems of the content words around a restricting word: what it restricts."""
    return set(content_stems(words(text[end:])[:_RESTRICTED_SPAN] + words(text[:start])[-3:]))


def _phrase(sentence: str, start: int, end: int) -> str:
    """The restricting words and what follows them, up to the clause's end: "only by Makefile Generators
    and Ninja Generators"."""
    rest = re.split(r"[.;:,(]\s", sentence[end:] + " ", maxsplit=1)[0]
    return (sentence[start:end] + rest).strip().rstrip(".")


def predicate_negated(text: str, core: frozenset[str]) -> bool:
    """Whether `text` asserts one of the predicate lemmas `core` in the negative by its parse, which sees
    what a negation word does not: "is used in lieu of reading the tree", "prevents writing the file"."""
    return any(t.lemma_.lower() in core and meaning._negated(t) for t in meaning.parse(meaning.asserted(text)))


def restated_by_opposite(claim: str, sentence: str) -> bool:
    """Whether the sentence says a predicate of the claim as the negation of its opposite, about the
    same thing: "--no-save keeps the package in package.json" / "--no-save tells npm not to remove
    the package from package.json". Such a pair differs in negation and says the same."""
    claim_doc, doc = meaning.parse(meaning.ANSWER_WORD.sub("", claim)), meaning.parse(sentence)
    for t in meaning._predicates(claim_doc):
        arguments = meaning._arguments(t)
        for e in meaning._predicates(doc):
            if (opposed(meaning._lemma(t), meaning._lemma(e), t.pos_ if t.pos_ == e.pos_ else "")
                    and meaning._negated(e) != meaning._negated(t) and not (meaning._quoted(e) or meaning._code(e))
                    and meaning._same_arguments(t, e, arguments, meaning._arguments(e))):
                return True
    return False


# A thing's on/off state after a copula: "leak checking is on by default", "colour output is not enabled
# unless …", "the option defaults to false". The state ends its clause or is followed by what qualifies
# it, never by a noun it would be a preposition of ("is on the list", "is off the main thread").
_STATE = re.compile(
    r"\b(?:(?P<modal>can|could|may|might|must|should|will|would|to)\s+)?"
    r"(?:(?:is|are|be|been|being|was|were|stays?|remains?)\s+(?P<neg>not\s+|never\s+)?(?:(?:turned|switched|set|left|kept)\s+)?"
    r"|defaults?\s+to\s+[`'\"]?)"
    r"(?P<state>on|off|enabled|disabled|true|false|yes|no)\b[`'\"]?"
    r"(?=\s*(?:$|[.,;:)!]|\s(?:by default|unless|when|whenever|if|until|except|again|initially|automatically|out of the box)\b))",
    re.IGNORECASE)
_STATE_ON = frozenset({"on", "enabled", "true", "yes"})
_STATE_CONDITION = re.compile(r"^\s*(?:by default\s*)?,?\s*(?:unless|when|whenever|if|until|except)\b", re.IGNORECASE)
_CLAUSE_START = re.compile(r"[,;:(]\s*|(?<!\S)(?:and|but|or|so|while|whereas|although|though|because|which)\s", re.IGNORECASE)
_STATE_GENERIC = frozenset({"default", "option", "setting", "value", "flag"})


def _states(text: str) -> list[tuple[frozenset[str], bool, bool, str]]:
    """Each on/off state `text` asserts: the stems of its subject's content words, whether it is on,
    whether a condition follows it ("… unless the output is a pipe"), and the words as written from the
    subject on. A modal's state ("can be turned on") is a possibility, not a state: left out."""
    out = []
    for m in _STATE.finditer(text):
        if m.group("modal"):
            continue
        starts = [c.end() for c in _CLAUSE_START.finditer(text, 0, m.start())]
        start = starts[-1] if starts else 0
        subject = re.sub(r"(?i)^\s*by default\b", " ", text[start:m.start()])
        stems = frozenset(stem(w) for w in content_words(subject)) - _STATE_GENERIC
        if not stems:
            continue  # "it is on": whose state, the parse would have to say
        on = (m.group("state").lower() in _STATE_ON) != bool(m.group("neg"))
        out.append((stems, on, bool(_STATE_CONDITION.match(text[m.end():])), text[start:m.end()].strip()))
    return out


def state_flipped(claim: str, sentences: Sequence[str]) -> str:
    """The evidence's words where the claim says a thing is on (enabled, true) and the evidence that the
    same thing is off, or the other way round: "Leak checking is off by default" / "leak checking is
    on by default". The same thing: one subject's content words are all the other's ("the strict
    option" / "strict mode", not "debug output" / "colour output"), and both or neither carry a
    condition. '' where no such pair, or where another sentence states the claim's state."""
    claimed = _states(meaning.ANSWER_WORD.sub("", claim))
    if not claimed:
        return ""
    found = [s for sentence in sentences for s in _states(sentence)]
    for stems, on, conditional, _ in claimed:
        about = [(s_on, words) for s_stems, s_on, s_conditional, words in found
                 if (stems <= s_stems or s_stems <= stems) and s_conditional == conditional]
        if about and all(s_on != on for s_on, _ in about):
            return about[0][1]
    return ""


# A behaviour the source says is past: "X used to refuse Y, which has been corrected", "X used to
# crash …; this has been fixed". A claim that states it as what happens now flips it.
_USED_TO = re.compile(r"\bused to (\w+)([^.;]*)", re.IGNORECASE)
_CORRECTED = re.compile(r"\b(?:has|have) been (?:corrected|fixed|changed|removed|reverted|addressed|stopped)\b"
                        r"|\bno longer\b|\bnow\b|\bis fixed\b|\bwas fixed\b", re.IGNORECASE)
_PAST_SAID = re.compile(r"\bused to\b|\bpreviously\b|\bformerly\b|\bno longer\b|\buntil\b|\bbefore\b|\bearlier\b"
                        r"|\b(?:corrected|fixed|anymore|any more|had|was|were|did)\b", re.IGNORECASE)
PAST_SHARED_WORDS = 2  # content words (besides the verb) a claim shares with the past behaviour


def past_flipped(claim: str, sentences: Sequence[str]) -> str:
    """The source's words where it says a behaviour is past ("`git branch -D` used to refuse to remove a
    broken ref, which has been corrected") and the claim states that behaviour as the present ("git
    branch -D refuses to remove a broken branch ref"): the verb and PAST_SHARED_WORDS more of its
    words, and nothing in the claim that places it in the past. '' otherwise."""
    text = meaning.ANSWER_WORD.sub("", claim)
    if _PAST_SAID.search(text):
        return ""
    claim_stems = {stem(w) for w in words(text)}
    for sentence in sentences:
        if not _CORRECTED.search(sentence):
            continue
        for m in _USED_TO.finditer(sentence):
            if stem(m.group(1).lower()) not in claim_stems:
                continue
            shared = {stem(w) for w in content_words(m.group(2))} & claim_stems
            if len(shared) >= PAST_SHARED_WORDS:
                return " ".join(sentence[m.start():].split()[:12])
    return ""
