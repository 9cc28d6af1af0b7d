"""What a sentence *means*, read from its spaCy parse: its predicates and whether each is negated, its
conditions and the clauses it asserts, what each negation governs, and a predicate's arguments and
subject. The flip check (`pipeline.verify.flips`), the role checks (`roles`) and polarity read them.

Parses are cached by text; nothing here does I/O or decides a label.
"""

from __future__ import annotations

import functools
import re
import threading
from collections import OrderedDict
from collections.abc import Sequence

from pipeline.text import NEGATION_WORDS, NEGATIONS, SELF_NEGATING
from pipeline.verify.opposites import OPPOSITE

# "raises an error" is how documentation says a call fails.
_FAILURES = frozenset({"error", "exception"})
# Verbs that negate what they govern: "prohibits agencies from accepting" ≈ "agencies may not accept";
# "skips building the package" ≈ "does not build it".
_NEGATING_HEADS = frozenset("prohibit forbid prevent stop avoid refuse fail deny block disallow lack skip bypass".split())
_SKIPPING = frozenset({"skip", "bypass"})  # … only their object or -ing form: "skip to step four" goes there
# … and these take an -ing form, never an infinitive: "avoid cycles with X to tell levels apart" says
# what X is for (the parser may hang "to tell" on "avoid"), "stop to check" is a purpose
_NO_INFINITIVE = frozenset({"avoid", "prevent", "stop", "skip", "bypass"})
# Lemmas that carry no predicate of their own (auxiliaries, light verbs).
_LIGHT = frozenset("be have do can could may might must shall should will would get make let need go take say use".split())
_LESSENING = frozenset({"reduce", "eliminate", "remove", "lessen", "minimize", "minimise", "obviate"})
_NEG_WORDS = (NEGATION_WORDS - {"no", "none"}) | {"n't"}  # as a dependent ("no" as a determiner: below)
# A leading answer word ("No, X isn't Y", "Not always: …") is no negation of the statement after it.
# (… and a hedged one before a colon or a comma: "Not necessarily: …", "Not by default, …", "Partly: …")
ANSWER_WORD = re.compile(r"^\s*(?:no|yes|neither(?:,? necessarily)?|both|not always|not quite|not exactly|not really|(?:usually|generally|normally|"
                         r"typically|probably|mostly|often|rarely|certainly|definitely|absolutely|unfortunately) (?:not|no|yes)"
                         r"|not (?:necessarily|by default|directly|entirely|automatically|yet|as such|on its own|out of the box"
                         r"|in general|usually|always|completely|fully)|partly|partially|mostly|in short|short answer"
                         r"|not (?:with|without|in|on|from|by|via|using|through|for|at) [^,:;.]{1,40})"  # "Not with a plain rb, …"
                         r"\b[,:;.!]\s*", re.IGNORECASE)
# Negation words that negate nothing where they stand: "no matter which directory", "not only … but",
# a bound ("no more than 72 characters"), and a "not" that sets an alternative aside after a comma, as
# "rather than" does ("They land in pip's HTTP cache, not its wheel cache": they land somewhere).
NOT_NEGATING = re.compile(r"\b(?:no matter|not only|(?:no|not|never(?: \w+){0,2}) (?:more|less|fewer|later|earlier|longer|greater|sooner) than)\b"
                          r"|(?:(?<=, )|(?<=, and ))not(?= (?:(?:to|in|on|for|from|at|with|by|as) )?"
                          r"(?:the|its|a|an|their|your|our|his|her|this|that|these|those)\b)",
                          re.IGNORECASE)
# An exception after a negation makes it a restriction: "never needed for any reason other than X" says
# "only needed for X", so neither side of it is a flip of the other.
EXCEPTION = re.compile(r"\b(?:other than|except|apart from|aside from|besides)\b", re.IGNORECASE)
CONTENT_POS = frozenset({"NOUN", "PROPN", "VERB", "ADJ", "NUM", "ADV"})


# The spaCy component these checks never read: entities (over half of a parse's time; it changes no
# tag, lemma or dependency).
_UNREAD = ("ner",)


_PARSES = 1024  # parses kept (evidence sentences recur across claims and answers)
_parsed: OrderedDict[str, object] = OrderedDict()  # text → Doc, least recently used first
_parsed_lock = threading.Lock()


def parse(text: str):
    """The spaCy parse of `text`: tags, lemmas and dependencies, no entities (cached)."""
    return parse_all([text])[0]


def parse_all(texts: Sequence[str]) -> list:
    """`parse` of each of `texts`; those not cached are parsed together (`nlp.pipe`, faster than one
    at a time), so a caller that knows what the checks will read can parse it in one go."""
    from pipeline.claims import load_nlp, mask_dots

    with _parsed_lock:
        found = {t: _parsed[t] for t in texts if t in _parsed}
    todo = [t for t in dict.fromkeys(texts) if t not in found]
    for text, doc in zip(todo, load_nlp().pipe([mask_placeholders(mask_dots(t)) for t in todo], disable=_UNREAD), strict=True):
        doc.user_data["text"] = text  # the masked dots are "_" in doc.text; quotes come from here
        found[text] = doc
    with _parsed_lock:
        for text in dict.fromkeys(texts):
            _parsed[text] = found[text]
            _parsed.move_to_end(text)
        while len(_parsed) > _PARSES:
            _parsed.popitem(last=False)
    return [found[t] for t in texts]


_PLACEHOLDER = re.compile(r"<([A-Za-z][\w-]{0,40})>")


def mask_placeholders(text: str) -> str:
    """A placeholder of a syntax ("<min>", "<path-to-source>") as one word of the same length
    ("_min_"), which the parser reads as a noun: its angle brackets had been read as symbols that
    broke the sentence's parse ("older than the <min> version stops processing")."""
    return _PLACEHOLDER.sub(lambda m: "_" + m.group(1).replace("-", "_") + "_", text)


@functools.lru_cache(maxsize=1024)
def sentence_entities(sentence: str) -> tuple[tuple[str, str], ...]:
    """(text, label) of each named entity of an aligned sentence, from the whole spaCy pipeline (the
    parser's sentence boundaries change a few entities: 2 of 798 answer-check sentences with the
    recogniser alone). Read only for a claim's name the evidence lacks; parsing every claim's
    aligned sentence for it took about a tenth of verification's time."""
    from pipeline.claims import load_nlp

    return tuple((e.text, e.label_) for e in load_nlp()(sentence).ents)


def _contrastive(negation) -> bool:
    """Whether a negation after a comma, to the right of the word it hangs on, sets what follows
    against it ("used for compiling tests, not when the package is built"): it negates the words
    after it, which the parser left without a verb of their own, and not its head."""
    doc = negation.doc
    return negation.dep_ == "neg" and negation.i > negation.head.i and negation.i > 0 \
        and doc[negation.i - 1].text in (",", ";", "—", "-")


def _shares_negation(token) -> bool:
    """Whether a verb joined by "and"/"or" to the one before it, in its bare form or as a participle,
    with no subject or auxiliary of its own, is said under that one's negation: "cannot be editable
    or specify extras" (not after "but"; not a verb with its own tense: "does not perform any checks
    and involves running code"; not in a list of what there is: "there haven't been any commits or pull
    requests", where the parser may read "pull" as a verb)."""
    return token.dep_ == "conj" and token.tag_ in ("VB", "VBN") \
        and not any(c.dep_ in ("nsubj", "nsubjpass", "aux", "auxpass", "neg") for c in token.children) \
        and not any((c.dep_ == "cc" and c.lower_ in ("but", "yet")) or c.dep_ == "expl" for c in token.head.children)


def _negated(token, unless: bool = True) -> bool:
    """Whether `token` (a predicate) is said in the negative: a negation dependent on it ("is not
    paid"), "without" governing it, or a negated or negating verb above it in the same statement
    ("doesn't let agencies accept", "prohibits agencies from accepting"); an odd count of these.
    An "unless" clause counts as one more (with `unless` false, it is an exception and does not).
    A word after a slash is said as the one before it ("not to use/disclose"); one after "nor" is negated
    ("neither creating nor updating it"), and "nor" counts for it, not for the word it follows."""
    doc = token.doc
    if token.i >= 2 and doc[token.i - 1].text == "/" and doc[token.i - 2].pos_ == token.pos_ and token.pos_ in ("VERB", "ADJ"):
        return _negated(doc[token.i - 2], unless)
    if token.dep_ == "conj" and any(c.dep_ == "cc" and c.lower_ == "nor" and c.i < token.i for c in token.head.children):
        return True
    count, t = 0, token
    for _ in range(4):
        if any(c.dep_ == "mark" and c.lower_ == "whether" for c in t.children):
            return False  # an embedded question asserts neither way: "(without worrying about) whether or not it is billable"
        count += sum((c.dep_ == "neg" or c.lower_ in _NEG_WORDS) and c.dep_ not in ("intj", "det") and not _contrastive(c)
                     and not (c.dep_ == "cc" and c.lower_ == "nor") for c in t.children)
        count += any(c.lower_ in ("longer", "more") and c.dep_ == "advmod" and any(g.lower_ == "no" for g in c.children)
                     for c in t.children)  # "no longer satisfies", "no more accepts"
        count += unless and sum(_unless(c) for c in t.children)
        if t.i != token.i and t.pos_ == "NOUN":  # "there is no need to wait": "wait" is negated; so is it
            count += any(c.dep_ == "det" and c.lower_ == "no" for c in t.children)  # where a verb removes the need
            count += t.lemma_ == "need" and t.head.lemma_ in _LESSENING  # ("reduce the need for code to inspect")
        if t.i != token.i and t.lower_ in ("nothing", "none", "nobody"):  # "there's nothing to reinstate"
            count += 1
        head = t.head
        if head.i == t.i or any(x.text == ";" for x in t.doc[min(t.i, head.i) + 1:max(t.i, head.i)]):
            break  # the root, or a statement of its own: "…are limited to it; X is not set" limits nothing less
        if (t.dep_ in ("pcomp", "pobj") and head.lower_ == "without") or _rejected(t):
            count += 1
        if t.dep_ == "ccomp" and any(c.dep_ == "neg" for c in t.children):
            break  # a clause with its own negation: "Sick Leave will not be paid out; however, you will not lose it"
        if t.dep_ == "ccomp" and t.i < head.i and any(c.lower_ in _SO for c in head.children):
            break  # a result the parser made the head: "You may copy X, so your program doesn't depend on Y"
        if t.dep_ == "acl" and t.tag_ in ("VBN", "VBG"):
            count += any(c.dep_ == "det" and c.lower_ == "no" for c in head.children)  # "no activity keeping it"
            break  # a participle describing a noun ("not required to implement scripts run with npm run")
        purpose = t.dep_ == "advcl" and any(c.dep_ == "aux" and c.lower_ == "to" for c in t.children)
        if t.dep_ not in ("xcomp", "ccomp", "acomp", "attr", "pcomp", "pobj", "prep", "auxpass", "dobj", "acl") \
                and not purpose and not _shares_negation(t):
            break  # "don't abuse editing to delete": "delete" is as negated as "abuse"
        verb = head.lemma_.lower()
        if verb in _NEGATING_HEADS and t.dep_ not in ("prep", "conj") and not purpose \
                and (verb not in _SKIPPING or t.dep_ == "dobj" or t.tag_ == "VBG") \
                and not (verb in _NO_INFINITIVE and any(c.dep_ == "aux" and c.lower_ == "to" for c in t.children)):
            count += 1  # "avoid X and run Y": Y is run; "skip to step four to schedule it": it is scheduled
        t = head
    return count % 2 == 1


_SO = frozenset({"so", "thus", "therefore", "hence"})
_REJECTING = ("instead of", "in lieu of", "rather than")


def _rejected(token) -> bool:
    """Whether the words right before `token` reject it: "instead of", "in lieu of", "rather than"
    ("is used in lieu of reading the entire tree": nothing is read), before its own auxiliaries too
    ("stays opt-in rather than being exposed by default": it is not exposed)."""
    start = token.i
    while start > 0 and token.doc[start - 1].dep_ in ("aux", "auxpass") and token.doc[start - 1].head.i == token.i:
        start -= 1
    return " ".join(t.lower_ for t in token.doc[max(0, start - 3):start]).endswith(_REJECTING)


# Marks of clauses that assert nothing about the statement they hang on: conditions, and concessions
# ("Although GraphQL is no longer built in, you can still use it": the statement is "you can use it").
_CONDITIONS = frozenset({"if", "when", "whenever", "whether", "although", "though", "whereas"})
CONDITION_WORDS = frozenset({"if", "when", "whenever", "unless", "once"})  # a sentence that states a condition


def states(text: str) -> bool:
    """Whether `text` states something: it has a verb (a heading or a label does not)."""
    return any(t.pos_ in ("VERB", "AUX") for t in parse(text))


# A list marker or step label before a statement ("- ", "2. ", "Step 3 - ") is not part of it: left in,
# it hides the statement's first clause from the parse ("Step 3 - If it is not located …, submit …").
_LABEL = re.compile(r"^\s*(?:(?:step|stage|phase)\s+\d+[a-z]?\s*[-–—:.)]\s*|[-*+•]\s+|\d+[.)]\s+)", re.IGNORECASE)


def asserted(text: str) -> str:
    """`text` without its conditional, concessive and relative clauses ("…, and an error is raised if it isn't
    supported"; "Zoom is for those whose need cannot be met with Google Meet"): a negation there
    asserts nothing about the statement. "unless" clauses stay: they negate. A leading list marker or
    step label is dropped."""
    text = _LABEL.sub("", text, count=1)
    doc = parse(text)
    drop = conditions(doc) | {w.i for t in doc if t.dep_ == "relcl" and t.head.lower_ not in NEGATION_WORDS
                              for w in t.subtree}  # "nothing extra to install": what there is none of stays
    if not drop:
        return text
    original = doc.user_data.get("text", doc.text)  # its own spacing: "--no-save" stays one word
    return "".join(original[t.idx:t.idx + len(t.text)] + t.whitespace_ for t in doc if t.i not in drop).strip()


def conditions(doc, unless: bool = False) -> set[int]:
    """The token positions of a parse's conditional and concessive clauses ("if …", "when …", "although …"),
    and with `unless` its "unless …" clauses."""
    marks = _CONDITIONS | {"unless"} if unless else _CONDITIONS
    found = set(_opening_condition(doc))
    for t in doc:
        mark = next((c for c in t.children if c.dep_ in ("mark", "advmod") and c.lower_ in marks), None)
        if t.dep_ == "advcl" and mark is not None:
            found.update(w.i for w in t.subtree)
            if mark.i > t.head.i and t.head.pos_ in ("VERB", "AUX"):  # a condition after the verb it qualifies runs to the sentence's end, however
                end = t.sent.end  # its alternatives were attached ("if A, B, or C doesn't")
                while end - 1 > mark.i and doc[end - 1].is_punct:
                    end -= 1
                found.update(range(mark.i, end))
    return found


OPENING_CONDITION_TOKENS = 25  # a condition that opens a sentence ends at its first comma, within this many tokens


def condition_count(doc, unless: bool = True) -> int:
    """How many conditions a parse states: "if"/"when"/"once" clauses, and "unless" ones (`unless`)."""
    marks = CONDITION_WORDS if unless else CONDITION_WORDS - {"unless"}
    return sum(t.dep_ in ("mark", "advmod") and t.lower_ in marks and t.head.dep_ == "advcl" for t in doc)


def _opening_condition(doc) -> range:
    """The token positions of a condition that opens the sentence, up to its comma ("When you run npm
    init without an initializer, it falls back …"; a purpose, "To run it without installing it, …"), however the parser attached its words: a code
    name there ("npm init", "file:") can leave part of the clause outside its subtree, or make it the root."""
    purpose = len(doc) > 1 and doc[0].lower_ == "to" and doc[1].tag_ == "VB"  # "To run it without installing it, …"
    without = len(doc) > 1 and doc[0].lower_ == "without"  # "Without cargo login you can pass the token": if not
    if not len(doc) or doc[0].lower_ not in _CONDITIONS - {"whether"} and not purpose and not without:
        return range(0)
    comma = next((t.i for t in doc if t.text == "," and t.i <= OPENING_CONDITION_TOKENS), None)
    if without:  # its noun phrase, up to the comma, subject or verb after it
        comma = next((t.i - (t.text != ",") for t in doc[1:OPENING_CONDITION_TOKENS]
                      if t.text == "," or t.pos_ == "AUX" or t.pos_ == "VERB" and t.tag_ != "VBG"
                      or t.dep_ in ("nsubj", "nsubjpass")), None)
    return range(comma + 1) if comma is not None and comma < len(doc) - 2 else range(0)


def _unless(token) -> bool:
    """Whether `token` heads an "unless" clause: "doesn't follow links unless you set X" says
    "follows links if you set X", so the clause counts as one more negation."""
    return token.dep_ == "advcl" and any(c.dep_ == "mark" and c.lower_ == "unless" for c in token.children)


# Dependents that open a clause of their own: their words are another predicate's arguments.
_OWN_CLAUSES = frozenset({"conj", "relcl", "ccomp", "parataxis"})


def _own_clause(token) -> list:
    """`token`'s subtree without the clauses it governs and the alternatives it rejects ("…, and then
    compresses it, instead of compressing every small chunk": "compresses" is not about "every small chunk")."""
    out, stack = [], [token]
    while stack:
        t = stack.pop()
        out.append(t)
        for c in t.children:
            alternative = c.lower_ == "instead" or (c.lower_ == "of" and c.i > 0 and c.doc[c.i - 1].lower_ == "instead")
            if c.dep_ not in _OWN_CLAUSES and not alternative:
                stack.append(c)
    return out


# Words that negate what they govern themselves ("without waiting", "fails to start"); other negation
# words negate their head ("isn't paid": "paid"; "no maximum": what the noun is the argument of).
_NEG_CUES = NEGATIONS | {"n't"}
_CORE_DEPS = frozenset({"dobj", "attr", "acomp", "xcomp", "pcomp", "pobj", "oprd", "prt"})


def negation_scopes(text: str) -> list[tuple[str, frozenset[str]]]:
    """What each asserted negation of `text` governs: (the words of the negated clause, the lemmas of its
    predicate and the predicate's complements). "Sick leave isn't paid out, but you won't lose it" has
    ("Sick leave is paid out", {pay, out}) and ("you will lose it", {lose}); "there's no salary maximum
    for earning them" has ("there 's salary maximum for earning them", {maximum}). Conjuncts and
    "since …" clauses are other statements, conditions assert nothing (`asserted`)."""
    doc = parse(ANSWER_WORD.sub("", asserted(text)))
    scopes = []
    for t in doc:
        if t.dep_ == "intj" or not (t.lower_ in _NEG_CUES or t.lower_.endswith("n't")) or _idiom(t) or _in_quotes(t):
            continue
        head = t if t.lower_ in SELF_NEGATING else t.head
        while head.pos_ == "ADV" and head.head.i != head.i:
            head = head.head  # "no longer built": "built"
        while head.dep_ == "compound" and head.head.i != head.i:
            head = head.head
        if t.dep_ == "det" and head.dep_ in ("attr", "dobj", "nsubj", "nsubjpass") and head.head.i != head.i:
            head = head.head  # "has no limit", "there's no maximum": the clause the noun belongs to
        clause = _own_clause(head)
        other = {x.i for w in clause if w.dep_ == "advcl" and w.i != head.i for x in w.subtree}  # "since …"
        kept = [w for w in sorted(clause, key=lambda w: w.i) if w.i not in other and w.i != t.i and not w.is_punct]
        core = {c.lemma_.lower() for c in head.children
                if c.dep_ in _CORE_DEPS and c.i != t.i and c.pos_ not in ("PRON", "DET")}
        if head.i != t.i and _lemma(head) not in _LIGHT:
            core.add(head.lemma_.lower())
        if not core:  # a light verb with nothing after it ("GNU ld can't be used"): its subject says what
            core = {c.lemma_.lower() for c in head.children if c.dep_ in ("nsubj", "nsubjpass") and c.pos_ in ("NOUN", "PROPN")}
        if not core and t.pos_ == "PRON":  # "there's nothing extra to install": what there is none of to do
            core = {c.lemma_.lower() for c in t.children if c.dep_ in ("relcl", "acl")}
        core = {w for w in core if w.isalpha() and w not in _NEG_CUES}
        if kept and core:
            scopes.append((" ".join(w.text for w in kept), frozenset(core)))
    return scopes


def _in_quotes(token) -> bool:
    """Whether `token` is quoted as a value, in single quotes or backticks ("the values 'rr' or 'none'")."""
    text = token.doc.user_data.get("text", token.doc.text)
    before, after = text[token.idx - 1:token.idx], text[token.idx + len(token.text):token.idx + len(token.text) + 1]
    return before in ("'", "`") and after in ("'", "`")


def _idiom(token) -> bool:
    """Whether a negation word is part of an idiom that negates nothing (`NOT_NEGATING`)."""
    following = " ".join(t.lower_ for t in token.doc[token.i + 1:token.i + 5])
    previous = [t.text.lower() for t in token.doc[max(0, token.i - 2):token.i]]
    before = ", " if previous[-1:] == [","] else ", and " if previous == [",", "and"] else ""
    return bool(NOT_NEGATING.match(f"{before}{token.lower_} {following}", len(before)))


def _word(token) -> str:
    """A token's comparable form: its lemma, or for a code name ("allow_headers") its text."""
    return token.lemma_.lower() if token.is_alpha else token.lower_


_ORDER = frozenset({"before", "after"})


def _governed(token) -> set[str]:
    """The content words of what "before"/"after" orders against: its object ("after the upgrade") or
    the clause it introduces ("before a listener is added")."""
    clause = token.subtree if token.dep_ != "mark" else token.head.subtree
    return {_word(w) for w in clause if w.pos_ in CONTENT_POS and not w.is_stop and w.i != token.i}


def _arguments(token) -> set[str]:
    """The content words of a predicate's own clause, the predicate itself left out; for "before" /
    "after", those of the clause it modifies too ("list the specific route after the general one")."""
    words = {_word(w) for w in _own_clause(token) if w.pos_ in CONTENT_POS and not w.is_stop and w.i != token.i}
    if token.pos_ in ("ADP", "SCONJ") and token.head.i != token.i:
        words |= {_word(w) for w in _own_clause(token.head) if w.pos_ in CONTENT_POS and not w.is_stop and w.i != token.i}
    return words | _subject_words(token)


def _same_arguments(t, e, t_args: set[str], e_args: set[str]) -> bool:
    """Whether two predicates are about the same things: their clauses share two content words, or
    one where neither has a subject with content (imperatives: "Don't turn off your computer") or
    where it is both their subjects' ("constraints can be editable" / "they [constraints] cannot be
    editable")."""
    shared = t_args & e_args
    t_subject, e_subject = _subject_words(t), _subject_words(e)
    return len(shared) >= 2 or (len(shared) == 1 and (not t_subject and not e_subject or bool(shared & t_subject & e_subject)))


def _subject(token):
    for t in [token, token.head]:
        for c in t.children:
            if c.dep_ in ("nsubj", "nsubjpass", "csubj"):
                return c
    return None


def _same_subject(t, e, t_args: set[str], e_args: set[str]) -> bool:
    """Whether two predicates are said of the same thing: where both have a subject with content,
    each subject's words occur in the other's clause (active or passive), and where both subjects
    carry a modifier ("award leave", "annual leave"), they share one."""
    ts, es = _subject(t), _subject(e)
    t_words, e_words = _subject_words(t), _subject_words(e)
    if not (ts is not None and es is not None and t_words and e_words):
        return True
    if not (t_words & e_args and e_words & t_args):
        return False
    t_mods = {c.lemma_.lower() for c in ts.children if c.dep_ in ("compound", "amod")}
    e_mods = {c.lemma_.lower() for c in es.children if c.dep_ in ("compound", "amod")}
    if t_mods and e_mods and not t_mods & e_mods:
        return False
    # a kind the other side's clause never names: "travel comp time" is not "your comp time"; a bare
    # "the option" names the kinds its sentence gave it before ("deprecates the --preserve-merges option …,
    # and the option keeps working")
    return not (_kinds(ts) - e_args - e_words - _named_before(es) or _kinds(es) - t_args - t_words - _named_before(ts))


_DEFINITE = frozenset({"the", "this", "that", "these", "those"})


def _named_before(subject) -> set[str]:
    """The words before a bare definite subject ("the option", no modifier of its own) in its text:
    what it refers back to may carry the kinds it leaves out. Empty for any other subject."""
    children = list(subject.children)
    if not any(c.dep_ == "det" and c.lower_ in _DEFINITE for c in children) \
            or any(c.dep_ in ("compound", "amod", "nmod", "poss") for c in children):
        return set()
    return {_word(w) for w in subject.doc[:subject.i] if w.pos_ in CONTENT_POS and not w.is_stop}


def _kinds(subject) -> set[str]:
    """The nouns that make a subject a kind of thing ("travel" in "travel comp time")."""
    return {c.lemma_.lower() for c in subject.subtree if c.i < subject.i
            and (c.dep_ == "compound" or (c.dep_ == "amod" and c.pos_ in ("NOUN", "PROPN")))}


_SINGLE_QUOTED = re.compile(r"(?<!\w)['‘]([^'‘’\n]{1,40})['’](?!\w)")  # 'definitely lost', not "doesn't"


def _quoted(token) -> bool:
    """Whether `token` sits inside quotation marks ("405 Method not allowed", 'definitely lost')."""
    before = token.doc.text[:token.idx]
    return sum(before.count(q) for q in ('"', "“", "”")) % 2 == 1 \
        or any(m.start(1) <= token.idx < m.end(1) for m in _SINGLE_QUOTED.finditer(token.doc.text))


_CALL_AFTER = re.compile(r"\s*(?:[\w.]+\(|=)")


def _code(token) -> bool:
    """Whether `token` is a keyword of code, not a word of prose: a call or an assignment follows it
    ("return schemas.OpenAPIResponse(request=request)")."""
    return bool(_CALL_AFTER.match(token.doc.text, token.idx + len(token.text)))


def _lemma(token) -> str:
    """A predicate's comparable lemma: its own word where the lexicon lists it ("enabled"), "fail"
    for raising an error ("calls to .body() raise an error" / "calls to .body() work")."""
    lemma = token.lemma_.lower()
    if lemma in ("raise", "throw") and any(c.dep_ == "dobj" and (c.lemma_.lower() in _FAILURES or
                                                                c.text.endswith(("Error", "Exception")))
                                           for c in token.children):
        return "fail"
    return token.lower_ if token.lower_ in OPPOSITE else lemma


def _predicates(doc) -> list:
    # a verb used as a preposition ("…, including child directories") states no predicate
    return [t for t in doc if (t.pos_ in ("VERB", "ADJ") or (t.pos_ in ("ADP", "SCONJ") and t.lower_ in ("before", "after")))
            and t.is_alpha and _lemma(t) not in _LIGHT and not (t.pos_ == "VERB" and t.dep_ == "prep")]


def _subject_words(token) -> set[str]:
    """The content lemmas of the subject of `token`'s clause (empty when it has none). A "they"
    stands for the last plural subject before it in the same text: "constraints must have a name,
    they cannot be editable" says "constraints cannot be editable"."""
    subject = _subject(token)
    if subject is not None and subject.lower_ == "they":
        subject = next((t for t in reversed(token.doc[:subject.i]) if t.dep_ in ("nsubj", "nsubjpass")
                        and t.tag_ in ("NNS", "NNPS")), subject)
    return set() if subject is None else {_word(w) for w in subject.subtree if w.pos_ in CONTENT_POS and not w.is_stop}
