"""Alignment: for each claim, the evidence sentence or window it is about, and the symbolic signals
(numbers, dates, names, codes, negation, direction) comparing the two. No decision is taken here."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from pipeline import numbers
from pipeline.names import mentions, names
from pipeline.text import (
    FUNCTION_WORDS,
    NAME_LABELS,
    TERM,
    terms,
)
from pipeline.verify import code, details, flips, meaning, polarity, rivals, roles
from pipeline.verify.candidates import _overlap_key, content_words, evidence_candidates
from pipeline.verify.polarity import DOWN_WORDS, UP_WORDS, _negation_differs, direction, negated  # noqa: F401 (re-exported)

MEANING_CANDIDATES = 3  # aligned sentences/windows read for names in place, flips and added content
MEANING_MIN_SIMILARITY = 0.5  # … when at least this similar to the claim (cosine)
EXTRA_MIN_GAIN = 0.0  # added content counts when dropping it brings the claim at least this much closer to its evidence
EXTRA_NAMED_MIN_GAIN = -0.2  # … or when it holds a name the passages never mention, unless dropping it brings the claim far closer
_SUBSCRIPT_GAP = re.compile(r"(?<=[a-z]) (?=\d)")
_TYPE_GROUP = {"GPE": "PLACE", "LOC": "PLACE", "NORP": "PLACE", "FAC": "PLACE"}
# Words before a number that quantify it rather than name what it counts ("at least 25", "over 75").
_NOT_LABELS = frozenset("least most about around approximately nearly almost roughly exactly just only up over under "
                        "within another every last next first total minimum maximum".split())
_HARD_KINDS = frozenset({"year", "decade", "percent", "number", "month", "version"})

SYMBOLIC_FEATURES = (
    "cos_best", "cos_second", "cos_passage_mean", "coverage", "absent_words", "salient_n", "salient_absent",
    "num_n", "num_matched", "num_conflict", "num_absent", "ent_n", "ent_matched", "ent_conflict",
    "ent_absent", "salient_frac_absent", "salient_conflict", "num_soft_conflict", "negation_mismatch", "direction_mismatch", "claim_len", "best_len",
)


@dataclass
class Alignment:
    """What `analyse` found for one claim: the best evidence sentence/window and the symbolic signals."""

    claim: str
    sentence: str = ""
    evidence_index: int = -1
    features: dict[str, float] = field(default_factory=dict)
    conflict: str = ""
    conflict_kind: str = ""  # "number" | "entity" | ""
    u: np.ndarray | None = None
    v: np.ndarray | None = None
    candidates: list[tuple[str, int, float]] = field(default_factory=list)  # (text, evidence index, cosine), best first
    unconfirmed: str = ""  # a number of the claim (in digits) that the evidence nowhere states
    unnamed: str = ""  # a name of the claim that the evidence nowhere mentions
    invented: str = ""  # a name of the claim that no document of the knowledge base mentions
    name: str = ""  # a name of the claim the evidence lacks, where the aligned sentence has …
    name_rival: str = ""  # … this other name in its place
    rival_at: tuple[str, int] = ("", -1)  # the sentence (and evidence index) that has `name_rival`, when not `sentence`
    flip: str = ""  # the evidence's words where a predicate of the claim is negated or reversed
    extra: str = ""  # content of the claim that no evidence passage states
    extra_named: bool = False  # … holding a name those passages never mention
    extra_clause: bool = False  # … being a whole clause joined to the claim that no one evidence sentence states
    clause: str = ""  # a clause joined to the claim that no one evidence sentence states, beside other `extra`
    code_backed: bool = False  # every name and value of the claim is in one code example of its evidence
    cited: bool = False  # the answer attributes the claim to a source
    cited_passages: int = 0  # how many of its evidence passages, from the first, are the chunks it cites


def acronyms(text: str) -> dict[str, str]:
    """Abbreviations a text defines: "chronic kidney disease (CKD)" → {"ckd": "chronic kidney disease"}."""
    found = {}
    for m in re.finditer(r"\(([A-Z][A-Za-z0-9\-]{1,9})\)", text):
        short = m.group(1)
        letters = [c for c in short if c.isupper()]
        before = TERM.findall(text[max(0, m.start() - 120):m.start()])
        if letters and len(before) >= len(letters):
            found[short.lower()] = " ".join(before[-len(letters):]).lower()
    return found


def name_present(name: str, passage_lower: str, passage_words: set[str], defined: dict[str, str]) -> bool:
    """Whether `name` is in the passage: as written, without hyphens, as a defined abbreviation or
    its long form (`defined`, from `acronyms`), by all of its content stems, or by its initials."""
    name = re.sub(r"^the\s+|['’]s$", "", name.strip(), flags=re.IGNORECASE).lower()
    if not name:
        return True
    if name in passage_lower or name.replace("-", "") in passage_lower.replace("-", ""):
        return True
    if any(c.isdigit() for c in name) and name.replace(" ", "") in _SUBSCRIPT_GAP.sub("", passage_lower):
        return True  # "CO2" where Wikipedia's text has "CO 2" (a subscript)
    if name in defined:
        return True
    long_forms = {v: k for k, v in defined.items()}
    if name in long_forms:
        return True
    tokens = [_overlap_key(w) for w in terms(name) if len(w) > 2 and w not in FUNCTION_WORDS]
    if tokens and all(t in passage_words for t in tokens):
        return True
    initials = "".join(w[0] for w in terms(name) if w not in FUNCTION_WORDS)
    return len(initials) >= 2 and re.search(rf"\b{re.escape(initials)}\b", passage_lower) is not None


def _salient(claim: str) -> list[str]:
    """Tokens of the claim that name something: mid-sentence capitals, acronyms, letters mixed with digits."""
    out = []
    for i, m in enumerate(TERM.finditer(claim)):
        w = m.group(0)
        has_digit = any(c.isdigit() for c in w) and any(c.isalpha() for c in w)
        caps = sum(c.isupper() for c in w)
        if has_digit or caps >= 2 or (i > 0 and w[:1].isupper() and w.lower() not in FUNCTION_WORDS):
            out.append(w)
    return out


def _label_before(text: str, value: numbers.Value) -> str:
    """The word a bare number labels ("kinase" in "kinase 2", "phase" in "phase 3", "limit" in "a part
    limit of 10,000"), lowercased, or ''."""
    m = re.search(r"([A-Za-z][A-Za-z\-]{2,})\s+(?:of\s+)?$", text[:value.start])
    word = m.group(1).lower() if m else ""
    return "" if word in FUNCTION_WORDS or word in _NOT_LABELS else word


def _under_label(claim: str, value: numbers.Value, passage: str, passage_values: list) -> list[numbers.Value]:
    """The passage's numbers under the label of the claim's number: for "type 2 diabetes", those of
    "type 1" or "type 2" in the passage (not "interleukin 2"). Empty when the number has no label."""
    label = _label_before(claim, value)
    if value.kind != "number" or not label:
        return []
    return [e for e in passage_values if e.kind == "number" and _label_before(passage, e) == label]


def _shape(token: str) -> str:
    return re.sub(r"\d+", "0", token.lower())


_CODE = re.compile(r"\b[A-Za-z0-9][A-Za-z0-9\-]*\d[A-Za-z0-9\-]*\b")


def _codes(text: str) -> set[str]:
    """Tokens that mix letters and digits: "6q21", "H1N1", "CD4", "IL-6"."""
    return {t for t in _CODE.findall(text) if re.search(r"[A-Za-z]", t)}


def _code_rival(claim: str, passage: str) -> str:
    """A code of the same shape as one of the claim's that the passage has instead ("6q21" for "7q21",
    "H5N1" for "H1N1"): letters the same, digits different, the claim's code nowhere in the passage."""
    passage_codes, claim_codes = _codes(passage), _codes(claim)
    lowered, passage_lower = {c.lower() for c in claim_codes}, passage.lower()
    for mine in claim_codes:
        if mine.lower() in passage_lower:
            continue
        rival = next((t for t in sorted(passage_codes) if _shape(t) == _shape(mine) and t.lower() not in lowered), "")
        if rival:
            return rival
    return ""


def analyse(
    claims: Sequence[str],
    evidences: Sequence[Sequence[str]],
    embedder: Any,
    entities: Sequence[Sequence[tuple[str, str]]] | None = None,
    invented: Sequence[Sequence[str]] | None = None,
    given: str = "",
    cited: Sequence[bool] | None = None,
    cited_passages: Sequence[int] | None = None,
) -> list[Alignment]:
    """Align each claim with its best evidence sentence or window and compute the symbolic signals.
    `invented` lists, per claim, its names that no document of the knowledge base mentions (looked
    up by the caller); `given` is text whose words a claim may repeat without stating news (the question).

    `cited` marks the claims the answer attributes to a source. Only those are held to the wording
    of their evidence: content no passage states (`extra`), and a number stated in the passages but
    not where the claim's matter is (`unconfirmed`). An uncited claim's evidence is a search result,
    whose silence on a detail says little (on the open claim sets, the added-detail signal fired for
    as many true claims as false ones). `cited_passages` gives, per claim, how many of its evidence
    passages, from the first, are the chunks it cites: a name they state is no name swapped."""
    from pipeline.claims import load_nlp

    nlp = load_nlp()
    if entities is None:
        entities = [tuple((e.text, e.label_) for e in doc.ents) for doc in nlp.pipe(claims)]
    candidates = [evidence_candidates(c, ev) for c, ev in zip(claims, evidences, strict=True)]
    unique = list(dict.fromkeys([*claims, *(t for cands in candidates for t, _ in cands)]))
    table = dict(zip(unique, embedder.encode_cached(unique), strict=True)) if unique else {}
    results: list[Alignment] = []
    for i, (claim, cands) in enumerate(zip(claims, candidates, strict=True)):
        a = Alignment(claim, u=table[claim], cited=bool(cited and cited[i]),
                      cited_passages=cited_passages[i] if cited_passages else 0)
        if cands:
            sims = np.array([float(table[claim] @ table[t]) for t, _ in cands])
            order = np.argsort(-sims)
            # a passage's headings are the context of its sentences, not a statement to align with ("Git
            # 2.37.1 Release Notes" for a claim about another release), unless nothing else is there
            headings = {ei: [h for h in _heading(evidences[i][ei]).split("\n") if h] for ei in {ei for _, ei in cands}}
            eligible = [int(k) for k in order if cands[k][0] not in headings[cands[k][1]]]
            j = _with_the_claims_values(claim, cands, sims, eligible, headings) if eligible else int(order[0])
            a.sentence, a.evidence_index = cands[j]
            a.candidates = [(cands[k][0], cands[k][1], float(sims[k])) for k in order]
            a.v = table[a.sentence]
            a.features.update(
                cos_best=float(sims[j]),
                cos_second=float(sims[order[1]]) if len(order) > 1 else float(sims[j]),
                cos_passage_mean=float(np.mean(sims[order[:3]])),
            )
        else:
            a.v = np.zeros_like(table[claim])
            a.features.update(cos_best=0.0, cos_second=0.0, cos_passage_mean=0.0)
        results.append(a)
    meaning.parse_all([*(_meaning_claim(a.claim) for a in results), *(s for a in results for s in _about(a))])
    for i, (a, ev, ents) in enumerate(zip(results, evidences, entities, strict=True)):
        _symbolic(a, ev, ents)
        _meaning(a, ev, list(invented[i]) if invented else [], given)
    _keep_extras_that_matter(results, embedder)
    return results


def _keep_extras_that_matter(aligned: Sequence[Alignment], embedder: Any) -> None:
    """Keep an added-content signal only where the claim, without that content, matches its aligned
    evidence better by at least EXTRA_MIN_GAIN (cosine): a paraphrase ("came into the world" for
    "was born") loses nothing when its words are dropped; an added detail was what kept it apart.
    Content with a name the passages never mention (`pipeline.names`) is kept down to
    EXTRA_NAMED_MIN_GAIN: a paraphrase words the documents' actions, it does not bring in another
    team, tool or file (unless the rest of the claim is about something else than its evidence); nor
    does a clause of its own ("although …"). Where words read as a paraphrase are dropped, a joined
    clause that no evidence sentence states (`clause`) is the signal instead. A joined clause
    (`extra_clause`) is kept unless an evidence sentence says it in other words."""
    todo = [a for a in aligned if a.extra and not a.extra_clause and a.v is not None]
    reduced = [" ".join(a.claim.replace(a.extra, " ").split()) for a in todo]
    for a, vector in zip(todo, embedder.encode(reduced) if todo else [], strict=True):
        gain = float(vector @ a.v) - a.features.get("cos_best", 0.0)
        a.features["extra_gain"] = gain
        if gain < EXTRA_MIN_GAIN and not details.in_added_clause(_meaning_claim(a.claim), a.extra) \
                and not (a.extra_named and gain >= EXTRA_NAMED_MIN_GAIN):
            a.extra, a.extra_clause = a.clause, bool(a.clause)  # a joined clause no sentence states stands
    clauses = [a for a in aligned if a.extra_clause and a.candidates]
    for a, said in zip(clauses, details.reworded([a.extra for a in clauses], [[t for t, _, _ in a.candidates] for a in clauses],
                                                 embedder), strict=True):
        if said:  # "serves 404.html, if present, as the 404 response" for "if `404.html` exists it will be shown …"
            a.extra, a.extra_clause = "", False


def _meaning_claim(claim: str) -> str:
    """The claim as the meaning checks read it: without its citation markers."""
    from pipeline.claims import strip_citations

    return strip_citations(claim)


def _about(a: Alignment) -> list[str]:
    """The aligned sentences and windows the meaning checks read: the best few, when about the claim."""
    return [text for text, _, cos in a.candidates[:MEANING_CANDIDATES] if cos >= MEANING_MIN_SIMILARITY]


def _meaning(a: Alignment, evidence: Sequence[str], invented: list[str], given: str) -> None:
    """Fill the name, polarity and added-content signals (`pipeline.verify.meaning`)."""
    if not a.sentence:
        a.invented = invented[0] if invented else ""
        return
    claim = _meaning_claim(a.claim)
    about = _about(a)
    passages = list(dict.fromkeys(evidence[ei] for _, ei, _ in a.candidates[:MEANING_CANDIDATES] if 0 <= ei < len(evidence)))
    a.invented = invented[0] if invented else ""
    a.name, a.name_rival, a.rival_at = rivals.rival_in_place(claim, invented, a.sentence, a.evidence_index, about,
                                                             a.candidates, passages, evidence, a.cited_passages)
    a.flip = (flips.flipped(claim, about) or roles.swapped(claim, about) or roles.reversed_order(claim, about)
              or roles.preference_reversed(claim, about) or roles.antonyms_swapped(claim, about) or roles.precedence_reversed(claim, about)
              or roles.sequence_reversed(claim, about) or roles.list_order_reversed(claim, about)
              or roles.alternative_reversed(claim, about)
              or polarity.condition_flipped(claim, about) or polarity.restriction_flipped(claim, about)
              or polarity.default_flipped(claim, about) or polarity.state_flipped(claim, about)
              or polarity.past_flipped(claim, about))
    a.extra = details.unstated_details(claim, passages, given) if a.cited else ""
    # a statement joined to the claim that no one sentence of all of it states: "…, and it prints a warning"
    a.clause = details.unstated_clause(claim, list(dict.fromkeys(evidence)), given) if a.cited else ""
    a.extra, a.extra_clause = (a.extra, False) if a.extra else (a.clause, bool(a.clause))
    a.code_backed = code.backed(claim, passages)
    joined = " ".join(passages)
    masked = a.extra.replace(".", "_")  # the added words as `details` gives them: "request_query_params_get"
    a.extra_named = bool(a.extra) and any(n.text.replace(".", "_") in masked and not mentions(n.text, joined)
                                          for n in names(claim))


def _symbolic(a: Alignment, evidence: Sequence[str], claim_ents: Sequence[tuple[str, str]]) -> None:
    """Fill `a.features` with the word, number, name, negation and direction checks against the evidence."""
    from pipeline.claims import strip_citations

    passage = " ".join(evidence)
    claim = strip_citations(a.claim)
    passage_lower, passage_words, defined = passage.lower(), content_words(passage), acronyms(passage)
    _word_signals(a, claim, passage_lower, passage_words, defined)
    heading = _heading(evidence[a.evidence_index]) if 0 <= a.evidence_index < len(evidence) else ""
    _number_signals(a, claim, passage, heading, evidence)
    _name_signals(a, claim, passage_lower, passage_words, defined, claim_ents)
    claim_dir, ev_dir = direction(claim), direction(a.sentence)
    a.features.update(
        negation_mismatch=float(bool(a.sentence) and _negation_differs(claim, a.sentence, evidence)),
        direction_mismatch=float(claim_dir != 0 and ev_dir != 0 and claim_dir != ev_dir),
        claim_len=min(len(terms(claim)), 60) / 60,
        best_len=min(len(terms(a.sentence)), 120) / 120,
    )


def _word_signals(a: Alignment, claim: str, passage_lower: str, passage_words: set[str], defined: dict[str, str]) -> None:
    """Content words and salient tokens (capitals, codes) of the claim that the evidence lacks."""
    words = content_words(claim)
    absent_words = [w for w in words if w not in passage_words]
    salient = _salient(claim)
    salient_absent = [s for s in salient if not name_present(s, passage_lower, passage_words, defined)]
    a.unnamed = next((s for s in salient_absent if sum(c.isupper() or c.isdigit() for c in s) >= 2), "")  # an acronym or code
    claim_tokens = {w.lower() for w in TERM.findall(claim)}
    rivals = [s for s in _salient(a.sentence) if s.lower() not in claim_tokens and not name_present(s, claim.lower(), words, {})]
    a.features.update(
        salient_frac_absent=len(salient_absent) / max(1, len(salient)),
        salient_conflict=float(bool(salient_absent) and bool(rivals)),
        coverage=1.0 - len(absent_words) / max(1, len(words)),
        absent_words=float(min(len(absent_words), 8)),
        salient_n=float(min(len(salient), 8)),
        salient_absent=float(min(len(salient_absent), 8)),
    )


ALIGN_VALUE_MARGIN = 0.05  # candidates this close to the best one's cosine are told apart by the claim's values
ALIGN_VALUES_WIDE_MARGIN, ALIGN_VALUES_MORE = 0.15, 2  # … and this close, when one states 2 more of them


def _with_the_claims_values(claim: str, cands: Sequence[tuple[str, int]], sims: np.ndarray, order: list[int],
                            headings: dict[int, list[str]]) -> int:
    """Of the candidates in `order` (best cosine first) within ALIGN_VALUE_MARGIN of the best, the one
    that states most of the claim's values, in its words or its section's headings: the sentence a
    claim about "2.39.2" is about is the 2.39.2 notes' "This release merges up the fixes …", not the
    same template in the 2.39.3 notes, which an embedding barely tells apart; within ALIGN_VALUES_WIDE_MARGIN,
    one that states ALIGN_VALUES_MORE more of them than that one. The best by cosine when none states more."""
    wanted = numbers.extract_values(claim)
    if not wanted:
        return order[0]

    def stated(k: int) -> int:
        text, ei = cands[k]
        found = numbers.extract_values(" ".join([text, *headings.get(ei, [])]))
        return sum(numbers.present(v, found) for v in wanted)

    wide = {k: stated(k) for k in order if sims[k] >= sims[order[0]] - ALIGN_VALUES_WIDE_MARGIN}  # each counted once
    best = max((k for k in wide if sims[k] >= sims[order[0]] - ALIGN_VALUE_MARGIN), key=lambda k: (wide[k], sims[k]))
    richer = max(wide, key=lambda k: (wide[k], sims[k]))
    return richer if wide[richer] >= wide[best] + ALIGN_VALUES_MORE else best


def _heading(passage: str) -> str:
    """The headings a passage opens with (`Evidence.checked_text`: its section's heading path on a line of
    its own, or a Markdown heading): lines set apart by a blank line that end no sentence."""
    lines = []
    for block in passage.split("\n\n"):
        block = block.strip()
        if not block or len(block) > HEADING_MAX_CHARS or "\n" in block or block[-1] in ".!?:;":
            break
        lines.append(block.lstrip("#").strip())
    return "\n".join(lines)


HEADING_MAX_CHARS = 200


def _number_signals(a: Alignment, claim: str, passage: str, heading: str = "", evidence: Sequence[str] = ()) -> None:
    """The claim's numbers, dates, percentages and versions: stated where the claim's matter is (in the
    aligned sentence, or in the headings of its passage: "Git 2.37 added X" where the item about X sits
    under "Git v2.37 Release Notes"), elsewhere, nowhere, or replaced by another value (`a.conflict`,
    `a.unconfirmed`)."""
    claim_values = numbers.extract_values(claim)
    passage_values = numbers.extract_values(passage)
    lead = next((h for h in heading.split("\n") if h and a.sentence.startswith(h)), "")  # a window opening with it
    body = a.sentence[len(lead):]
    aligned_values = numbers.extract_values(body)
    heading_values = numbers.extract_values(heading)
    headed = {v.text.lstrip("vV") for v in heading_values}  # as written: "7.0" is not the "(7)" of a man page
    matched = conflict = absent = soft = 0
    for value in claim_values:
        if value.text.lstrip("vV") in headed and not numbers.present(value, aligned_values):
            matched += 1  # the section the sentence belongs to states it
            continue
        labelled = _under_label(claim, value, passage, passage_values)  # "type 2" is stated only as "type 2"
        here = None if numbers.present(value, aligned_values) else next(
            (e for e in aligned_values if numbers.comparable(value, e) and not numbers.present(e, claim_values)
             and (value.kind != "version" or numbers.same_role(claim, value, body, e))), None)
        from_heading = False
        if here is None and not numbers.present(value, aligned_values):  # … or its section's heading does:
            here = next((e for e in heading_values if numbers.comparable(value, e) and not numbers.present(e, claim_values)
                         and numbers.same_role(claim, value, heading, e)), None)  # "Announcement (one week in advance …)"
            from_heading = here is not None
        if here is not None and _quoted_elsewhere(claim, value, passage):
            matched += 1  # "larger than 50GB" as the passage words it elsewhere, where the sentence has "a 51GB stream"
            continue
        if here is not None:  # the sentence the claim is about has another value where the claim's stands
            conflict += 1
            if not a.conflict and value.kind in _HARD_KINDS:
                a.conflict, a.conflict_kind = numbers.as_written(heading, here) if from_heading else here.text, "number"
            continue
        in_sentence = _under_label(claim, value, body, aligned_values) or aligned_values
        if numbers.present(value, in_sentence):  # stated where the claim's matter is
            if flipped_bound := numbers.bound_flipped(claim, value, body, in_sentence):
                conflict += 1  # "at most 48 hours" where the sentence says "at least 48 hours"
                if not a.conflict:
                    a.conflict, a.conflict_kind = flipped_bound, "number"
                continue
            matched += 1
            continue
        if numbers.present(value, labelled or passage_values) or (
                labelled and "." in value.text and numbers.present(value, passage_values)):  # "CMake 3.16" as "version 3.16"
            matched += 1
            if a.cited and not a.unconfirmed and numbers.checkable(value) and not _stated_near(a, claim, value, evidence):
                a.unconfirmed = numbers.as_written(claim, value)  # stated somewhere in the passages, but not where the claim's matter is
            continue
        if not a.unconfirmed and numbers.checkable(value):
            a.unconfirmed = numbers.as_written(claim, value)
        soft += any(e.kind in ("number", "percent", "year", "decade") and not numbers.present(e, claim_values) for e in aligned_values)
        rival = next(
            (e for e in aligned_values if numbers.comparable(value, e) and not numbers.present(e, claim_values)),
            None,
        ) or next((e for e in labelled if e.value != value.value and not numbers.present(e, claim_values)), None)
        if rival is not None:
            conflict += 1
            if not a.conflict and value.kind in _HARD_KINDS:
                a.conflict, a.conflict_kind = rival.text, "number"
        else:
            absent += 1
    code = _code_rival(claim, passage)
    if code:
        conflict += 1
        if not a.conflict:
            a.conflict, a.conflict_kind = code, "number"
    a.features.update(num_soft_conflict=float(soft), num_n=float(len(claim_values)), num_matched=float(matched),
                      num_conflict=float(conflict), num_absent=float(absent))


def _quoted_elsewhere(claim: str, value: numbers.Value, passage: str) -> bool:
    """Whether the passage writes the claim's value with the claim's own two words before it, one of them
    a content word ("larger than 50GB"): the claim quotes that place, not the aligned sentence's value."""
    written = numbers.as_written(claim, value)
    at = claim.find(written)
    before = re.findall(r"[\w'-]+", claim[:at])[-2:] if at > 0 else []
    if len(before) < 2 or all(w.lower() in FUNCTION_WORDS or w.lower() in _NOT_LABELS for w in before):  # "up to 40"
        return False
    pattern = r"\W+".join(re.escape(w) for w in before) + r"\W+" + re.escape(written) + r"(?![\w.])"
    return re.search(pattern, passage, re.IGNORECASE) is not None


VALUE_CONTEXT_WORDS = 1  # a sentence beside the claim's value must share this many of the claim's other content words


def _stated_near(a: Alignment, claim: str, value: numbers.Value, evidence: Sequence[str] = ()) -> bool:
    """Whether `value` is stated where the claim's matter is: in a sentence about the claim (`_about`), or
    in a candidate beside VALUE_CONTEXT_WORDS of its other content words ("less than 3 weeks" in the item
    on line #670); not "two weeks before your last day" for "posted for two weeks", nor "the two". A
    sentence about the claim states the versions of its passage's headings ("Git v2.35.2 Release Notes")."""
    own, about = content_words(claim) - content_words(numbers.as_written(claim, value)), _about(a)
    for text, ei, _ in a.candidates:  # `about` is the best few of them
        values = [v for v in numbers.extract_values(text) if v.unit == value.unit or value.unit not in numbers.TIME_UNITS]
        if numbers.present(value, _under_label(claim, value, text, values) or values) and (
                text in about or len(own & content_words(text)) >= VALUE_CONTEXT_WORDS):
            return True
        if text in about and value.kind == "version" and 0 <= ei < len(evidence) \
                and numbers.present(value, numbers.extract_values(_heading(evidence[ei]))):
            return True
    return False


def _name_signals(a: Alignment, claim: str, passage_lower: str, passage_words: set[str], defined: dict[str, str],
                  claim_ents: Sequence[tuple[str, str]]) -> None:
    """The claim's named entities: in the evidence, absent, or replaced by another name of their
    kind in the aligned sentence (`a.conflict`, `a.unnamed`; its entities are read only then)."""
    names = [(t, label) for t, label in claim_ents if label in NAME_LABELS]
    claim_lower, claim_words = claim.lower(), content_words(claim)
    e_matched = e_conflict = e_absent = 0
    for text, label in names:
        if name_present(text, passage_lower, passage_words, defined):
            e_matched += 1
            continue
        a.unnamed = a.unnamed or text
        group = _TYPE_GROUP.get(label, label)
        rival = next(
            (
                e_text for e_text, e_label in meaning.sentence_entities(a.sentence)
                if _TYPE_GROUP.get(e_label, e_label) == group and e_text.lower() not in claim_lower
                and not name_present(e_text, claim_lower, claim_words, {})
            ),
            None,
        )
        if rival:
            e_conflict += 1
            if not a.conflict:
                a.conflict, a.conflict_kind = rival, "entity"
        else:
            e_absent += 1
    a.features.update(ent_n=float(len(names)), ent_matched=float(e_matched), ent_conflict=float(e_conflict),
                      ent_absent=float(e_absent))

