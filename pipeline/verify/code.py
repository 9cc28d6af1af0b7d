"""Claims about code examples: whether one fenced block of a claim's evidence, read with the line that
leads into it ("Output:", "The following example creates …"), holds every name and value the claim
states ("the response shows its State as Creating" against `"State": "Creating"`). Plain strings;
no I/O, no label (`pipeline.verify.rules` decides).
"""

from __future__ import annotations

from collections.abc import Sequence

from pipeline import numbers
from pipeline.examples import FENCED
from pipeline.names import mentions, names
from pipeline.text import FENCE

BACKED_MIN_TERMS = 2  # names and values of a claim that one code example must hold, at least


def led_blocks(passage: str) -> list[str]:
    """The fenced code blocks of a passage, each after the line that leads into it, fences left out:
    "Output:\\n{\\n    \\"State\\": \\"Creating\\"\\n}"."""
    out = []
    for m in FENCED.finditer(passage):
        lead = next((line.strip() for line in reversed(passage[:m.start()].splitlines()) if line.strip()), "")
        lead = "" if FENCE.match(lead) else lead  # the previous block's closing fence leads nothing
        out.append("\n".join([lead, m.group(4).rstrip("\n")]).strip())
    return out


def backed(claim: str, passages: Sequence[str]) -> bool:
    """Whether a claim about a code example states only what the example holds: its names and values
    (at least BACKED_MIN_TERMS: "the returned mapping shows its State as Updating", "MemorySize 128
    and Timeout 3") are all in one fenced block of its evidence, or in the line that leads into it.
    The example's keys are the documents' words; the claim's prose around them is its own."""
    blocks = [b for passage in passages for b in led_blocks(passage)]
    if not blocks:  # most evidence holds no code: no parse of the claim's names
        return False
    claim_names = [n.text for n in names(claim)]
    claim_values = [v for v in numbers.extract_values(claim) if not any(v.text in n for n in claim_names)]
    if len(claim_names) + len(claim_values) < BACKED_MIN_TERMS:
        return False
    for block in blocks:
        block_values = numbers.extract_values(block)
        if all(mentions(n, block) for n in claim_names) and all(numbers.present(v, block_values) for v in claim_values):
            return True
    return False
