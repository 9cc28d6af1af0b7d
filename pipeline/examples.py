"""Code examples for how-to answers: the fenced code block of an answer's own chunks that best
matches the question, and the example a sentence introduces with its output.

"How do I render a template?" is answered by a documentation page's code more than by its prose:
the prose says what a feature is, the code shows the call (`templates.TemplateResponse(...)`).
An extractive answer to a how-to question therefore ends with one code block, taken whole from a
chunk the answer already quotes. The block is chosen by the question's words it contains, split
the way code writes them (`register_url_convertor`, `FloatConvertor`), each weighted by how few of
the candidate blocks hold it, so that the import line every example shares decides nothing.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from pipeline.chunking import plain_text
from pipeline.text import QUERY_STOPWORDS, stem
from pipeline.types import Hit

if TYPE_CHECKING:
    from pipeline.prose import Unit

MAX_EXAMPLE_LINES = 25  # a longer block is a program, not an example of one call
# at the question's start or after the context it opens with ("Our topic must trigger it. How do I …",
# "After a release, how do we …")
_HOW_TO = re.compile(r"(?:^|[.?!,;:]\s+)\s*how (?:(?:do|can|could|should|would|might) (?:i|we|you|one)|to)\b", re.I)
FENCED = re.compile(r"^([ \t]*)(`{3,}|~{3,})([^\n`]*)\n(.*?)^\1\2[ \t]*$", re.S | re.M)
_CODE_WORD = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")


def asks_how(question: str) -> bool:
    """Whether the question asks how to do something ("How do I …", "How can we …", "How to …")."""
    return bool(_HOW_TO.search(question))


def code_blocks(text: str) -> list[str]:
    """The fenced code blocks of `text` (fences included, the fence's indentation removed, the info
    string cut to its language) of at most MAX_EXAMPLE_LINES lines of code. Chunking keeps a block
    whole or cuts a long one into fenced pieces: a piece that starts indented is not an example."""
    out = []
    for m in FENCED.finditer(text):
        indent, fence, info, body = m.groups()
        lines = [line[len(indent):] if line.startswith(indent) else line.lstrip() for line in body.rstrip("\n").split("\n")]
        first = next((line for line in lines if line.strip()), "")
        # a block that starts indented is the middle of a longer one (chunking cuts those)
        if first and not first[:1].isspace() and len(lines) <= MAX_EXAMPLE_LINES:
            out.append("\n".join([fence + (info.split() or [""])[0].split("{")[0], *lines, fence]))
    return out


def code_terms(text: str) -> set[str]:
    """The stems of the words in `text` as code writes them: `register_url_convertor` and
    `RegisterURLConvertor` both give register, url, convertor."""
    return {stem(w.lower()) for w in _CODE_WORD.findall(text) if w.lower() not in QUERY_STOPWORDS and len(w) > 1}


def best_example(question: str, hits: Sequence[Hit]) -> str:
    """The code block of `hits` (best first) that holds the most of the question's words, each
    weighted by the inverse share of the blocks holding it; "" when no block holds any of them
    but those every block holds."""
    blocks = [(rank, k, block) for rank, hit in enumerate(hits) for k, block in enumerate(code_blocks(hit.chunk.text))]
    if not blocks:
        return ""
    asked = code_terms(question)
    terms = [code_terms(block) for _, _, block in blocks]
    held = {t: sum(t in ts for ts in terms) for t in asked}
    weight = {t: math.log(len(blocks) / n) if n < len(blocks) else 0.0 for t, n in held.items() if n}
    if len(blocks) == 1:
        weight = {t: 1.0 for t in weight}
    scored = [(sum(weight.get(t, 0.0) for t in ts & asked), -rank, -k, block)
              for (rank, k, block), ts in zip(blocks, terms, strict=True)]
    score, _, _, block = max(scored)
    return block if score > 0 else ""


# The line that introduces an example's output ("Output:", "This prints:", "Result:").
_OUTPUT_LEAD = re.compile(r"^(?:(?:example |sample |the )?(?:output|result|response)s?"
                          r"|(?:this|which|it) (?:outputs|prints|returns|produces|displays|shows|logs))\b[^.!?]{0,30}:$", re.I)


def example_of(units: Sequence[Unit], lead: int) -> str:
    """The code example unit `lead` introduces, with its output when the unit after it introduces
    that ("Output:" and the block that follows it)."""
    text = units[lead].example
    after = lead + 1
    if after < len(units) and units[after].example and _OUTPUT_LEAD.match(plain_text(units[after].text)):
        text += f"\n\n{units[after].text}\n{units[after].example}"
    return text
