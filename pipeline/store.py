"""The `Store` seam (protocol) and `EmbeddedStore`: one SQLite file, numpy dense search, FTS5 BM25.

Indexing writes a new *generation* next to the one being served and switches to it in one
transaction (`IndexBuild.commit`), so questions are answered from a complete index at all
times; a build that fails or is killed midway is discarded on the next `begin`.

Writes cost the same per chunk at any index size: every statement a build runs finds its rows
through an index (`chunks.doc_id`, `members.chunk_id`, the primary keys), and a build writes
its documents in batches, one transaction per batch (`WRITE_BATCH_CHUNKS`).
"""

from __future__ import annotations

import json
import re
import sqlite3
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import numpy as np
import sqlite_utils

from pipeline.names import mentions
from pipeline.text import QUERY_STOPWORDS, words
from pipeline.types import Chunk, Document

Filters = Mapping[str, Sequence[str]]  # {"source": [...], "domain": [...]}; empty = no filter


class StoreUnavailable(RuntimeError):
    """The vector store cannot be reached or read; the bot says the knowledge base is unavailable."""


class IndexBuild(Protocol):
    """A new generation of one source's documents, invisible to readers until `commit`."""

    def keep(self, doc_id: str) -> None:
        """Carry an unchanged document over from the served generation."""

    def add(self, doc: Document, chunks: Sequence[Chunk], vectors: np.ndarray) -> None:
        """Add a new or changed document with its chunks and their embeddings (same order)."""

    def commit(self) -> dict[str, int]:
        """Serve the new generation; documents of the source neither kept nor added are removed.
        Returns {"documents": n, "chunks": n, "removed": n}."""

    def abort(self) -> None:
        """Throw the build away; the served generation is untouched."""


class Store(Protocol):
    """What retrieval, verification and indexing need from a vector store."""

    def doc_hashes(self, source: str | None = None) -> dict[str, str]:
        """doc_id -> content hash of the served documents (of one source, or all)."""

    def vectors(self, chunk_ids: Sequence[str]) -> dict[str, np.ndarray]:
        """Stored embeddings of the chunks that exist (any generation), by chunk id."""

    def begin(self, source: str) -> IndexBuild: ...

    def dense_search(self, vector: np.ndarray, n: int, filters: Filters | None = None) -> list[tuple[str, float]]:
        """(chunk id, cosine) of the n nearest served chunks, best first."""

    def bm25_search(self, query: str, n: int, filters: Filters | None = None) -> list[tuple[str, float]]:
        """(chunk id, BM25 score, higher is better) of the n best served chunks, best first."""

    def chunks(self, chunk_ids: Sequence[str]) -> list[Chunk]:
        """The chunks with these ids, in the same order (missing ids are skipped)."""

    def mentioned(self, names: Sequence[str]) -> set[str]:
        """The names (as given) that some served chunk contains as whole words (`pipeline.names.mentions`),
        in its text or its title and headings: the whole index is searched, not only the evidence of one claim."""

    def counts(self) -> dict[str, int]:
        """{"documents": n, "chunks": n} of the served generation."""

    def close(self) -> None: ...


def fts_query(text: str) -> str:
    """A safe FTS5 query: the text's words, quoted and OR-ed, so FTS5 operators in user text are inert."""
    query = dict.fromkeys(w for w in words(text) if w not in QUERY_STOPWORDS)
    return " OR ".join(f'"{w}"' for w in list(query)[:64])


SCHEMA_VERSION = "2"  # 1: the first schema; 2: index on chunks.doc_id
# Set on every connection: WAL (readers never wait for a writer) with synchronous=NORMAL (no fsync per
# commit; a power cut may lose the last transactions but never corrupts the file, and an index build
# is redone from its sources anyway); a 32 MB page cache per connection so index pages stay in memory
# while the primary-key b-trees of a large index grow; temporary b-trees in memory.
PRAGMAS = ("synchronous = NORMAL", "cache_size = -32000", "temp_store = MEMORY")
BM25_OVERFETCH = 4  # BM25 joins FTS5's best 4×n matches with the served generation (see bm25_search)
WRITE_BATCH_CHUNKS = 1000  # a build writes its added documents in one transaction per this many chunks


@dataclass(frozen=True)
class _Matrix:
    """The served generation's dense index: row i is the chunk with rowid `rowids[i]`; the code of a
    source or domain in `codes[key]` is `names[key][its name]`."""

    gen: int
    rowids: np.ndarray
    matrix: np.ndarray
    codes: dict[str, np.ndarray]
    names: dict[str, dict[str, int]]


class EmbeddedStore:
    """The default store: documents, chunks, float32 embeddings and generations in one SQLite file."""

    def __init__(self, path: str | Path):
        self.path = str(path)
        self._local = threading.local()
        self._cache_lock = threading.Lock()
        self._cache: _Matrix | None = None
        self._write_lock = threading.Lock()
        self._closed = False

    # --- connections: one per thread, WAL so readers never wait for an index build
    @property
    def db(self) -> sqlite_utils.Database:
        if self._closed:
            raise StoreUnavailable(f"store {self.path} is closed")
        db = getattr(self._local, "db", None)
        if db is None:
            try:
                Path(self.path).parent.mkdir(parents=True, exist_ok=True)
                conn = sqlite3.connect(self.path, timeout=30, check_same_thread=False)
                db = sqlite_utils.Database(conn)
                db.enable_wal()
                for pragma in PRAGMAS:
                    conn.execute(f"pragma {pragma}")
                self._migrate(db)
            except sqlite3.Error as e:
                raise StoreUnavailable(f"cannot open index {self.path}: {e}") from e
            self._local.db = db
        return db

    @staticmethod
    def _schema_version(db: sqlite_utils.Database) -> str:
        try:
            row = db.execute("select value from meta where key = 'schema'").fetchone()
        except sqlite3.OperationalError:  # no meta table yet: a new file
            return ""
        return row[0] if row else ""

    @classmethod
    def _migrate(cls, db: sqlite_utils.Database) -> None:
        """Create the schema, or bring an older file's up to date (the indexes added in schema 2).
        Runs under BEGIN IMMEDIATE, so two processes opening one new file do not both create it."""
        if cls._schema_version(db) == SCHEMA_VERSION:
            return
        db.execute("begin immediate")
        try:
            if cls._schema_version(db) != SCHEMA_VERSION:  # another process may have migrated meanwhile
                db["meta"].create({"key": str, "value": str}, pk="key", if_not_exists=True)
                db["meta"].insert({"key": "active_gen", "value": "0"}, ignore=True)
                db["chunks"].create(
                    {"id": str, "doc_id": str, "text": str, "context_text": str, "title": str,
                     "headings": str, "source": str, "domain": str, "url": str, "path": str,
                     "position": int, "doc_hash": str, "modified": float, "embedding": bytes},
                    pk="id", if_not_exists=True,
                )
                db["docs"].create(
                    {"gen": int, "id": str, "source": str, "title": str, "location": str,
                     "modified": float, "hash": str},
                    pk=("gen", "id"), if_not_exists=True,
                )
                db["members"].create({"gen": int, "chunk_id": str}, pk=("gen", "chunk_id"), if_not_exists=True)
                db["members"].create_index(["chunk_id"], if_not_exists=True)
                db["docs"].create_index(["gen", "source"], if_not_exists=True)
                db["chunks"].create_index(["doc_id"], if_not_exists=True)  # schema 2: `add` and `keep` per document
                if "chunks_fts" not in db.table_names():
                    db["chunks"].enable_fts(["context_text"], tokenize="porter", create_triggers=True)
                db.execute("insert or replace into meta (key, value) values ('schema', ?)", [SCHEMA_VERSION])
            db.conn.commit()
        except BaseException:
            db.conn.rollback()
            raise

    def active_gen(self) -> int:
        try:
            row = self.db.execute("select value from meta where key = 'active_gen'").fetchone()
        except sqlite3.Error as e:
            raise StoreUnavailable(f"cannot read index {self.path}: {e}") from e
        return int(row[0])

    # --- reading
    def doc_hashes(self, source: str | None = None) -> dict[str, str]:
        gen = self.active_gen()
        sql, args = "select id, hash from docs where gen = ?", [gen]
        if source is not None:
            sql, args = sql + " and source = ?", [gen, source]
        return dict(self.db.execute(sql, args).fetchall())

    def documents(self) -> list[dict]:
        """The served documents (id, source, title, location, modified, hash)."""
        rows = self.db.execute("select id, source, title, location, modified, hash from docs where gen = ?", [self.active_gen()])
        return [dict(zip(("id", "source", "title", "location", "modified", "hash"), r, strict=True)) for r in rows]

    def vectors(self, chunk_ids: Sequence[str]) -> dict[str, np.ndarray]:
        out: dict[str, np.ndarray] = {}
        ids = list(chunk_ids)
        for i in range(0, len(ids), 500):
            part = ids[i : i + 500]
            marks = ",".join("?" * len(part))
            for cid, blob in self.db.execute(f"select id, embedding from chunks where id in ({marks})", part):
                out[cid] = np.frombuffer(blob, dtype=np.float32)
        return out

    def _matrix(self) -> _Matrix:
        """The served generation's embeddings as one float32 matrix, loaded once per generation. Rows
        are read one at a time into a matrix sized up front: no list of every blob beside it (at 1M
        chunks that list alone is 1.5 GB), and a generation's old matrix goes before the new one loads.
        Chunks are held by rowid (ids are looked up for the hits only), sources and domains as codes."""
        gen = self.active_gen()
        with self._cache_lock:
            if self._cache is None or self._cache.gen != gen:
                self._cache = None
                self._cache = self._load_matrix(gen)
            return self._cache

    def _load_matrix(self, gen: int) -> _Matrix:
        # CROSS JOIN: chunks are read in rowid order and each looked up in `members`, with no sort (an
        # ORDER BY over the join sorted every embedding in a temporary b-tree: +300 MB at 200k chunks)
        served = "from chunks c cross join members m on m.chunk_id = c.id and m.gen = ?"
        count = self.db.execute(f"select count(*) {served}", [gen]).fetchone()[0]
        rowids = np.zeros(count, dtype=np.int64)
        matrix = np.zeros((0, 1), dtype=np.float32)
        codes = {"source": np.zeros(count, dtype=np.int32), "domain": np.zeros(count, dtype=np.int32)}
        names: dict[str, dict[str, int]] = {"source": {}, "domain": {}}
        n = 0
        rows = self.db.execute(f"select c.rowid, c.embedding, c.source, c.domain {served}", [gen])
        for rowid, blob, source, domain in rows:
            if n == count:  # a build committed between the count and the read: it is read next time
                break
            vector = np.frombuffer(blob, dtype=np.float32)
            if n == 0:
                matrix = np.empty((count, vector.size), dtype=np.float32)
            matrix[n], rowids[n] = vector, rowid
            codes["source"][n] = names["source"].setdefault(source, len(names["source"]))
            codes["domain"][n] = names["domain"].setdefault(domain, len(names["domain"]))
            n += 1
        return _Matrix(gen, rowids[:n], matrix[:n], {k: v[:n] for k, v in codes.items()}, names)

    def dense_search(self, vector: np.ndarray, n: int, filters: Filters | None = None) -> list[tuple[str, float]]:
        m = self._matrix()
        if not len(m.rowids):
            return []
        scores = m.matrix @ np.asarray(vector, dtype=np.float32)
        if filters:
            mask = np.ones(len(m.rowids), dtype=bool)
            for key in ("source", "domain"):
                if filters.get(key):
                    mask &= np.isin(m.codes[key], [m.names[key][v] for v in filters[key] if v in m.names[key]])
            scores = np.where(mask, scores, -np.inf)
        n = min(n, len(m.rowids))
        top = np.argpartition(-scores, n - 1)[:n]
        top = [int(i) for i in top[np.argsort(-scores[top], kind="stable")] if np.isfinite(scores[i])]
        if not top:
            return []
        rowids = [int(m.rowids[i]) for i in top]
        ids = dict(self.db.execute(  # of the matrix's generation only (CROSS JOIN: by rowid first)
            f"select c.rowid, c.id from chunks c cross join members m on m.chunk_id = c.id and m.gen = ? "
            f"where c.rowid in ({','.join('?' * len(rowids))})", [m.gen, *rowids]).fetchall())
        return [(ids[r], float(scores[i])) for r, i in zip(rowids, top, strict=True) if r in ids]

    def bm25_search(self, query: str, n: int, filters: Filters | None = None) -> list[tuple[str, float]]:
        """FTS5's own BM25 (its `rank`). FTS5 ranks its matches first, and only its best `BM25_OVERFETCH`×n
        are joined with the served generation and the filters; when fewer than n of those are served
        (another generation's chunks, a filter) and FTS5 had more, every match is ranked instead."""
        match = fts_query(query)
        if not match:
            return []
        where, args = "", []
        for key in ("source", "domain"):
            values = list((filters or {}).get(key) or [])
            if values:
                where += f" and c.{key} in ({','.join('?' * len(values))})"
                args += values
        # CROSS JOIN: SQLite then reads FTS5's matches first and looks each one up, never the generation
        served = ("cross join chunks c on c.rowid = f.rowid "
                  f"cross join members m on m.chunk_id = c.id and m.gen = ? where 1{where} order by f.rank limit ?")
        gen = self.active_gen()
        try:
            fetch = BM25_OVERFETCH * n
            top = "(select rowid, rank from chunks_fts where chunks_fts match ? order by rank limit ?) f "
            rows = self.db.execute(f"select c.id, -f.rank from {top}{served}", [match, fetch, gen, *args, n]).fetchall()
            if len(rows) < n and self.db.execute(f"select count(*) from {top}", [match, fetch]).fetchone()[0] == fetch:
                every = "(select rowid, rank from chunks_fts where chunks_fts match ?) f "
                rows = self.db.execute(f"select c.id, -f.rank from {every}{served}", [match, gen, *args, n]).fetchall()
        except sqlite3.OperationalError as e:
            raise StoreUnavailable(f"BM25 search failed on {self.path}: {e}") from e
        return [(cid, float(score)) for cid, score in rows]

    def mentioned(self, names: Sequence[str]) -> set[str]:
        found = set()
        gen = self.active_gen()
        for name in dict.fromkeys(names):
            parts = re.findall(r"[^\W_]+", name.lower())
            if not parts:
                continue
            # an FTS5 phrase (the words in order, stemmed); a dotted name may also be written as an
            # import ("from starlette.config import environ"), so for it every word, in any order
            queries = ['"' + " ".join(parts) + '"'] + ([" AND ".join(f'"{w}"' for w in parts)] if "." in name else [])
            # CROSS JOIN: FTS5's matches first (a name is rare), never a probe of FTS5 per served chunk
            # the chunk's headings count: a reference page names each option only in its heading
            sql = ("select c.context_text from chunks_fts cross join chunks c on c.rowid = chunks_fts.rowid "
                   "cross join members m on m.chunk_id = c.id and m.gen = ? where chunks_fts match ? limit 200")
            for query in queries:
                try:
                    rows = self.db.execute(sql, [gen, query]).fetchall()
                except sqlite3.OperationalError as e:
                    raise StoreUnavailable(f"name search failed on {self.path}: {e}") from e
                if any(mentions(name, text) for (text,) in rows):
                    found.add(name)
                    break
        return found

    def chunks(self, chunk_ids: Sequence[str]) -> list[Chunk]:
        ids = list(chunk_ids)
        if not ids:
            return []
        marks = ",".join("?" * len(ids))
        rows = self.db.execute(
            "select id, doc_id, text, context_text, title, headings, source, domain, url, path, "
            f"position, doc_hash, modified from chunks where id in ({marks})", ids
        ).fetchall()
        by_id = {
            r[0]: Chunk(id=r[0], doc_id=r[1], text=r[2], context_text=r[3], title=r[4],
                        headings=tuple(json.loads(r[5] or "[]")), source=r[6], domain=r[7],
                        url=r[8], path=r[9], position=r[10], doc_hash=r[11], modified=r[12])
            for r in rows
        }
        return [by_id[i] for i in ids if i in by_id]

    def counts(self) -> dict[str, int]:
        gen = self.active_gen()
        docs = self.db.execute("select count(*) from docs where gen = ?", [gen]).fetchone()[0]
        chunks = self.db.execute("select count(*) from members where gen = ?", [gen]).fetchone()[0]
        return {"documents": docs, "chunks": chunks}

    # --- writing
    def begin(self, source: str) -> _EmbeddedBuild:
        if not self._write_lock.acquire(timeout=0.1):
            raise RuntimeError(f"an index build is already running on {self.path}")
        try:
            return _EmbeddedBuild(self, source)
        except BaseException:
            self._write_lock.release()
            raise

    def close(self) -> None:
        db = getattr(self._local, "db", None)
        if db is not None:
            db.conn.close()
            self._local.db = None
        self._closed = True


_CHUNK_COLUMNS = ("id", "doc_id", "text", "context_text", "title", "headings", "source", "domain", "url", "path",
                  "position", "doc_hash", "modified", "embedding")
_INSERT_CHUNK = (f"insert or ignore into chunks ({', '.join(_CHUNK_COLUMNS)}) "  # content-derived ids: same chunk, same row
                 f"values ({', '.join('?' * len(_CHUNK_COLUMNS))})")


class _EmbeddedBuild:
    """Keeps and adds are buffered in order and written in one transaction per `WRITE_BATCH_CHUNKS`
    chunks (and at `commit`); every statement finds its rows through an index."""

    def __init__(self, store: EmbeddedStore, source: str):
        self.store, self.source, self.db = store, source, store.db
        self.old = store.active_gen()
        self.new = self.old + 1
        self.kept: set[str] = set()
        self.added: set[str] = set()
        self._pending: list[tuple[str, str, list[tuple], Document | None]] = []  # (op, doc id, chunk rows, doc)
        self._pending_chunks = 0
        self._done = False
        with self.db.conn:  # drop what a killed or failed build left behind
            self.db.execute("delete from docs where gen > ?", [self.old])
            self.db.execute("delete from members where gen > ?", [self.old])
            # documents of other sources are served unchanged in the new generation
            self.db.execute(
                "insert into docs select ?, id, source, title, location, modified, hash from docs where gen = ? and source != ?",
                [self.new, self.old, source],
            )
            self.db.execute(
                "insert into members select ?, m.chunk_id from members m join chunks c on c.id = m.chunk_id "
                "where m.gen = ? and c.source != ?",
                [self.new, self.old, source],
            )

    def keep(self, doc_id: str) -> None:
        served = self.db.execute("select 1 from docs where gen = ? and id = ?", [self.old, doc_id]).fetchone()
        if not served:
            raise KeyError(f"cannot keep {doc_id!r}: it is not in the served index")
        self._pending.append(("keep", doc_id, [], None))
        self._pending_chunks += 1
        self.kept.add(doc_id)
        if self._pending_chunks >= WRITE_BATCH_CHUNKS:
            self.flush()

    def add(self, doc: Document, chunks: Sequence[Chunk], vectors: np.ndarray) -> None:
        if len(chunks) != len(vectors):
            raise ValueError(f"{doc.id}: {len(chunks)} chunks but {len(vectors)} vectors")
        rows = [
            (c.id, c.doc_id, c.text, c.context_text, c.title, json.dumps(list(c.headings)), c.source, c.domain,
             c.url, c.path, c.position, c.doc_hash, c.modified, np.asarray(v, dtype=np.float32).tobytes())
            for c, v in zip(chunks, vectors, strict=True)
        ]
        self._pending.append(("add", doc.id, rows, doc))
        self._pending_chunks += max(1, len(rows))
        self.added.add(doc.id)
        if self._pending_chunks >= WRITE_BATCH_CHUNKS:
            self.flush()

    def flush(self) -> None:
        """Write the buffered keeps and adds, in the order they were made, in one transaction."""
        if not self._pending:
            return
        pending, self._pending, self._pending_chunks = self._pending, [], 0
        conn = self.db.conn
        with conn:
            conn.executemany(_INSERT_CHUNK, (row for op, _, rows, _ in pending if op == "add" for row in rows))
            for op, doc_id, rows, doc in pending:
                if op == "keep":
                    conn.execute(
                        "insert or ignore into docs select ?, id, source, title, location, modified, hash "
                        "from docs where gen = ? and id = ?", [self.new, self.old, doc_id])
                    conn.execute(  # CROSS JOIN: SQLite then reads the document's chunks first, not the whole generation
                        "insert or ignore into members select ?, c.id from chunks c "
                        "cross join members m on m.gen = ? and m.chunk_id = c.id where c.doc_id = ?",
                        [self.new, self.old, doc_id])
                    continue
                conn.execute("delete from docs where gen = ? and id = ?", [self.new, doc_id])
                conn.execute("delete from members where gen = ? and chunk_id in (select id from chunks where doc_id = ?)",
                             [self.new, doc_id])
                conn.execute("insert into docs (gen, id, source, title, location, modified, hash) values (?, ?, ?, ?, ?, ?, ?)",
                             [self.new, doc.id, doc.source, doc.title, doc.location, doc.modified, doc.hash])
                conn.executemany("insert or ignore into members (gen, chunk_id) values (?, ?)",
                                 [(self.new, row[0]) for row in rows])

    def commit(self) -> dict[str, int]:
        try:
            self.flush()
            with self.db.conn:
                removed = self.db.execute(
                    "select count(*) from docs where gen = ? and source = ? and id not in (select id from docs where gen = ?)",
                    [self.old, self.source, self.new],
                ).fetchone()[0]
                self.db.execute("update meta set value = ? where key = 'active_gen'", [str(self.new)])
                self.db.execute("delete from docs where gen < ?", [self.new])
                self.db.execute("delete from members where gen < ?", [self.new])
                self.db.execute("delete from chunks where id not in (select chunk_id from members)")
            counts = self.store.counts()
            return {**counts, "removed": removed}
        finally:
            self._finish()

    def abort(self) -> None:
        self._pending, self._pending_chunks = [], 0
        try:
            with self.db.conn:
                self.db.execute("delete from docs where gen = ?", [self.new])
                self.db.execute("delete from members where gen = ?", [self.new])
        finally:
            self._finish()

    def _finish(self) -> None:
        if not self._done:
            self._done = True
            self.store._write_lock.release()
