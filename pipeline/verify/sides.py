"""The statements a sentence joins ("A, but B"; clauses set side by side with a comma or a semicolon), read
from its text and its spaCy parse (`pipeline.verify.meaning.parse`, cached), so that the polarity checks
compare a claim's statement with the one it restates. No I/O, no label.
"""

from __future__ import annotations

import re

from pipeline.verify import meaning

_CONTRAST = re.compile(r"[,;]\s+but\s+", re.IGNORECASE)
# Words that open a clause leaning on another ("if …", "which …"): a comma before or after one joins no two statements.
_LEANING = frozenset("if when whenever unless once because since although though while whereas as which who whom "
                     "whose that where so until after before than except".split())
_SUBJECTS = frozenset({"nsubj", "nsubjpass", "expl"})
_DEPENDENT_CLAUSES = frozenset({"advcl", "relcl", "acl", "ccomp", "csubj", "xcomp"})


def statements(sentence: str) -> list[str]:
    """The statements a sentence joins: the sides of a contrast ("A, but B"), or of clauses set side by
    side with a comma or a semicolon where the one after has its own subject and verb, neither opens
    with a word that leans on the other ("if", "which", …) and no clause of one hangs on a word of the
    other in the parse ("In case one of the tasks raises an exception, the following tasks will not
    …" is one statement); "CMake 3.25 and later recognize `26` as a valid value, no version has
    support for any compiler" is two. `[sentence]` when it joins none."""
    sides = _CONTRAST.split(sentence)
    if len(sides) > 1 or not re.search(r"[,;]\s", sentence):
        return sides
    doc = meaning.parse(sentence)
    breaks = [t.i for t in doc if t.text in (",", ";")]
    cuts, start = [], 0
    for n, b in enumerate(breaks):
        before, after = doc[start:b], doc[b + 1:breaks[n + 1] if n + 1 < len(breaks) else len(doc)]
        crossed = any(t.dep_ in _DEPENDENT_CLAUSES and (t.i < b) != (t.head.i < b) for t in doc)
        if (len(before) and len(after) and not crossed and before[0].lower_ not in _LEANING
                and after[0].lower_ not in _LEANING and any(t.pos_ in ("VERB", "AUX") for t in before)
                and any(t.pos_ in ("VERB", "AUX") for t in after)
                and any(t.dep_ in _SUBJECTS and t.head in after for t in after)):
            cuts.append(b)
            start = b + 1
    if not cuts:
        return [sentence]
    text = doc.user_data.get("text", doc.text)  # the sentence as written ("3.25", which the parse reads "3_25")
    spans = [doc[a + 1:b] for a, b in zip([-1, *cuts], [*cuts, len(doc)], strict=True)]
    return [text[span[0].idx:span[-1].idx + len(span[-1].text)] for span in spans if len(span)]
