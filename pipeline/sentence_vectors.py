"""Sentence vectors on disk: the vectors of every answer unit, evidence sentence and two-sentence
window of the indexed chunks, embedded once at index time, so that a question embeds only itself
and its claims (issue 20 item 1).

The extractive answer (`pipeline.generate`) scores a chunk's prose units, and alignment
(`pipeline.verify.align`) compares a claim with its evidence's sentences and two-sentence windows.
`chunk_texts` lists exactly those texts for a chunk; `index_documents` embeds the ones the file
does not hold yet; `SentenceEmbedder.encode_cached` reads them back. The file (`sentences.sqlite`
in the data dir) is keyed by a hash of each text and belongs to one embedding model: opened for
another, it starts empty. It is bounded: past `max_rows`, the oldest rows go, and index time stops
adding (those sentences are then embedded when a question first needs them, and kept).
"""

from __future__ import annotations

import hashlib
import logging
import sqlite3
import threading
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from pipeline.evidence import hit_to_evidence
from pipeline.prose import prose_units
from pipeline.text import join_sentences, markdown_sentences
from pipeline.types import Chunk, Hit
from pipeline.verify.candidates import whole_list

log = logging.getLogger(__name__)

_BATCH = 500  # texts per SELECT (SQLite's variable limit is far above)


def chunk_texts(chunk: Chunk) -> list[str]:
    """The texts a question may embed for `chunk`: its prose units (the extractive answer's candidates)
    and, of its evidence text (headings, then text), every sentence, every two adjacent sentences and
    every list with its lead-in (alignment's candidates), each once."""
    evidence = hit_to_evidence(Hit(chunk=chunk, score=0.0)).checked_text  # what the claim checker reads
    sentences = markdown_sentences(evidence) or [evidence]
    windows = [join_sentences(a, b) for a, b in zip(sentences, sentences[1:], strict=False)]
    lists = [whole for si, s in enumerate(sentences) if s.rstrip().endswith(":") and (whole := whole_list(sentences, si))]
    return list(dict.fromkeys([*(u.text for u in prose_units(chunk.text)), *sentences, *windows, *lists]))


def _key(text: str) -> bytes:
    return hashlib.blake2b(text.encode("utf-8"), digest_size=16).digest()


class SentenceVectors:
    """Owns `sentences.sqlite`: float32 vectors keyed by their text's hash, for one model."""

    def __init__(self, path: str | Path, model: str, max_rows: int):
        if max_rows < 1:
            raise ValueError(f"max_rows must be at least 1, not {max_rows!r}")
        self.path, self.model, self.max_rows = Path(path), model, max_rows
        self._conn: sqlite3.Connection | None = None
        self._lock = threading.Lock()

    @property
    def conn(self) -> sqlite3.Connection:
        if self._conn is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
            conn.execute("pragma journal_mode = wal")
            conn.execute("pragma synchronous = normal")
            conn.execute("create table if not exists meta (key text primary key, value text)")
            conn.execute("create table if not exists vectors (key blob primary key, vector blob not null)")
            row = conn.execute("select value from meta where key = 'model'").fetchone()
            if row is None or row[0] != self.model:  # another model's vectors are not these
                conn.execute("begin immediate")
                conn.execute("delete from vectors")
                conn.execute("insert or replace into meta values ('model', ?)", [self.model])
                conn.execute("commit")
            self._conn = conn
        return self._conn

    def get(self, texts: Sequence[str]) -> dict[str, np.ndarray]:
        """The stored vectors of those `texts` that have one."""
        by_key = {_key(t): t for t in texts}
        keys = list(by_key)
        out: dict[str, np.ndarray] = {}
        with self._lock:
            for i in range(0, len(keys), _BATCH):
                part = keys[i:i + _BATCH]
                rows = self.conn.execute(f"select key, vector from vectors where key in ({','.join('?' * len(part))})", part)
                out.update((by_key[k], np.frombuffer(v, dtype=np.float32)) for k, v in rows)
        return out

    def missing(self, texts: Sequence[str]) -> list[str]:
        """Those of `texts` (each once) that have no stored vector."""
        have = self.get(texts)
        return [t for t in dict.fromkeys(texts) if t not in have]

    def put(self, texts: Sequence[str], vectors: np.ndarray) -> None:
        """Store the vectors (one row each, float32), then drop the oldest rows past `max_rows`."""
        rows = [(_key(t), np.asarray(v, dtype=np.float32).tobytes()) for t, v in zip(texts, vectors, strict=True)]
        with self._lock:
            conn = self.conn
            conn.execute("begin immediate")
            try:
                conn.executemany("insert or ignore into vectors values (?, ?)", rows)
                over = self._count(conn) - self.max_rows
                if over > 0:
                    conn.execute("delete from vectors where rowid in (select rowid from vectors order by rowid limit ?)", [over])
                conn.execute("commit")
            except BaseException:
                conn.execute("rollback")
                raise

    def room(self) -> int:
        """How many more rows fit before the oldest go."""
        with self._lock:
            return max(0, self.max_rows - self._count(self.conn))

    def count(self) -> int:
        with self._lock:
            return self._count(self.conn)

    @staticmethod
    def _count(conn: sqlite3.Connection) -> int:
        return int(conn.execute("select count(*) from vectors").fetchone()[0])

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None


def embed_chunk_sentences(vectors: SentenceVectors, embedder, chunks: Sequence[Chunk], batch: int = 256) -> int:
    """At index time: embed and store the texts of `chunks` (`chunk_texts`) the file lacks, while it
    has room. Returns how many texts were stored. The file only saves work: an error reading or
    writing it is logged, and indexing goes on."""
    try:
        todo = vectors.missing([t for c in chunks for t in chunk_texts(c)])[:vectors.room()]
        for i in range(0, len(todo), batch):
            part = todo[i:i + batch]
            vectors.put(part, embedder.encode(part))
    except sqlite3.Error as e:
        log.warning("sentence vectors: %s unusable (%s); indexing goes on without them", vectors.path, e)
        return 0
    return len(todo)


class SentenceEmbedder:
    """The embedder as a question sees it: `encode` is the model's; `encode_cached` (the sentences of
    answers and evidence) reads the sentence file first, then the model's own memory cache and the
    model, and stores what it had to embed. Every other attribute is the wrapped embedder's."""

    def __init__(self, embedder, vectors: SentenceVectors):
        self.embedder, self.vectors = embedder, vectors

    def __getattr__(self, name: str):
        return getattr(self.embedder, name)

    def encode_cached(self, texts: list[str]) -> np.ndarray:
        """The vectors of `texts`; an unusable file (locked too long, corrupt) is logged, not fatal:
        the question embeds what it could not read."""
        if not texts:
            return self.embedder.encode_cached(texts)
        try:
            found = self.vectors.get(texts)
        except sqlite3.Error as e:
            log.warning("sentence vectors: cannot read %s (%s); embedding instead", self.vectors.path, e)
            found = {}
        missing = [t for t in dict.fromkeys(texts) if t not in found]
        if missing:
            fresh = self.embedder.encode_cached(missing)
            found.update(zip(missing, fresh, strict=True))
            try:
                self.vectors.put(missing, fresh)
            except sqlite3.Error as e:
                log.warning("sentence vectors: cannot write %s (%s)", self.vectors.path, e)
        return np.stack([found[t] for t in texts])
