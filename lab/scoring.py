"""`score_pairs`: the runtime verifier's decision (`pipeline.verify.verify_claims`) on plain strings,
each claim against its list of evidence texts, for the trainers' reports and the verifier's tests."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pipeline.types import Claim, Evidence, Verdict


def score_pairs(
    claims: Sequence[str],
    evidences: Sequence[Sequence[str]],
    method: str = "default",
    embedder: Any = None,
    settings: Any = None,
    llm: Any = None,
    cited: bool = False,
) -> list[Verdict]:
    """One Verdict per claim string, judged against its list of evidence strings with `method`;
    `cited` judges every claim as one an answer attributes to a source (held to its wording).

    `confidence` is P(supported) in [0, 1] (for `cosine`, the max cosine clipped to [0, 1]). Each
    claim carries every entity spaCy finds in it, as `pipeline.verify.align.analyse` reads a claim
    given without entities; the defaults are the bundled embedder and the default settings. The
    verification options and the trained verifier come from `settings` as the bot builds them."""
    from bot.app import build_verifier, stage_options
    from pipeline import verify

    if len(claims) != len(evidences):
        raise ValueError(f"got {len(claims)} claims but {len(evidences)} evidence lists")
    if embedder is None:
        from pipeline.embed import load_embedder

        embedder = load_embedder("")
    if settings is None:
        from config.settings import load_settings

        settings = load_settings(env={})
    entities: list[tuple[tuple[str, str], ...]] = [()] * len(claims)  # `cosine` reads no entities
    if method != "cosine":
        from pipeline.claims import load_nlp

        entities = [tuple((e.text, e.label_) for e in doc.ents) for doc in load_nlp().pipe(list(claims))]
    return verify.verify_claims(
        [Claim(text=c, start=0, end=len(c), entities=ents) for c, ents in zip(claims, entities, strict=True)],
        [[Evidence(text=t) for t in ev] for ev in evidences],
        method=method, embedder=embedder, options=stage_options(settings).verification,
        verifier=build_verifier(settings), llm=llm, cited=[cited] * len(claims),
    )
