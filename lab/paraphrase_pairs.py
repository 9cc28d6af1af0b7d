"""Author (claim, evidence, label) training pairs for the verifier from open documents, in the answer-check style.

From each evidence sentence of an open document (ravbot's own docs/, ../shared/data/wikipedia-mini)
`author_pairs` makes up to three claims, each read against the sentence (sometimes with a neighbour):
- **supports**: a light rewording (citations and parentheses dropped, a small synonym list, a leading
  discourse marker dropped) or a *subset* of it (a prepositional phrase, a second conjunct or a
  comma clause left out);
- **refutes**: the rewording with its polarity or direction *flipped* (a lexicon of opposites:
  allow/forbid, enable/disable, required/optional, before/after, increase/decrease, on/off, ...;
  or a negation inserted or removed: "is" → "is not", "performs" → "does not perform");
- **nei**: the rewording *embellished* with a plausible detail the evidence never states (a
  prepositional phrase from a sentence of another document, a qualifier such as "by default" or
  "every 5 minutes", or an adjective on the object).
The parse is spaCy's (`pipeline.claims.load_nlp`). Never reads ../shared/answer-check or ../shared/holdout.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from pipeline.claims import strip_citations

REPO_DOCS = Path(__file__).resolve().parent.parent / "docs"
WIKIPEDIA_MINI = "wikipedia-mini/articles.jsonl"  # relative to ../shared/data
FORBIDDEN = ("answer-check", "holdout")

# Opposites, both directions (inflected forms listed: no inflection library is installed).
_OPPOSITES = [
    ("allow", "forbid"), ("allows", "forbids"), ("allowed", "forbidden"), ("permit", "prohibit"),
    ("permits", "prohibits"), ("permitted", "prohibited"), ("enable", "disable"), ("enables", "disables"),
    ("enabled", "disabled"), ("enabling", "disabling"), ("required", "optional"), ("mandatory", "optional"),
    ("before", "after"), ("increase", "decrease"), ("increases", "decreases"), ("increased", "decreased"),
    ("increasing", "decreasing"), ("higher", "lower"), ("more", "fewer"), ("less", "more"), ("larger", "smaller"),
    ("largest", "smallest"), ("synchronous", "asynchronous"), ("synchronously", "asynchronously"), ("sync", "async"),
    ("on", "off"), ("true", "false"), ("always", "never"), ("include", "exclude"), ("includes", "excludes"),
    ("included", "excluded"), ("accept", "reject"), ("accepts", "rejects"), ("accepted", "rejected"),
    ("start", "stop"), ("starts", "stops"), ("started", "stopped"), ("open", "closed"), ("public", "private"),
    ("inside", "outside"), ("first", "last"), ("minimum", "maximum"), ("earliest", "latest"), ("success", "failure"),
    ("succeeds", "fails"), ("succeeded", "failed"), ("above", "below"), ("rise", "fall"), ("rose", "fell"),
    ("rises", "falls"), ("gain", "lose"), ("gained", "lost"), ("won", "lost"), ("north", "south"),
    ("east", "west"), ("northern", "southern"), ("eastern", "western"), ("early", "late"), ("earlier", "later"),
    ("same", "different"), ("supports", "opposes"), ("supported", "opposed"), ("add", "remove"), ("adds", "removes"),
    ("added", "removed"), ("expanded", "reduced"), ("grew", "shrank"), ("warmer", "cooler"), ("warm", "cool"),
    ("hot", "cold"), ("positive", "negative"), ("present", "absent"), ("visible", "hidden"), ("import", "export"),
    ("imports", "exports"), ("inbound", "outbound"), ("upload", "download"), ("input", "output"),
    ("encrypted", "unencrypted"), ("online", "offline"), ("local", "remote"), ("automatically", "manually"),
    ("automatic", "manual"), ("with", "without"), ("can", "cannot"), ("must", "must not"), ("should", "should not"),
    ("will", "will not"), ("success", "failure"), ("strong", "weak"), ("stronger", "weaker"), ("major", "minor"),
    ("majority", "minority"), ("all", "none of the"), ("ancient", "modern"), ("internal", "external"),
    ("faster", "slower"), ("old", "new"), ("older", "newer"), ("oldest", "newest"), ("long", "short"),
    ("longer", "shorter"), ("high", "low"), ("large", "small"), ("many", "few"), ("most", "least"),
    ("reduces", "increases"), ("reduced", "increased"), ("improves", "worsens"), ("improved", "worsened"),
    ("read-only", "writable"), ("stateless", "stateful"), ("blocking", "non-blocking"), ("valid", "invalid"),
    ("safe", "unsafe"), ("secure", "insecure"), ("possible", "impossible"), ("able", "unable"), ("legal", "illegal"),
    ("lowercase", "uppercase"), ("ascending", "descending"), ("entered", "left"), ("joined", "left"),
    ("win", "lose"), ("victory", "defeat"), ("defeated", "was defeated by"), ("born", "died"),
]
_FLIP = {}
for _a, _b in _OPPOSITES:
    _FLIP.setdefault(_a, _b)
    _FLIP.setdefault(_b, _a)

_SYNONYMS = {
    "uses": "employs", "use": "employ", "used": "employed", "allows": "lets", "large": "big", "big": "large",
    "begins": "starts", "began": "started", "shows": "displays", "displays": "shows", "needs": "requires",
    "requires": "needs", "quickly": "rapidly", "many": "numerous",
    "buy": "purchase", "gets": "obtains", "creates": "makes", "makes": "creates", "chooses": "selects",
    "often": "frequently", "frequently": "often", "also": "additionally", "built": "constructed",
    "constructed": "built", "located": "situated", "situated": "located", "called": "named", "named": "called",
    "stores": "keeps", "keeps": "stores", "returns": "gives back", "removes": "deletes",
    "deletes": "removes", "sends": "posts", "receives": "gets", "contains": "holds", "holds": "contains",
    "died": "passed away", "however": "", "helps": "assists", "assists": "helps", "important": "significant",
    "significant": "important", "largest": "biggest", "biggest": "largest", "small": "little", "major": "principal",
    "main": "principal", "ended": "finished", "finished": "ended", "produced": "made",
    "established": "founded", "founded": "established", "completed": "finished",
    "approximately": "around", "around": "approximately", "several": "a number of",
    "checks": "verifies", "verifies": "checks", "lists": "shows", "describes": "explains", "explains": "describes",
}
_DISCOURSE = re.compile(r"^(however|in addition|also|additionally|moreover|furthermore|thus|therefore|as a result|"
                        r"in fact|for example|instead|then|finally|by contrast|in contrast)\s*,\s*", re.IGNORECASE)
_DETAILS = [
    "by default", "automatically", "every {n} minutes", "within {n} seconds", "since version {a}.{b}", "in {year}",
    "for security reasons", "to improve performance", "on every platform", "at least {n} times", "only for administrators",
    "without any configuration", "after a restart", "for up to {n} days", "in parallel", "on a daily basis",
    "through a separate service", "with a {n}-second timeout", "for each user", "according to a {year} survey",
    "under a new law", "with government funding", "during the winter", "for the first time", "in most cases",
    "in the {century}th century", "by about {n} percent", "in several countries", "at night", "using a cache",
]
_ADJECTIVES = ["encrypted", "compressed", "remote", "temporary", "external", "official", "detailed", "annual",
               "private", "national", "digital", "secondary", "additional", "custom", "larger"]
_SAFE_PREPS = {"in", "at", "on", "for", "from", "during", "by", "with", "through", "via", "within", "across", "into", "over"}
_DONOR_PREPS = {"in", "at", "on", "for", "during", "with", "through", "via", "within", "across", "using", "after", "under", "near"}
_NEG_WORDS = {"not", "n't", "never", "no", "without", "except", "unless", "only", "nor", "neither", "none"}


@dataclass(frozen=True)
class AuthoredPair:
    """One authored pair: `label` is one of supports / refutes / nei; `source` the sentence it came from."""

    claim: str
    evidence: str
    label: str
    kind: str  # paraphrase | subset | flip | embellish | other-sentence
    source: str
    origin: str  # docs | wikipedia


# --------------------------------------------------------------------------- reading open documents


def _markdown_sentences(text: str) -> list[str]:
    """Prose sentences of a Markdown page: code blocks, tables, headings and markup dropped."""
    text = re.sub(r"```.*?```", " ", text, flags=re.DOTALL)
    lines = []
    for line in text.splitlines():
        s = line.strip()
        if not s or s.startswith(("#", "|", "<", ">")):
            lines.append("")
            continue
        s = re.sub(r"^(?:[-*+]|\d+[.)])\s+", "", s)
        lines.append(s)
    prose = " ".join(lines)
    prose = re.sub(r"\[([^\]]+)\]\([^)]*\)", r"\1", prose)  # links → their text
    prose = re.sub(r"[*_]{1,2}([^*_]+)[*_]{1,2}", r"\1", prose)
    prose = prose.replace("`", "")
    prose = re.sub(r"\s+", " ", prose)
    return [s.strip() for s in re.split(r"(?<=[.!?])\s+(?=[A-Z])", prose) if s.strip()]


def _usable(sentence: str) -> bool:
    words = sentence.split()
    return 6 <= len(words) <= 40 and sentence.endswith(".") and sum(c.isalpha() for c in sentence) > 0.6 * len(sentence)


def open_documents(data_dir: Path, docs_dir: Path = REPO_DOCS, max_wikipedia: int | None = None) -> list[tuple[str, str, list[str]]]:
    """(origin, name, sentences in order) for ravbot's docs/*.md and the wikipedia-mini articles."""
    for path in (Path(data_dir), Path(docs_dir)):
        if any(part in FORBIDDEN for part in path.resolve().parts):
            raise ValueError(f"refusing to author pairs from {path}: answer-check and holdout are kept for measuring")
    out: list[tuple[str, str, list[str]]] = []
    for path in sorted(Path(docs_dir).glob("*.md")):
        out.append(("docs", path.name, _markdown_sentences(path.read_text(encoding="utf-8"))))
    wiki = Path(data_dir) / WIKIPEDIA_MINI
    if wiki.is_file():
        rows = [json.loads(line) for line in wiki.read_text(encoding="utf-8").splitlines() if line.strip()]
        for row in rows[:max_wikipedia]:
            out.append(("wikipedia", row["title"], [re.sub(r"\s+", " ", s).strip() for s in row["sentences"]]))
    return out


def source_files(data_dir: Path, docs_dir: Path = REPO_DOCS) -> dict[str, str]:
    """sha256 of every file `open_documents` reads, by a stable name."""
    files = {f"docs/{p.name}": p for p in sorted(Path(docs_dir).glob("*.md"))}
    wiki = Path(data_dir) / WIKIPEDIA_MINI
    if wiki.is_file():
        files[WIKIPEDIA_MINI] = wiki
    return {name: hashlib.sha256(p.read_bytes()).hexdigest() for name, p in files.items()}


# --------------------------------------------------------------------------- rewrites


def _case_like(word: str, template: str) -> str:
    return word[:1].upper() + word[1:] if template[:1].isupper() else word


def _join(tokens: Iterable) -> str:
    return re.sub(r"\s+([.,;:!?%)])", r"\1", "".join(t.text_with_ws if hasattr(t, "text_with_ws") else t for t in tokens)).strip()


def reword(sentence: str, rng: random.Random) -> str:
    """A light rewording that keeps the meaning: citations, parentheses and a leading discourse marker
    dropped, and some words swapped for synonyms from a small list."""
    text = strip_citations(sentence)
    if rng.random() < 0.7:
        text = re.sub(r"\s*\([^()]*\)", "", text)
    text = _DISCOURSE.sub("", text)
    text = text[:1].upper() + text[1:]
    words = re.split(r"(\W+)", text)
    for i, w in enumerate(words):
        low = w.lower()
        if low in _SYNONYMS and rng.random() < 0.5:
            new = _SYNONYMS[low]
            words[i] = _case_like(new, w) if new else ""
    text = re.sub(r"\s+", " ", "".join(words)).strip()
    text = re.sub(r"^\W+", "", text)
    return text[:1].upper() + text[1:] if text else ""


def subset(doc, rng: random.Random) -> str:
    """The sentence with one optional part left out (a prepositional phrase on the main verb, a second
    conjunct of the main verb, or a comma-set relative clause), so that the evidence still entails it; or ''."""
    root = next((t for t in doc if t.dep_ == "ROOT"), None)
    if root is None:
        return ""
    options = []
    for child in root.children:
        span = list(child.subtree)
        words = {t.lower_ for t in span}
        if words & _NEG_WORDS:
            continue
        if child.dep_ == "prep" and child.lower_ in _SAFE_PREPS and 2 <= len(span) <= 8:
            options.append(span)
        elif child.dep_ == "conj" and child.pos_ in ("VERB", "AUX") and child.i > root.i:
            cc = [t for t in root.children if t.dep_ == "cc" and t.i < child.i]
            options.append(cc[-1:] + span)
    for t in doc:
        if t.dep_ == "relcl" and t.head.i < t.i and t.i > 0 and doc[t.left_edge.i - 1].text == ",":
            span = [doc[t.left_edge.i - 1], *t.subtree]
            if not {x.lower_ for x in span} & _NEG_WORDS:
                options.append(span)
    if not options:
        return ""
    drop = {t.i for t in rng.choice(options)}
    text = _join(t for t in doc if t.i not in drop)
    text = re.sub(r"\s*,\s*([.])$", r"\1", text)
    text = re.sub(r"^[\W_]+", "", text)
    text = text[:1].upper() + text[1:]
    return text if len(text.split()) >= 4 and text != doc.text else ""


def _third_person(lemma: str) -> str:
    if re.search(r"(s|sh|ch|x|z|o)$", lemma):
        return lemma + "es"
    if re.search(r"[^aeiou]y$", lemma):
        return lemma[:-1] + "ies"
    return lemma + "s"


def flip_polarity(doc, rng: random.Random) -> str:
    """The sentence with its meaning flipped: an opposite from the lexicon, or a negation removed or
    inserted on the main verb; '' when no rule applies."""
    options: list[str] = []
    tokens = list(doc)
    for t in tokens:  # opposites
        low = t.lower_
        negated_next = t.i + 1 < len(doc) and doc[t.i + 1].lower_ in ("not", "n't")
        if low in _FLIP and not negated_next:
            if low in ("on", "off") and t.dep_ not in ("prt", "advmod", "acomp", "amod"):
                continue
            if low in ("with", "first", "all", "old", "long", "high", "large", "many", "most", "more", "less", "open",
                       "present", "early", "late") and rng.random() < 0.5:
                continue
            options.append(_join([*(x.text_with_ws for x in tokens[:t.i]), _case_like(_FLIP[low], t.text) + t.whitespace_,
                                  *(x.text_with_ws for x in tokens[t.i + 1:])]))
    for t in tokens:  # a negation removed
        if t.dep_ == "neg" or t.lower_ in ("not", "never"):
            head = t.head
            before = tokens[t.i - 1] if t.i > 0 else None
            if t.lower_ == "never":
                options.append(_join([*(x.text_with_ws for x in tokens[:t.i]), _case_like("always", t.text) + " ",
                                      *(x.text_with_ws for x in tokens[t.i + 1:])]))
            elif before is not None and before.lower_ in ("does", "do", "did") and head.pos_ == "VERB":
                verb = _third_person(head.lemma_) if before.lower_ == "does" else head.lemma_ if before.lower_ == "do" else head.text
                if before.lower_ == "did":
                    continue
                words = [x.text_with_ws for x in tokens]
                words[before.i], words[t.i] = "", ""
                words[head.i] = verb + head.whitespace_
                options.append(_join(words))
            else:
                words = [x.text_with_ws for x in tokens]
                words[t.i] = "" if t.lower_ != "n't" else " "
                if before is not None and not before.whitespace_:  # "cannot" and "can't" are two tokens each
                    words[before.i] = ("can" if before.lower_ == "ca" else before.text) + (t.whitespace_ or " ")
                    words[t.i] = ""
                options.append(_join(words))
            break
        if t.lower_ == "cannot":
            options.append(_join([*(x.text_with_ws for x in tokens[:t.i]), _case_like("can", t.text) + t.whitespace_,
                                  *(x.text_with_ws for x in tokens[t.i + 1:])]))
            break
    if not any(t.dep_ == "neg" or t.lower_ in ("not", "never", "cannot") for t in tokens):  # a negation inserted
        root = next((t for t in tokens if t.dep_ == "ROOT"), None)
        if root is not None:
            auxes = [c for c in root.children if c.dep_ in ("aux", "auxpass") and c.i < root.i]
            target = auxes[0] if auxes else root if root.lemma_ == "be" else None
            if target is not None and target.lower_ not in ("to",):
                words = [x.text_with_ws for x in tokens]
                words[target.i] = target.text + " not" + (target.whitespace_ or " ")
                options.append(_join(words))
            elif root.pos_ == "VERB" and root.tag_ in ("VBZ", "VBD", "VBP"):
                aux = {"VBZ": "does", "VBD": "did", "VBP": "do"}[root.tag_]
                words = [x.text_with_ws for x in tokens]
                words[root.i] = f"{aux} not {root.lemma_}{root.whitespace_}"
                options.append(_join(words))
    options = [o for o in options if o and o != doc.text]
    if not options:
        return ""
    return rng.choice(options)


def _donor_phrase(doc) -> str:
    for t in doc:
        if t.dep_ == "prep" and t.lower_ in _DONOR_PREPS and t.head.pos_ in ("VERB", "AUX"):
            span = list(t.subtree)
            if 3 <= len(span) <= 8 and not {x.lower_ for x in span} & _NEG_WORDS:
                return _join(span)
    return ""


def embellish(doc, donors: Sequence[str], evidence: str, rng: random.Random) -> str:
    """The sentence with a plausible detail added that `evidence` does not state: a prepositional phrase
    from a donor sentence of another document, a qualifier from a list, or an adjective on the object; or ''."""
    text = doc.text.rstrip(" .")
    known = {w.lower() for w in re.findall(r"\w+", evidence)}
    choice = rng.random()
    detail = ""
    if choice < 0.45 and donors:
        detail = rng.choice(donors)
    elif choice < 0.85:
        detail = rng.choice(_DETAILS).format(n=rng.choice([2, 3, 5, 10, 15, 30, 60]), a=rng.randint(1, 4), b=rng.randint(0, 12),
                                             year=rng.randint(1950, 2024), century=rng.randint(15, 20))
    else:
        objects = [t for t in doc if t.dep_ in ("dobj", "pobj") and t.pos_ == "NOUN" and not any(c.dep_ == "amod" for c in t.children)]
        if objects:
            obj = rng.choice(objects)
            adjective = rng.choice(_ADJECTIVES)
            if adjective not in known:
                start = min(c.i for c in obj.subtree if c.i <= obj.i and c.dep_ not in ("det", "poss", "nummod")) if any(
                    c.dep_ in ("compound",) for c in obj.children) else obj.i
                words = [x.text_with_ws for x in doc]
                words[start] = adjective + " " + words[start]
                return _join(words).rstrip(" .") + "."
        return ""
    new = {w.lower() for w in re.findall(r"\w+", detail)} - known - {"the", "a", "an", "of", "in", "to", "and", "for", "on", "at"}
    if not detail or not new:
        return ""
    return f"{text} {detail}."


# --------------------------------------------------------------------------- the pairs


def author_pairs(documents: Sequence[tuple[str, str, list[str]]], seed: int = 0, nlp=None) -> list[AuthoredPair]:
    """Supports / refutes / nei pairs from each usable sentence of `documents` (see the module docstring)."""
    from pipeline.claims import load_nlp

    nlp = nlp or load_nlp()
    rng = random.Random(seed)
    sentences = [(oi, si, s) for oi, (_, _, ss) in enumerate(documents) for si, s in enumerate(ss) if _usable(s)]
    reworded_texts = [reword(s, rng) for _, _, s in sentences]
    reparsed = list(nlp.pipe(reworded_texts, batch_size=256, disable=["ner"]))
    donors_by_doc: dict[int, list[str]] = {}
    for (oi, _, _), rdoc in zip(sentences, reparsed, strict=True):
        phrase = _donor_phrase(rdoc)
        if phrase:
            donors_by_doc.setdefault(oi, []).append(phrase)
    doc_ids = sorted(donors_by_doc)
    out: list[AuthoredPair] = []
    for (oi, si, sentence), rdoc in zip(sentences, reparsed, strict=True):
        origin, _, all_sentences = documents[oi]
        evidence = sentence
        if rng.random() < 0.4 and len(all_sentences) > 1:  # a two-sentence window, as the verifier reads them
            j = si + 1 if si + 1 < len(all_sentences) and rng.random() < 0.5 else max(0, si - 1)
            evidence = " ".join([all_sentences[min(si, j)], all_sentences[max(si, j)]]) if j != si else sentence
        evidence = strip_citations(evidence)

        def add(claim: str, label: str, kind: str, evidence: str = evidence, origin: str = origin, sentence: str = sentence) -> None:
            claim = re.sub(r"\b([Aa]) (?=[aeiou])", r"\1n ", re.sub(r"\s+", " ", claim).strip())
            if claim and len(claim.split()) >= 4:
                out.append(AuthoredPair(claim, evidence, label, kind, sentence, origin))

        if rng.random() < 0.5:
            add(subset(rdoc, rng) or rdoc.text, "supports", "subset")
        else:
            add(rdoc.text, "supports", "paraphrase")
        add(flip_polarity(rdoc, rng), "refutes", "flip")
        donors = [p for d in rng.sample(doc_ids, min(3, len(doc_ids))) if d != oi for p in donors_by_doc[d]]
        add(embellish(rdoc, donors, evidence, rng), "nei", "embellish")
        others = [s for k, s in enumerate(all_sentences) if abs(k - si) > 1 and _usable(s)]
        if others and rng.random() < 0.15:  # another sentence of the same document: not enough info
            add(rdoc.text, "nei", "other-sentence", evidence=strip_citations(rng.choice(others)))
    return out
