"""Correction: flagged claims go back to the LLM for a bounded revise-and-reverify loop; without an
LLM, unsupported and contradicted sentences are dropped and uncertain ones stay, flagged."""

from __future__ import annotations

from collections.abc import Sequence

from pipeline.types import Label, Verdict


def needs_correction(verdict: Verdict) -> bool:
    """A claim is corrected when it is flagged (not SUPPORTED), whatever a SUPPORTED claim's confidence."""
    return verdict.label is not Label.SUPPORTED


def what_is_wrong(verdict: Verdict) -> str:
    """The label and the reason, as the correction request states them: "contradicted: the documents say 600"."""
    why = verdict.label.value.lower()
    reason = verdict.reason or (f"source says {verdict.conflict}" if verdict.conflict else
                                f"the sources never state {verdict.unstated}" if verdict.unstated else "")
    if reason.startswith("source says "):
        reason = "the documents say " + reason.removeprefix("source says ")
    return f"{why}: {reason}" if reason else why


def correction_request(previous: str, flagged: Sequence[Verdict]) -> str:
    """The feedback prompt for the LLM (the documents are sent again before it). Only flagged claims are listed."""
    lines = [f'- "{v.claim.text}" ({what_is_wrong(v)})' for v in flagged if v.label is not Label.SUPPORTED]
    return (
        f"Here is your previous answer:\n<answer>\n{previous}\n</answer>\n\n"
        "These claims could not be confirmed by our documents:\n" + "\n".join(lines) + "\n\n"
        "Revise ONLY the parts that depend on these claims, keep all other correct information and its "
        "citations, and say explicitly when something is unknown. Reply with the revised answer only."
    )


def drop_claims(text: str, verdicts: Sequence[Verdict], labels: frozenset[Label] = frozenset({Label.UNSUPPORTED, Label.CONTRADICTED})) -> str:
    """The text without the claims whose label is in `labels` (offsets are into `text`)."""
    spans = sorted((v.claim.start, v.claim.end) for v in verdicts if v.label in labels)
    out, pos = [], 0
    for start, end in spans:
        if start >= pos:
            out.append(text[pos:start])
            pos = end
    out.append(text[pos:])
    return " ".join(" ".join(out).split())
