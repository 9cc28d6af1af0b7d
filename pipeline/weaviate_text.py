"""What Weaviate's BM25 reads: words lower-cased and Porter-stemmed, for chunks and for questions.

Weaviate's BM25 does no stemming, so chunks carry `search_text`: their words Porter-stemmed by
`pipeline.text.stem` (the stems of the embedded index's FTS5 `porter`), and the query is stemmed
the same way ("indexing" finds "indexed").
"""

from __future__ import annotations

from pipeline.text import QUERY_STOPWORDS, stem, words


def search_text(text: str) -> str:
    """What BM25 indexes for a chunk: its words, lower-cased and stemmed, space-separated."""
    return " ".join(stem(w) for w in words(text))


def bm25_query(text: str) -> str:
    """The user's words as a BM25 query: stemmed like `search_text`, stopwords dropped, at most 64."""
    query = dict.fromkeys(stem(w) for w in words(text) if w not in QUERY_STOPWORDS)
    return " ".join(list(query)[:64])
