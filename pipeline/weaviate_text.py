"""What Weaviate's BM25 reads: words lower-cased and Porter-stemmed, for chunks and for questions.

Weaviate's BM25 does no stemming, so chunks carry `search_text`: their words Porter-stemmed
(steps 1 and 5a: plurals, -ed, -ing, final e), the query is stemmed the same way ("indexing" finds "indexed").
"""

from __future__ import annotations

import re

from pipeline.store import STOPWORDS


def stem(word: str) -> str:
    """Porter's step 1 (1a plurals, 1b -ed/-ing, 1c y→i) and 5a (final e) on a lower-case word."""
    if len(word) <= 2:
        return word
    w = word
    if w.endswith("sses") or w.endswith("ies"):
        w = w[:-2]
    elif w.endswith("s") and not w.endswith("ss"):
        w = w[:-1]
    if w.endswith("eed"):
        if _measure(w[:-3]) > 0:
            w = w[:-1]
    else:
        for suffix in ("ed", "ing"):
            if w.endswith(suffix) and _has_vowel(w[: -len(suffix)]):
                w = w[: -len(suffix)]
                if w.endswith(("at", "bl", "iz")):
                    w += "e"
                elif len(w) >= 2 and w[-1] == w[-2] and _consonant(w, len(w) - 1) and w[-1] not in "lsz":
                    w = w[:-1]
                elif _measure(w) == 1 and _cvc(w):
                    w += "e"
                break
    if w.endswith("y") and _has_vowel(w[:-1]):
        w = w[:-1] + "i"
    if w.endswith("e") and (_measure(w[:-1]) > 1 or (_measure(w[:-1]) == 1 and not _cvc(w[:-1]))):
        w = w[:-1]
    return w


def _consonant(w: str, i: int) -> bool:
    if w[i] in "aeiou":
        return False
    if w[i] == "y":
        return i == 0 or not _consonant(w, i - 1)
    return True


def _measure(w: str) -> int:
    """Porter's m: the number of vowel-consonant sequences."""
    pattern = "".join("c" if _consonant(w, i) else "v" for i in range(len(w)))
    return len(re.findall(r"v+c+", pattern))


def _has_vowel(w: str) -> bool:
    return any(not _consonant(w, i) for i in range(len(w)))


def _cvc(w: str) -> bool:
    return (len(w) >= 3 and _consonant(w, len(w) - 3) and not _consonant(w, len(w) - 2)
            and _consonant(w, len(w) - 1) and w[-1] not in "wxy")


def search_text(text: str) -> str:
    """What BM25 indexes for a chunk: its words, lower-cased and stemmed, space-separated."""
    return " ".join(stem(w) for w in re.findall(r"\w+", text.lower()))


def bm25_query(text: str) -> str:
    """The user's words as a BM25 query: stemmed like `search_text`, stopwords dropped, at most 64."""
    words = dict.fromkeys(stem(w) for w in re.findall(r"\w+", text.lower()) if w not in STOPWORDS)
    return " ".join(list(words)[:64])
