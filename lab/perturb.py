"""Perturbation: the generator that changes exactly one number, date or named entity of a claim
(seeded, never to a value the claim or its evidence states), the perturbation sets made with it, and
which of their changes the evidence can decide at all (`checkable`, `kept_bound`)."""

from __future__ import annotations

import difflib
import math
import random
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from lab.datasets import Pair

ENTITY_LABELS = ("PERSON", "ORG", "GPE", "LOC", "NORP", "FAC", "PRODUCT", "EVENT", "WORK_OF_ART", "LAW", "LANGUAGE")
# Replacements when the data set itself offers no other entity of the same kind.
FALLBACK_ENTITIES = {
    "PERSON": ["Maria Lopez", "John Carter", "Wei Zhang", "Amara Okafor", "Henrik Larsen"],
    "ORG": ["the World Bank", "Siemens", "Harvard University", "UNESCO", "Toyota"],
    "GPE": ["Brazil", "Canada", "Kenya", "Norway", "Vietnam", "Chile"],
    "LOC": ["the Sahara", "the Pacific Ocean", "the Alps", "Antarctica", "the Amazon basin"],
    "NORP": ["Canadian", "German", "Brazilian", "Japanese", "Nigerian"],
    "FAC": ["Heathrow Airport", "the Golden Gate Bridge", "Wembley Stadium"],
    "PRODUCT": ["Windows", "iPhone", "Boeing 747"],
    "EVENT": ["the Olympic Games", "World War I", "the Cold War"],
    "WORK_OF_ART": ["Hamlet", "the Mona Lisa", "Don Quixote"],
    "LAW": ["the Clean Air Act", "the Kyoto Protocol", "the Patriot Act"],
    "LANGUAGE": ["French", "Spanish", "Mandarin"],
}
MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August",
          "September", "October", "November", "December")
# A number that is a value, not part of a name: not after a letter ("p53", "COVID-19", "B12").
_NUMBER = re.compile(r"(?<![\w.,])(?<![A-Za-z]-)(\d{1,3}(?:,\d{3})+|\d+)(\.\d+)?(?![\d,.]*\d)(?![A-Z])")


@dataclass(frozen=True)
class Perturbation:
    """`claim` is `original` with `original[start:end]` (= `old`) replaced by `new`."""

    original: str
    claim: str
    kind: str  # number | date | entity
    old: str
    new: str
    start: int
    end: int


def _new_numbers(text: str, percent: bool, year: bool, avoid: str, decade: bool = False) -> list[str]:
    """Different numbers written like `text` (same decimals and thousands separators), none in `avoid`."""
    digits, _, decimals = text.replace(",", "").partition(".")
    value = float(digits + ("." + decimals if decimals else ""))
    if decade:
        options = [value + d for d in (-30, -20, -10, 10, 20)]
    elif year:
        options = [value + d for d in (-5, -4, -3, -2, -1, 1, 2, 3, 4, 5)]
    else:
        options = [value * 2, value * 3, value / 2, value + 1, value + 2, value - 1, value * 10]
    if percent:
        options = [v for v in options if v <= 100]
    places = len(decimals)
    written: list[str] = []
    for v in options:
        if v <= 0 or (not places and v != int(v)):
            continue
        s = f"{v:,.{places}f}" if "," in text else f"{v:.{places}f}"
        if s != text and s not in written and not re.search(rf"(?<![\d.,]){re.escape(s)}(?!\d)", avoid):
            written.append(s)
    return written


def _shape(text: str) -> str:
    if text.isupper():
        return "acronym"
    return "lower" if text[:1].islower() else ("multi" if " " in text else "word")


def entity_pool(texts: Iterable[str], nlp=None) -> dict[str, list[str]]:
    """{spaCy label: sorted distinct entity texts} found in `texts` (replacement candidates)."""
    nlp = nlp or _nlp()
    pool: dict[str, set[str]] = {}
    for doc in nlp.pipe(texts):
        for ent in doc.ents:
            if ent.label_ in ENTITY_LABELS and not any(c.isdigit() for c in ent.text):
                pool.setdefault(ent.label_, set()).add(ent.text)
    return {label: sorted(values) for label, values in pool.items()}


def _nlp():
    from pipeline.claims import load_nlp

    return load_nlp()


def perturb_claim(
    claim: str,
    *,
    seed: int = 0,
    evidence: Sequence[str] = (),
    pool: Mapping[str, Sequence[str]] | None = None,
    nlp=None,
) -> Perturbation | None:
    """Change exactly one number, date or named entity of `claim`; None when it has none that can change.

    Deterministic for a given (claim, seed, pool). The new value never appears in the claim or
    the evidence (so the changed claim is not accidentally true) and never equals the old one."""
    nlp = nlp or _nlp()
    doc = nlp(claim)
    rng = random.Random(f"{seed}:{claim}")
    avoid = (claim + "\n" + "\n".join(evidence)).lower()
    named = [e for e in doc.ents if e.label_ in ENTITY_LABELS]
    dates = [e for e in doc.ents if e.label_ in ("DATE", "TIME")]
    options: list[tuple[str, int, int, list[str]]] = []  # (kind, start, end, replacements)

    for m in _NUMBER.finditer(claim):
        start, end = m.span()
        if any(e.start_char <= start < e.end_char for e in named):
            continue  # a number inside a name ("Apollo 11") is part of the name
        in_date = any(e.start_char <= start < e.end_char for e in dates)
        text = m.group(0)
        year = in_date or (len(text) == 4 and text.isdigit() and 1500 <= int(text) <= 2100)
        percent = bool(re.match(r"\s*(%|percent|per cent)", claim[end:]))
        decade = text.endswith("0") and claim[end:end + 1] == "s"
        options.append(("date" if year else "number", start, end, _new_numbers(text, percent, year, avoid, decade)))
    for m in re.finditer(r"\b(" + "|".join(MONTHS) + r")\b", claim):
        if any(e.start_char <= m.start() < e.end_char for e in dates):
            options.append(("date", m.start(), m.end(), [x for x in MONTHS if x.lower() not in avoid]))
    for ent in named:
        if any(c.isdigit() for c in ent.text):
            continue
        old = ent.text.lower()

        def usable(candidates: Iterable[str], old: str = old) -> list[str]:
            return [c for c in dict.fromkeys(candidates)
                    if c.lower() not in avoid and old not in c.lower() and c.lower() not in old]

        fresh = usable((pool or {}).get(ent.label_, ())) or usable(FALLBACK_ENTITIES.get(ent.label_, []))
        alike = [c for c in fresh if _shape(c) == _shape(ent.text)]
        options.append(("entity", ent.start_char, ent.end_char, alike or fresh))

    rng.shuffle(options)
    for kind, start, end, replacements in options:
        if replacements:
            new = rng.choice(replacements)
            return Perturbation(claim, claim[:start] + new + claim[end:], kind, claim[start:end], new, start, end)
    return None


def perturbation_set(pairs: Sequence[Pair], *, seed: int = 0, nlp=None) -> list[Pair]:
    """From the supported pairs: each original (label supported) followed by its one-value change
    (label refuted) where one exists. Entity replacements come from the entities of these claims."""
    nlp = nlp or _nlp()
    supported = [p for p in pairs if p.label == "supported" and p.evidence]
    pool = entity_pool((p.claim for p in supported), nlp)
    out: list[Pair] = []
    for p in supported:
        change = perturb_claim(p.claim, seed=seed, evidence=p.evidence, pool=pool, nlp=nlp)
        if change is None:
            continue
        out.append(replace(p, perturbation="none", original_claim=p.claim))
        out.append(replace(p, claim=change.claim, label="refuted", perturbation=change.kind,
                           original_claim=p.claim, id=f"{p.id}:perturbed"))
    return out



_TOKEN = re.compile(r"\w+(?:[.,]\d+)*%?|[^\w\s]")


def changed_span(original: str, claim: str) -> tuple[str, str]:
    """What `claim` changed in `original`: (the original's words it replaced, the words that replaced
    them), each joined by single spaces; ('', '') when the two are the same."""
    a, b = _TOKEN.findall(original), _TOKEN.findall(claim)
    old: list[str] = []
    new: list[str] = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
        if op != "equal":
            old += a[i1:i2]
            new += b[j1:j2]
    return " ".join(old), " ".join(new)


def is_stated(value: str, evidence: Sequence[str]) -> bool:
    """Whether the evidence states `value`: a number, date or percentage after normalisation
    (pipeline.numbers), anything else as a name (spelled out, abbreviated or defined as an acronym)."""
    from pipeline import numbers, verify

    passage = " ".join(evidence)
    values = numbers.extract_values(value)
    if values:
        stated = numbers.extract_values(passage)
        return all(numbers.present(v, stated) for v in values)
    return verify.name_present(value, passage.lower(), verify.content_words(passage), verify.acronyms(passage))


def checkable(pairs: Sequence[Pair]) -> dict[str, bool]:
    """{pair id: whether the evidence can decide it}. A change is checkable when the evidence states
    the value it replaced (the evidence then says something else where the claim's value should be);
    an original is checkable when every one of its changes is. A change of a value the evidence never
    states leaves the original and the change equally unconfirmed."""
    out: dict[str, bool] = {}
    for p in pairs:
        if p.label == "refuted" and p.original_claim:
            old, _ = changed_span(p.original_claim, p.claim)
            out[p.id] = bool(old) and is_stated(old, p.evidence)
    changes: dict[str, list[bool]] = {}
    for p in pairs:
        if p.id in out:
            changes.setdefault(p.original_claim, []).append(out[p.id])
    for p in pairs:
        if p.label == "supported":
            mine = changes.get(p.claim, [])
            out[p.id] = bool(mine) and all(mine)
    return out


def kept_bound(pairs: Sequence[Pair], passed: float = 0.05) -> dict[str, Any] | None:
    """The most originals any verifier can keep SUPPORTED while at most `passed` of the changes stay
    SUPPORTED, if it gives a claim the same label when one number the evidence never states is replaced
    by another it never states (an evidence-only verifier cannot tell "in 2001" from "in 2003" when
    the source says neither). Each such number change passes exactly when its original is kept, so
    all but `passed` of them need their original rejected; the fewest originals that covers, rejecting
    those with the most such changes first, bounds what can be kept. None without originals."""
    originals = {p.claim for p in pairs if p.label == "supported"}
    changes = [p for p in pairs if p.label == "refuted"]
    if not originals or not changes:
        return None
    blind: Counter[str] = Counter()
    for p in changes:
        if p.perturbation in ("number", "date") and p.original_claim in originals:
            old, new = changed_span(p.original_claim, p.claim)
            if old and not is_stated(old, p.evidence) and not is_stated(new, p.evidence):
                blind[p.original_claim] += 1
    to_block = sum(blind.values()) - math.floor(passed * len(changes))
    rejected = 0
    for _, n in blind.most_common():
        if to_block <= 0:
            break
        to_block -= n
        rejected += 1
    return {"passed": passed, "unstated_number_changes": sum(blind.values()), "changes": len(changes),
            "best_kept": round(1 - rejected / len(originals), 4)}

