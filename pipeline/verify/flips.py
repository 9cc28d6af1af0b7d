"""Flips: where the evidence negates a predicate of the claim, or states its opposite, about the same
thing ("plugins are designed to not perform any I/O" against "plugins perform I/O"), with the source's
words for the footnote. Reads spaCy parses (`pipeline.verify.meaning.parse`, cached); no I/O, no label.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable

from pipeline.verify.meaning import (
    _LIGHT,
    _ORDER,
    ANSWER_WORD,
    CONTENT_POS,
    EXCEPTION,
    _arguments,
    _code,
    _governed,
    _lemma,
    _negated,
    _own_clause,
    _predicates,
    _quoted,
    _same_arguments,
    _same_subject,
    _word,
    condition_count,
    conditions,
    parse,
)
from pipeline.verify.opposites import opposed


def _clause(token, limit: int = 20) -> str:
    """The source's own words for a predicate: its clause (subject, negation, auxiliaries, complements),
    cut after `limit` words."""
    doc = token.doc
    head = token.head if token.dep_ in ("acomp", "xcomp", "attr") and token.head.lemma_ in _LIGHT else token
    span = [t.i for t in token.subtree] + [c.i for c in head.children if c.dep_ in ("nsubj", "nsubjpass", "neg", "aux", "auxpass")]
    span += [t.i for c in head.children if c.dep_ in ("nsubj", "nsubjpass") for t in c.subtree]
    if token.dep_ == "mark":  # "before" introducing a clause: the clause it introduces
        span = [token.i, *(t.i for t in token.head.subtree if t.i > token.i)]
    left, right = min(span), max(span) + 1
    right = min(right, left + limit)
    while right > left + 1 and doc[right - 1].is_punct:
        right -= 1
    return doc.user_data.get("text", doc.text)[doc[left].idx:doc[right - 1].idx + len(doc[right - 1].text)]


def flipped(claim: str, sentences: Iterable[str]) -> str:
    """The evidence's words where a predicate of the claim is negated, or replaced by its opposite,
    about the same thing, or ''.

    'plugins are designed to not perform any I/O' flips 'plugins perform I/O'. "The same thing": the
    two share a word of their clauses besides the predicate, and a subject both name has a word in
    common. A flip counts only where no sentence states that predicate the claim's way."""
    if EXCEPTION.search(claim):
        return ""
    claim_doc = parse(ANSWER_WORD.sub("", claim))
    claim_conditions = conditions(claim_doc, unless=True)
    claim_means = _means(claim_doc)
    claim_condition_count = condition_count(claim_doc, unless=False)
    sentence_docs = [(d, conditions(d, unless=True), _means(d)) for d in (parse(s) for s in sentences if s and not EXCEPTION.search(s))]
    claim_words = {w.lower_ for w in claim_doc}
    for t in _predicates(claim_doc):
        lemma = _lemma(t)
        if _quoted(t) or _until(t) or lemma in _ORDER and _ORDER - {lemma} <= claim_words:
            continue  # a term in quotes; "did not start until 1.37" dates a start; "what is about to happen before
            # the call, and what happened after it" orders both ways
        purpose, temporal = _purpose(t), _temporal(t)
        readings = (_negated(t), _negated(t, unless=False))
        arguments = _arguments(t)
        agree, disagree = False, None
        for doc, doc_conditions, doc_means in sentence_docs:
            for e in _predicates(doc):
                if t.i in claim_conditions and e.i not in doc_conditions:
                    continue  # a condition ("if you want it written") asserts nothing an assertion can flip
                if e.i in doc_means and t.i not in claim_means:
                    continue  # "By turning off the computer, evidence may be lost" neither turns it off nor says not to
                e_lemma = _lemma(e)
                if e_lemma == lemma:
                    same = _switch(t) == _switch(e) or not (_switch(t) and _switch(e))  # "turn it on" / "turn it off"
                elif opposed(lemma, e_lemma, t.pos_ if t.pos_ == e.pos_ else ""):
                    same = False
                else:
                    continue
                # a claim's "unless" is "if not" against a sentence with a condition of its own ("follows
                # links when told to"); against one without, it may add an exception: a flip only if it
                # flips either way ("not available unless exported" agrees with "not available")
                conditional = condition_count(doc) > claim_condition_count
                flips = all((_negated(e) != negated) == same for negated in (readings[:1] if conditional else readings))
                if _until(e) or _purpose(e) != purpose or _temporal(e) != temporal:
                    continue  # "To remove the docs, pass --doc" says how; "too silent before it is ready to start
                    # computing" places a statement in time
                if _quoted(e) or _code(e) or not _same_arguments(t, e, arguments, _arguments(e)):
                    continue  # a name in quotes, a keyword of code, or the same verb about something else
                if lemma in _ORDER and (not _governed(t) & _governed(e) or _dated(t) or _dated(e)):
                    continue  # "back up before you upgrade" says "upgrade after backing up": other events ordered;
                    # "Before Git 2.36, …" dates a statement and orders no events
                if not _same_subject(t, e, arguments, _arguments(e)):
                    continue  # another subject's predicate ("award leave" / "annual leave")
                if flips and (_narrower(t, e) or _narrower(e, t)):
                    continue  # "never reports a race where both accesses are reads" / "is reporting a race"
                if not flips:
                    agree = True
                elif not _defines_another_term(claim, _sentence_of(e)):  # "`USE_SOURCE_PERMISSIONS`: Transfer the
                    disagree = disagree or e  # permissions" says nothing against NO_SOURCE_PERMISSIONS
        if disagree is not None and not agree:
            return _clause(disagree)
    return ""


def _means(doc) -> set[int]:
    """The token positions of a parse's means clauses, "by" and an -ing form ("By turning off the
    computer, valuable evidence may be lost"): an action named for what it leads to, which the
    sentence neither asserts nor denies."""
    return {w.i for t in doc if t.lower_ == "by" and t.dep_ == "prep"
            for c in t.children if c.dep_ == "pcomp" and c.tag_ == "VBG" for w in c.subtree}


def _switch(token) -> str:
    """"on" or "off" where a verb is switched by it ("turn optimisation off", "switch it on"), else ''."""
    for c in token.children:
        if c.lower_ in ("on", "off") and (c.dep_ == "prt" or c.dep_ == "prep" and not any(g.dep_ == "pobj" for g in c.children)):
            return c.lower_
    return ""


def _until(token) -> bool:
    """Whether an "until" bounds the predicate or the verb it heads or completes ("did not start
    publishing files until version 1.37"): the negation says when it began, not that it never did."""
    group = [token, *(c for c in token.children if c.dep_ == "xcomp")]
    if token.dep_ == "xcomp":
        group.append(token.head)
    return any(c.lower_ in ("until", "till") and c.dep_ in ("prep", "mark") for g in group for c in g.children)


_TEMPORAL_MARKS = frozenset({"before", "after", "until", "till", "once", "while"})


def _temporal(token) -> bool:
    """Whether the predicate is said within a clause that times another ("before it is ready to start
    computing"): the clause places the statement in time and asserts nothing of its own."""
    return any(a.dep_ == "advcl" and any(c.dep_ == "mark" and c.lower_ in _TEMPORAL_MARKS for c in a.children)
               for a in (token, *token.ancestors))


def _dated(token) -> bool:
    """Whether "before"/"after" takes a version or date for its object ("Before Git 2.36"): a time frame."""
    return token.dep_ == "prep" and any(any(ch.isdigit() for ch in w.text) for w in token.subtree)


def _purpose(token) -> bool:
    """Whether the predicate opens a purpose clause before its head ("To remove existing docs, pass
    `--doc`"): it says what a step is for, not that it happens."""
    return any(c.dep_ == "aux" and c.lower_ == "to" and (c.is_sent_start or token.dep_ == "advcl" and token.i < token.head.i)
               for c in token.children)  # the parser may make a fronted "To remove" the root


_RELATIVE = frozenset({"where", "whose", "who", "whom"})  # not "which": "sulfatide, which seems beneficial" describes


def _narrower(a, b) -> bool:
    """Whether predicate `a` or an argument of it is restricted by a clause of its own ("a race where both
    accesses are reads", "files that are not tracked") that `b`'s clause does not state: a statement about
    some of a thing neither repeats nor flips one about the thing. (A relative clause the parser hung on
    the verb counts too: "where …" read as its complement.)"""
    said = {_word(w) for w in _own_clause(b)} | {_word(w) for w in b.subtree}
    clauses = [c for argument in a.children if argument.dep_ in ("dobj", "attr", "nsubj", "nsubjpass")
               for c in argument.children if c.dep_ in ("relcl", "acl") and not any(w.lower_ == "which" for w in c.subtree)]
    clauses += [c for c in a.children if c.dep_ in ("ccomp", "advcl", "relcl")
                and any(w.lower_ in _RELATIVE for w in c.subtree)]
    for clause in clauses:
        words = {_word(w) for w in clause.subtree if w.pos_ in CONTENT_POS and not w.is_stop}
        if len(words - said) > len(words & said):  # "the change that broke .gitignore matching" is the
            return True  # claim's "earlier change to .gitignore matching": most of its words said there
    return False


_TERM_ENTRY = re.compile(r"^\W{0,2}`(?P<code>[^`\n]{1,60})`(?:\s*\([^)\n]{0,40}\))?:\s")  # a code term's entry


def _sentence_of(token) -> str:
    """The sentence of the parsed text (`pipeline.text.markdown_sentences`) that holds `token`; the
    parser's own boundaries cut a term's entry ("`--keep` (new in 2.1):" / "Keep the files.")."""
    from pipeline.text import markdown_sentences

    text, start = token.doc.user_data.get("text", token.doc.text), 0
    for sentence in markdown_sentences(text):
        found = text.find(sentence, start)
        if found < 0:
            break
        if found <= token.idx < found + len(sentence):
            return sentence
        start = found + len(sentence)
    return token.sent.text


@functools.lru_cache(maxsize=1024)
def _defines_another_term(claim: str, sentence: str) -> bool:
    """Whether `sentence` is the entry of a code term ("`USE_SOURCE_PERMISSIONS` (new in version
    3.20): Transfer the permissions …", "`--dry-run`: Report what would be done") that the claim does
    not name, while the claim names something the entry does not: its predicates are another term's."""
    from pipeline.names import mentions, names

    match = _TERM_ENTRY.match(sentence)
    if not match:
        return False
    return not mentions(match.group("code"), claim) and any(not mentions(n.text, sentence) for n in names(claim))
