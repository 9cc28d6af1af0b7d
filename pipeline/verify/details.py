"""Content a claim adds beyond its evidence: the run of its content words that no evidence passage
states (by word, stem or lemma), unless it is an answer's own wording of the documents' action; and a
clause joined to the claim ("…, and it prints a warning") that no one evidence sentence states.
Reads spaCy parses (`pipeline.verify.meaning.parse`, cached) and plain strings; no I/O, no label.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

from pipeline.text import FENCE, stem, words
from pipeline.verify.lemmas import lemmas
from pipeline.verify.meaning import ANSWER_WORD, CONTENT_POS, parse

# Words an answer adds while paraphrasing that state nothing new.
_GENERIC = frozenset(
    "also just really actually simply still even instead already usually generally typically often always "
    "example instance case way thing things part kind type sort lot number amount time times able possible "
    "directly specifically particular certain various different several other another following like "
    "want need mean means make makes made get gets give gives given take takes put puts use used uses using "
    "called call calls known name named available new first etc well one ones idea chance opportunity "
    # … discourse phrases ("by contrast", "in general", "at the moment") and frames of a permission
    # ("lets you pick", "allows you to")
    "general contrast addition practice short fact moment summary comparison together "
    "let lets letting allow allows allowing "
    # … and words that attribute a statement to the documents ("the docs suggest running …")
    "docs doc documentation documents say says suggest suggests recommend recommends recommended according "
    "mention mentions mentioned describe describes described manual manuals readme faq advice advise advises "
    "note notes page pages section sections chapter chapters guide guides list lists listed".split()
)


# Words an answer uses to describe a command example and its output ("the response returns a UUID
# and shows its State"): the documents show the example rather than say them.
_EXAMPLE_WORDS = frozenset(
    "example examples command commands run runs ran call calls called invocation output outputs response "
    "responses return returns returned result results show shows showed shown display displays print prints "
    "printed entry entries field fields key keys value values line lines object objects".split()
)


def unstated_words(claim: str, passages: Sequence[str], given: str = "") -> list:
    """The claim's content words (spaCy tokens, in order) that no passage (nor the question, `given`)
    states, by word, stem or lemma; words that describe a command example count as stated where a
    passage holds code (`_EXAMPLE_WORDS`)."""
    known: set[str] = set(_EXAMPLE_WORDS) if any(FENCE.search(p) for p in passages) else set()
    for text in [*passages, given]:
        for w in words(text):
            for part in {w, *w.split("_")} - {""}:  # "unity builds" names `UNITY_BUILD`
                known.add(part)
                known.add(stem(part))
    doc = parse(ANSWER_WORD.sub("", claim))  # "Not necessarily: …" answers the question; the claim follows
    content = [t for t in doc if t.pos_ in CONTENT_POS and (not t.is_stop or t.like_num) and t.lower_ not in _GENERIC
               and any(c.isalpha() for c in t.text) and len(t.text) > 2 and not _open_bound(t)]

    def unknown(tokens: list) -> list:
        return [t for t in tokens if t.lower_ not in known and t.lemma_.lower() not in known
                and stem(t.text.lower()) not in known and not _split_known(t.text, known)
                and not _version_known(t.lower_, known)]

    missing = unknown(content)
    if missing:  # the passages' lemmas ("ran" → "run") only for what their words and stems leave
        for text in passages:
            known.update(lemmas(text[:3000]))
        missing = unknown(missing)
    return missing


def unstated_details(claim: str, passages: Sequence[str], given: str = "") -> str:
    """The words of the longest run of the claim's content that no passage (nor the question, `given`)
    states (`unstated_words`), when the claim adds something: a run of at least two content words, or
    three content words in all, or two in a clause that concedes or explains ("…, because synchronous
    handlers aren't supported"), which then wins. '' when everything it says is there."""
    missing = unstated_words(claim, passages, given)
    if not missing:
        return ""
    runs: list[list] = [[missing[0]]]
    for t in missing[1:]:
        if t.i - runs[-1][-1].i <= 3:
            runs[-1].append(t)
        else:
            runs.append([t])
    runs = [run for run in runs if not _restated_action(run) and not _framing(run)]
    if not runs:
        return ""
    longest = max(runs, key=len)
    beside = [t for run in runs for t in run if _in_explaining(t)]
    if len(beside) >= 2:
        longest = beside  # two unstated words in a "…, because …" clause: that clause is the addition
    elif len(longest) < 2 and sum(map(len, runs)) < 3:
        return ""
    start, end = longest[0], longest[-1]
    left = min([start.i, *(c.i for c in start.children if c.dep_ in ("det", "amod", "compound", "nummod", "poss"))])
    doc = start.doc
    return doc.user_data.get("text", doc.text)[doc[left].idx:end.idx + len(end.text)]  # as the claim writes it


# How a verb joins an action to the statement beside it ("…, and sends a reminder", "without waiting
# for …", spaCy's unclassified "…, then moved to tape").
_ADDED_ACTIONS = frozenset({"conj", "pcomp", "dep", "parataxis"})
# … or a clause that concedes or explains beside the statement ("…, although secure is switched on
# automatically", "…, because sync handlers aren't supported").
_ADDED_MARKS = frozenset({"although", "though", "because", "since", "whereas", "so"})


def _restated_action(run: list) -> bool:
    """Whether a run of unstated words opens with a verb and carries no number or name: an answer
    words the documents' actions its own way ("apply, submit", "pass a redirect argument", "weigh the
    person" for "consider the individual"); an added detail is a thing, a quantity or a qualifier
    ("two maintainers approve", "one box a year", "automatic Level 3"), or an action joined to the
    statement ("kept for 30 days, then moved to tape", "without waiting for open connections", "although
    it is switched on automatically")."""
    head = run[0]
    return (head.pos_ in ("VERB", "AUX") and head.dep_ not in _ADDED_ACTIONS and not _explains(head)
            and not any(t.like_num or t.pos_ in ("NUM", "PROPN") for t in run))


def _framing(run: list) -> bool:
    """Whether a run of unstated words is only the frame of the claim's statement: its main verb and the
    words of its subject, with no number or name ("The wait between attempts is tuned by …", "One quirk
    kept for compatibility is …", "The starting version comes from …"): the answer's own way into what
    follows, which the checks on the rest judge; an added detail is what the statement says of it."""
    root = _clause_root(run[0])
    subjects = [c for c in root.children if c.dep_ in ("nsubj", "nsubjpass", "csubj", "aux", "auxpass")]
    beside = {w.i for c in subjects for d in c.subtree if d.dep_ in ("relcl", "acl", "appos") for w in d.subtree}
    frame = {root.i} | {w.i for c in subjects for w in c.subtree if w.i not in beside}  # "the tool, which came from X, …"
    frame -= {w.i for c in subjects if c.dep_ == "csubj" for w in c.subtree if w.dep_ in ("dobj", "pobj")}  # "What triggers the build is …"
    # a number in digits or a name is a detail; a counting word ("One quirk …") is the frame's, as for values
    return all(t.i in frame for t in run) and not any(any(ch.isdigit() for ch in t.text) or t.pos_ == "PROPN" for t in run)


def _clause_root(token):
    """The head of the independent clause `token` stands in: its sentence's root, or a clause joined to
    it by a semicolon or a colon, which spaCy hangs below the other ("That behaviour is governed by
    …; when …, CMake warns": "governed")."""
    while token.dep_ not in ("ROOT", "ccomp", "parataxis") and token.head.i != token.i:
        token = token.head
    return token


def _explains(verb) -> bool:
    """Whether `verb` heads a clause that concedes or explains beside the statement ("although …"); not
    where it is the statement ("This is because …")."""
    head = verb.head
    if head.lemma_ == "be" and any(c.dep_ in ("nsubj", "expl") and c.pos_ == "PRON" for c in head.children):
        return False
    return verb.dep_ == "advcl" and any(c.dep_ == "mark" and c.lower_ in _ADDED_MARKS for c in verb.children)


def _in_explaining(token) -> bool:
    """Whether `token` sits in a clause that concedes or explains (`_explains`), up to four heads above."""
    for _ in range(5):
        if _explains(token):
            return True
        if token.head.i == token.i:
            return False
        token = token.head
    return False


def in_added_clause(claim: str, part: str) -> bool:
    """Whether `part` of the claim sits in a clause of its own that concedes or explains ("…, although
    secure is switched on automatically"): a statement beside the claim's, not a rewording of it."""
    at = claim.find(part)
    token = next((t for t in parse(claim) if t.idx >= at), None) if part and at >= 0 else None
    return token is not None and _in_explaining(token)


_OPEN_RANGE_WORDS = frozenset({"later", "newer", "above", "higher", "onwards", "onward", "up"})


def _open_bound(token) -> bool:
    """Whether `token` opens a version's range: "1.84 or later", "3.20 and above" (the documents' "1.84+"):
    whether the version is the documents' is the numbers' own check, not an added detail."""
    if token.lower_ not in _OPEN_RANGE_WORDS or token.i < 2:
        return False
    before, number = token.doc[token.i - 1], token.doc[token.i - 2]
    return before.lower_ in ("or", "and") and any(ch.isdigit() for ch in number.text)


def _version_known(word: str, known: set[str]) -> bool:
    """A version as the parse masks it ("3_19" for "3.19") whose numbers the passages have: whether
    it is the same value is the numbers' own check (`pipeline.verify.align`), not an added detail."""
    return re.fullmatch(r"\d+(?:_\d+)+", word) is not None and all(p in known for p in word.split("_"))


def _split_known(word: str, known: set[str]) -> bool:
    """A compound written as one token ("ASGI-compatible", "url_prefix") whose parts are all known."""
    pieces = [p for p in re.split(r"[-_/.]", word.lower()) if p]
    parts = [p for p in pieces if len(p) > 2]
    if len(pieces) > 1 and len(parts) == 1:  # "Node_js" (a masked "Node.js"): the long part decides
        return parts[0] in known or stem(parts[0]) in known
    return len(parts) > 1 and all(p in known or stem(p) in known for p in parts)


# A statement an answer joins to its claim: a coordinated predicate ("…, and it prints a warning",
# "… and falls back to static"), a clause after a comma that describes ("…, which only takes effect
# when …"), or one after a semicolon or dash ("…; install(EXPORT) also creates …").
_JOINED = frozenset({"conj", "parataxis"})
CLAUSE_MIN_WORDS = 3  # content words a joined clause needs before its support is judged
CLAUSE_MIN_SHARE = 0.5  # … of which one evidence sentence, or two neighbouring ones, must state this share


def unstated_clause(claim: str, passages: Sequence[str], given: str = "") -> str:
    """The first clause the claim joins to its statement (`_JOINED`, or a relative clause after a comma)
    whose content words no one sentence of the passages, nor two neighbouring ones, states for the most
    part (under CLAUSE_MIN_SHARE), as the claim writes it: "it prints a warning about the cycle at
    generate time" where the passages say so of nothing, although their pages hold each word somewhere;
    or the first clause joined or attached after the statement (a relative clause, or one opened by a
    subordinator: "…, once they pass a malware scan") whose own verb the passages never use
    (`_new_predicate`). '' when every such clause is stated, or too short to judge (CLAUSE_MIN_WORDS)."""
    from pipeline.text import markdown_sentences

    doc = parse(ANSWER_WORD.sub("", claim))
    joined = [t for t in doc if t.pos_ in ("VERB", "AUX") and t.head.i != t.i
              and (t.dep_ in _JOINED and t.head.pos_ in ("VERB", "AUX") and not _paired(t)
                   or t.dep_ == "relcl" and t.i > 0 and _after_comma(t))]
    attached = [t for t in doc if t.pos_ == "VERB" and t.head.i != t.i and t.i > t.head.i and t not in joined
                and (t.dep_ == "relcl" or t.dep_ == "advcl" and _marked(t))]
    if not joined and not attached:
        return ""
    sentences = [s for p in passages for s in markdown_sentences(p)]
    windows = [_stems(" ".join(sentences[k:k + 2])) for k in range(len(sentences))] or [set()]
    everywhere = set().union(*windows)
    # what needs no sentence: the question's words, and how answers describe a command example
    said = _stems(given) | ({stem(w) for w in _EXAMPLE_WORDS} if any(FENCE.search(p) for p in passages) else set())
    text = doc.user_data.get("text", doc.text)
    for head in sorted([*joined, *attached], key=lambda t: t.i):
        span = _clause_span(head)
        own = {t.lower_ for t in span if t.pos_ in CONTENT_POS and not t.is_stop and t.lower_ not in _GENERIC
               and any(c.isalpha() for c in t.text) and len(t.text) > 2 and not _stated(t.lower_, said)
               and not _open_bound(t)}  # "…, which needs Rust 1.84 or later": the version's own range
        if head in joined and len(own) >= CLAUSE_MIN_WORDS \
                and max(sum(_stated(w, window) for w in own) for window in windows) / len(own) < CLAUSE_MIN_SHARE:
            return text[span[0].idx:span[-1].idx + len(span[-1].text)]
        if _new_predicate(head, own, everywhere, passages):
            return text[span[0].idx:span[-1].idx + len(span[-1].text)]
    return ""


# What opens a clause that adds a condition, a time or a place to the statement ("…, once they pass
# a malware scan", "… when no region is configured").
_SUBORDINATORS = frozenset("once when whenever if unless until after before while where whereas because since "
                           "although though".split())
PREDICATE_MIN_UNSTATED = 3  # content words of a joined or attached clause, its verb among them, that no passage has


def _marked(verb) -> bool:
    """Whether an adverbial clause opens with a subordinator (`_SUBORDINATORS`)."""
    return any(c.dep_ in ("mark", "advmod") and c.lower_ in _SUBORDINATORS and c.i < verb.i for c in verb.children)


def _new_predicate(head, own: set[str], everywhere: set[str], passages: Sequence[str]) -> bool:
    """Whether a clause joined or attached to the claim says something no passage does: its verb and
    more of its content words (`own`), PREDICATE_MIN_UNSTATED in all, appear in no passage, by word,
    stem or lemma ("…, which also deletes the copy from ~/.cargo/registry", "… once they pass an
    automated malware scan"). Two words were too few: "rarely changes" for "infrequent commits"."""
    if head.lower_ not in own:
        return False
    unstated = {w for w in own if not _stated(w, everywhere)}
    if head.lower_ not in unstated or len(unstated) < PREDICATE_MIN_UNSTATED:
        return False
    known = lemmas(" ".join(passages)[:20000])
    return head.lemma_.lower() not in known and sum(w not in known for w in unstated) >= PREDICATE_MIN_UNSTATED


CLAUSE_STATED_SIMILARITY = 0.65  # a joined clause this close (cosine) to an evidence sentence is that sentence reworded


def reworded(clauses: Sequence[str], sentences: Sequence[Sequence[str]], embedder) -> list[bool]:
    """For each clause (`unstated_clause`), whether one of its evidence sentences or windows says it in
    other words: a cosine of at least CLAUSE_STATED_SIMILARITY ("serves 404.html, if present, as the 404
    response" against "if `404.html` file exists it will be shown as 404 response")."""
    if not clauses:
        return []
    vectors = embedder.encode(list(clauses))
    return [bool(texts) and float(np.max(embedder.encode_cached(list(texts)) @ v)) >= CLAUSE_STATED_SIMILARITY
            for v, texts in zip(vectors, sentences, strict=True)]


def _paired(token) -> bool:
    """Whether a coordinated verb follows its head with only "and"/"or" between ("can be published and
    installed as of npm@2"): the two share what follows, one predicate of two verbs, not a clause."""
    between = token.doc[token.head.i + 1:token.i]
    return token.i > token.head.i and len(between) == 1 and between[0].dep_ == "cc"


def _after_comma(token) -> bool:
    """Whether the clause `token` heads opens after a comma ("…, which only takes effect …")."""
    first = min(w.i for w in token.subtree)
    return first > 0 and token.doc[first - 1].text in (",", ";", "—", "-")


def _clause_span(head) -> list:
    """The tokens of the clause `head` heads, without the clauses coordinated after it (its own `conj`
    verbs) or attached to it after it with a subordinator ("… once they pass a scan": checked on their
    own), and without trailing punctuation."""
    skip = {w.i for c in head.children if c.pos_ in ("VERB", "AUX") and c.i > head.i
            and (c.dep_ in _JOINED or c.dep_ == "advcl" and _marked(c)) for w in c.subtree}
    span = [w for w in head.subtree if w.i not in skip and not (w.dep_ == "cc" and w.head.i == head.i and w.i < head.i)]
    while span and (span[-1].is_punct or span[-1].dep_ == "cc"):
        span.pop()
    while span and (span[0].is_punct or span[0].dep_ == "cc"):
        span.pop(0)
    return span


def _stems(text: str) -> set[str]:
    """The stems of a text's words."""
    return {stem(w) for w in words(text)}


def _stated(word: str, stems: set[str]) -> bool:
    """Whether a lower-case word is among `stems`, by its stem or, written as one token
    ("response_json" for "response.json"), by each of its parts."""
    parts = [p for p in re.split(r"[-_/.]", word) if p]
    return stem(word) in stems or (len(parts) > 1 and all(stem(p) in stems for p in parts))
