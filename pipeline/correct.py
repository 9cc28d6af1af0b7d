"""Correction: flagged claims go back to the LLM for a bounded revise-and-reverify loop; without an
LLM, unsupported and contradicted sentences are dropped and uncertain ones stay, flagged."""

from __future__ import annotations

from collections.abc import Sequence

from pipeline.types import Label, Verdict


def needs_correction(verdict: Verdict, threshold: float) -> bool:
    """A claim is corrected when it is not SUPPORTED or its confidence is below `threshold`."""
    return verdict.label is not Label.SUPPORTED or verdict.confidence < threshold


def correction_request(previous: str, flagged: Sequence[Verdict]) -> str:
    """The feedback prompt for the LLM (the documents are sent again before it)."""
    lines = []
    for v in flagged:
        why = v.label.value.lower()
        if v.conflict:
            why += f"; the source says {v.conflict}"
        elif v.unstated:
            why += f"; the sources never state {v.unstated}"
        lines.append(f'- "{v.claim.text}" ({why})')
    return (
        f"Here is your previous answer:\n<answer>\n{previous}\n</answer>\n\n"
        "The following claims seem unsupported or contradicted by our sources:\n" + "\n".join(lines) + "\n\n"
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
