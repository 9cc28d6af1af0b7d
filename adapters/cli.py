"""The terminal adapter: an Answer as readable text, or as the stable JSON schema of `ravbot ask --json`."""

from __future__ import annotations

from typing import Any

from adapters.render import timings_line, to_text
from pipeline.types import Answer

JSON_SCHEMA_VERSION = 1


def answer_to_json(answer: Answer) -> dict[str, Any]:
    """The documented `ravbot ask --json` schema (see README, "JSON output"). Fields are only ever added."""
    return {
        "schema": JSON_SCHEMA_VERSION,
        "question": answer.question,
        "answer": answer.text,
        "idk": answer.idk,
        "sources": [{"id": s.id, "title": s.title, "url": s.url or s.path} for s in answer.sources],
        "claims": [
            {
                "text": v.claim.text,
                "start": v.claim.start,
                "end": v.claim.end,
                "label": v.label.value,
                "confidence": round(v.confidence, 4),
                "method": v.method,
                "evidence": v.sentence or (v.evidence.text if v.evidence else ""),
                "source": ({"title": v.evidence.title, "url": v.evidence.link, "origin": v.evidence.origin}
                           if v.evidence else None),
                "conflict": v.conflict,
                "unstated": v.unstated,
                "reason": v.reason,
                "checked_against": list(v.checked_against),
            }
            for v in answer.verdicts
        ],
        "timings": {k: round(ms, 1) for k, ms in answer.timings.items()},
        "notes": list(answer.notes),
        "invented_citations": answer.invented_citations,
        "draft": answer.draft,
        "error": answer.error,
    }


def answer_to_text(answer: Answer, show_timings: bool = True) -> str:
    text = to_text(answer)
    if show_timings and answer.timings:
        text += "\n" + timings_line(answer)
    return text
