"""Lemmas without tagging: every lemma a word can have, read from the lemma tables of spaCy's rule
lemmatizer, for comparing a claim's words with its passages' (`lemmas`)."""

from __future__ import annotations

import functools


@functools.lru_cache(maxsize=2048)
def lemmas(text: str) -> frozenset[str]:
    """The lower-cased tokens of `text` with every lemma each can have (`word_lemmas`), read from
    spaCy's lemma tables without tagging `text`: what the tagger would give them and, for a word it
    would read as one part of speech, what the others would ("leaves": leaf and leave). Tokens are
    spaCy's own ("schemas_get_schema(routes"), so that they match a parsed claim's. Cached: passages
    recur. (Tagging them took a few per cent of verification's time.)"""
    from pipeline.claims import load_nlp, mask_dots

    return frozenset(lemma for t in load_nlp().tokenizer(mask_dots(text)) for lemma in word_lemmas(t.lower_))


_LEMMA_POS = ("noun", "verb", "adj", "adv")  # the parts of speech spaCy's rule lemmatizer changes


@functools.cache
def _lemma_tables() -> dict[str, tuple[frozenset[str], dict, tuple]]:
    """Per part of speech: (the known lemmas, irregular forms → lemmas, suffix rules), from the
    lemmatizer of the loaded spaCy pipeline."""
    from pipeline.claims import load_nlp

    lookups = load_nlp().get_pipe("lemmatizer").lookups
    index, exc, rules = (lookups.get_table(name, {}) for name in ("lemma_index", "lemma_exc", "lemma_rules"))
    return {pos: (frozenset(index.get(pos, ())), dict(exc.get(pos, {})), tuple(map(tuple, rules.get(pos, ()))))
            for pos in _LEMMA_POS}


@functools.lru_cache(maxsize=65536)
def word_lemmas(word: str) -> frozenset[str]:
    """`word` (lower case) and its lemma as a noun, a verb, an adjective and an adverb, chosen as
    spaCy's `Lemmatizer.rule_lemmatize` chooses: an irregular form's lemma first ("ran" → run), else
    the first suffix rule that gives a known lemma ("retries" → retry), else the first rule's form."""
    out = {word}
    for known, irregular, rules in _lemma_tables().values():
        forms = [f for old, new in rules if word.endswith(old) and (f := word[:len(word) - len(old)] + new)]
        valid = [f for f in forms if f in known or not f.isalpha()]
        out.add(next(iter([*irregular.get(word, ()), *valid, *forms]), word))
    return frozenset(out)
