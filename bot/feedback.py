"""The feedback database: every posted answer, every 👍/👎 vote and every index run, in one SQLite file.

The file is plain SQLite (WAL mode), so any SQLite tool can browse it, e.g.
`sqlite3 .ravbot/feedback.sqlite` or `datasette .ravbot/feedback.sqlite`. Tables:

- `answers`: one row per posted answer, keyed by (platform, message_id).
- `votes`: one row per user per answer, keyed by (platform, message_id, user). `value` is +1/-1, or
  NULL once the vote was retracted; `up`/`down` say which reactions the user holds, so removing one
  of two leaves the other as the vote (the row is kept so a late, older event cannot bring it back).
  A vote that arrives before its answer is recorded (the reaction raced the database write) is
  kept and counts as soon as the answer row exists; such orphans older than a day are pruned.
- `index_runs`: start, end, counts and error of every reindex run, and the progress of a running one
  (`done` of `total` documents, updated about once a second).

Schema changes are sqlite-utils `Migrations`: add a new function at the end of `MIGRATIONS`,
never edit an applied one. Writes use `BEGIN IMMEDIATE` and are retried while another process
holds the database locked, so a vote is never lost to "database is locked".
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import IO, Any, TypeVar

import sqlite_utils

from pipeline.types import Answer

T = TypeVar("T")

MIGRATIONS = sqlite_utils.Migrations("ravbot-feedback")
ORPHAN_VOTE_DAYS = 1


@MIGRATIONS()
def m001_answers_and_votes(db: sqlite_utils.Database) -> None:
    db["answers"].create(
        {"platform": str, "message_id": str, "channel": str, "thread": str, "asker": str,
         "question": str, "answer": str, "idk": int, "verdicts": str, "sources": str,
         "timings": str, "flagged": int, "created_at": str},
        pk=("platform", "message_id"),
    )
    db["answers"].create_index(["created_at"])
    db["votes"].create(
        {"platform": str, "message_id": str, "user": str, "value": int, "updated_at": str},
        pk=("platform", "message_id", "user"),
    )


@MIGRATIONS()
def m002_index_runs_and_claim_counts(db: sqlite_utils.Database) -> None:
    db["index_runs"].create(
        {"id": int, "source": str, "started_at": str, "finished_at": str, "status": str,
         "added": int, "changed": int, "unchanged": int, "removed": int, "skipped": int,
         "failed": int, "error": str},
        pk="id",
    )
    db["index_runs"].create_index(["source", "id"])
    db["answers"].add_column("claims", int, not_null_default=0)
    db["answers"].add_column("error", str, not_null_default="")
    db.execute("update answers set claims = coalesce(json_array_length(verdicts), 0)")


@MIGRATIONS()
def m003_held_reactions_and_run_progress(db: sqlite_utils.Database) -> None:
    db["votes"].add_column("up", int, not_null_default=0)  # the user holds a 👍 reaction now
    db["votes"].add_column("down", int, not_null_default=0)  # ... a 👎 reaction
    db.execute("update votes set up = (value = 1), down = (value = -1) where value is not null")
    db["index_runs"].add_column("done", int, not_null_default=0)  # documents processed so far
    db["index_runs"].add_column("total", int, not_null_default=0)  # documents in the source (0: not known yet)
    db["index_runs"].add_column("progress_at", str, not_null_default="")


def _migrate(db: sqlite_utils.Database) -> None:
    """Apply pending migrations holding the write lock, so two processes starting together cannot both
    apply the same one."""
    if MIGRATIONS.pending(db):
        with _immediate(db):
            MIGRATIONS.apply(db)


@contextmanager
def _immediate(db: sqlite_utils.Database) -> Iterator[sqlite_utils.Database]:
    """A write transaction that takes the write lock at once (a deferred one could fail to upgrade)."""
    db.conn.execute("BEGIN IMMEDIATE")
    try:
        yield db
    except BaseException:
        if db.conn.in_transaction:
            db.conn.rollback()
        raise
    db.conn.commit()


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="microseconds")


def to_iso(when: datetime) -> str:
    """UTC ISO text with microseconds, so stored times compare correctly as strings (naive = UTC)."""
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return when.astimezone(UTC).isoformat(timespec="microseconds")


def _is_busy(error: sqlite3.OperationalError) -> bool:
    text = str(error).lower()
    return "locked" in text or "busy" in text


class FeedbackStore:
    """Owns the feedback SQLite file; safe to share between threads (one connection, one lock)."""

    def __init__(self, path: str | Path, busy_timeout: float = 5.0, retry_for: float = 60.0):
        self.path = Path(path)
        self.busy_timeout = busy_timeout  # SQLite's own wait per statement
        self.retry_for = retry_for  # then our retry loop, for this long in all
        self._lock = threading.RLock()
        self._db: sqlite_utils.Database | None = None

    @property
    def db(self) -> sqlite_utils.Database:
        with self._lock:
            if self._db is None:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                conn = sqlite3.connect(str(self.path), timeout=self.busy_timeout, check_same_thread=False)
                db = sqlite_utils.Database(conn)
                self._retry(db.enable_wal)
                self._retry(lambda: _migrate(db))
                self._db = db
            return self._db

    def close(self) -> None:
        with self._lock:
            if self._db is not None:
                self._db.conn.close()
                self._db = None

    # --- busy/locked handling
    def _retry(self, fn: Callable[[], T]) -> T:
        deadline = time.monotonic() + self.retry_for
        pause = 0.05
        while True:
            try:
                return fn()
            except sqlite3.OperationalError as e:
                if not _is_busy(e) or time.monotonic() + pause > deadline:
                    raise
                time.sleep(pause)
                pause = min(pause * 2, 1.0)

    def _write(self, fn: Callable[[sqlite_utils.Database], T]) -> T:
        """Run `fn(db)` in one write transaction, retried as a whole while the database is locked."""

        def attempt() -> T:
            with _immediate(self.db) as db:
                return fn(db)

        with self._lock:
            return self._retry(attempt)

    def _read(self, sql: str, args: list | tuple = ()) -> list[dict[str, Any]]:
        with self._lock:
            cursor = self._retry(lambda: self.db.execute(sql, args))
            names = [d[0] for d in cursor.description]
            return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]

    # --- answers and votes
    def record_answer(self, platform: str, channel: str, message_id: str, thread: str,
                      asker: str, answer: Answer) -> None:
        """Remember a posted answer; recording the same message again updates it (created_at kept)."""
        if not message_id:
            raise ValueError(f"record_answer: empty message_id for {platform!r} channel {channel!r}")
        row = {
            "platform": platform, "message_id": str(message_id), "channel": channel, "thread": thread,
            "asker": asker, "question": answer.question, "answer": answer.text, "idk": int(answer.idk),
            "verdicts": json.dumps([_verdict_json(v) for v in answer.verdicts], ensure_ascii=False),
            "sources": json.dumps([{"id": s.id, "title": s.title, "link": s.link, "chunk_id": s.chunk_id}
                                   for s in answer.sources], ensure_ascii=False),
            "timings": json.dumps(answer.timings),
            "flagged": len(answer.flagged), "claims": len(answer.verdicts), "error": answer.error,
            "created_at": now_iso(),
        }
        columns = list(row)
        updates = ", ".join(f"{c} = excluded.{c}" for c in columns if c not in ("platform", "message_id", "created_at"))
        sql = (f"insert into answers ({', '.join(columns)}) values ({', '.join('?' * len(columns))}) "
               f"on conflict (platform, message_id) do update set {updates}")
        self._write(lambda db: db.execute(sql, list(row.values())))

    def vote(self, platform: str, message_id: str, user: str, value: int | None,
             at: datetime | None = None, removed: int | None = None) -> bool:
        """Record a reaction event as `user`'s vote on an answer. `value` +1 / -1: the user added 👍 / 👎,
        which becomes their vote (the latest added wins). `value` None: a removal; with `removed` (+1 / -1,
        which reaction went) a user still holding the other one keeps it as their vote; without it the
        vote is retracted. Latest event wins: pass the event's time as `at` so a late, older event (out
        of order) is ignored; repeating an event changes nothing. Returns False when `message_id` is not
        (yet) a recorded answer; the vote is kept anyway and counts once the answer is recorded."""
        if value not in (1, -1, None):
            raise ValueError(f"vote value must be 1, -1 or None, not {value!r}")
        if removed not in (1, -1, None) or (removed is not None and value is not None):
            raise ValueError(f"removed must be 1 or -1 with value None, not removed={removed!r} value={value!r}")
        when = to_iso(at) if at else now_iso()
        key = [platform, str(message_id), user]

        def apply(db: sqlite_utils.Database) -> bool:
            row = db.execute("select up, down, updated_at from votes where platform = ? and message_id = ? "
                             "and user = ?", key).fetchone()
            up, down = (row[0], row[1]) if row else (0, 0)
            if row is None or when >= row[2]:
                if value is not None:
                    up, down, new = (1, down, 1) if value == 1 else (up, 1, -1)
                elif removed is None:
                    up, down, new = 0, 0, None
                else:
                    up, down = (0, down) if removed == 1 else (up, 0)
                    new = -1 if down else 1 if up else None
                db.execute(
                    "insert into votes (platform, message_id, user, value, up, down, updated_at) "
                    "values (?, ?, ?, ?, ?, ?, ?) on conflict (platform, message_id, user) do update set "
                    "value = excluded.value, up = excluded.up, down = excluded.down, updated_at = excluded.updated_at",
                    [*key, new, up, down, when],
                )
            known = db.execute("select 1 from answers where platform = ? and message_id = ?", key[:2]).fetchone()
            if not known:  # reactions on messages that never become answers must not pile up
                cutoff = to_iso(datetime.now(UTC) - timedelta(days=ORPHAN_VOTE_DAYS))
                db.execute("delete from votes where updated_at < ? and not exists (select 1 from answers a "
                           "where a.platform = votes.platform and a.message_id = votes.message_id)", [cutoff])
            return known is not None

        return self._write(apply)

    # --- statistics
    def stats(self, since: datetime | None = None, top: int = 5) -> dict[str, Any]:
        """Answers since `since` (all when None) and the votes on them.

        helpful_rate = 👍 / (👍 + 👎) (None without votes); idk_rate = "I don't know" answers / answers;
        flagged_per_answer = flagged claims / answers that were not "I don't know" (None if none);
        downvoted = answers with at least one 👎, most 👎 first; top_sources = most listed source links."""
        where, args = ("where a.created_at >= ?", [to_iso(since)]) if since else ("", [])
        answers = self._read(
            "select a.platform, a.channel, a.message_id, a.question, a.answer, a.idk, a.flagged, a.claims, "
            "a.sources, a.created_at, "
            "(select count(*) from votes v where v.platform = a.platform and v.message_id = a.message_id and v.value = 1) as up, "
            "(select count(*) from votes v where v.platform = a.platform and v.message_id = a.message_id and v.value = -1) as down "
            f"from answers a {where} order by a.created_at", args,
        )
        n = len(answers)
        up = sum(a["up"] for a in answers)
        down = sum(a["down"] for a in answers)
        answered = [a for a in answers if not a["idk"]]
        sources: Counter[str] = Counter()
        for a in answers:
            for s in json.loads(a["sources"] or "[]"):
                sources[s.get("link") or s.get("title") or "?"] += 1
        downvoted = sorted((a for a in answers if a["down"]), key=lambda a: (-a["down"], a["created_at"]))
        return {
            "since": to_iso(since) if since else None,
            "answers": n,
            "votes": up + down,
            "up": up,
            "down": down,
            "helpful_rate": up / (up + down) if up + down else None,
            "idk": n - len(answered),
            "idk_rate": (n - len(answered)) / n if n else None,
            "claims": sum(a["claims"] for a in answered),
            "flagged": sum(a["flagged"] for a in answered),
            "flagged_per_answer": sum(a["flagged"] for a in answered) / len(answered) if answered else None,
            "downvoted": [
                {k: a[k] for k in ("platform", "channel", "message_id", "question", "answer", "up", "down", "created_at")}
                for a in downvoted
            ],
            "top_sources": sources.most_common(top),
        }

    def export_golden(self, path_or_file: str | Path | IO[str], since: datetime | None = None) -> int:
        """Write 👎-voted answers as golden-set candidates, one JSON object per line, in the format
        `ravbot eval golden` reads: {"question", "relevant": [source links]} plus, for the reviewer,
        "rejected_answer" (the answer people voted down) and "votes" {"up", "down"}. There is no
        "expected_answer": a reviewer adds it and corrects "relevant". Returns the number written."""
        where, args = ("and a.created_at >= ?", [to_iso(since)]) if since else ("", [])
        rows = self._read(
            "select a.question, a.answer, a.sources, a.platform, a.message_id, a.created_at, "
            "sum(v.value = 1) as up, sum(v.value = -1) as down from answers a join votes v "
            "on v.platform = a.platform and v.message_id = a.message_id "
            f"where v.value is not null {where} group by a.platform, a.message_id "
            "having sum(v.value = -1) > 0 order by a.created_at", args,
        )
        lines = []
        for r in rows:
            links = list(dict.fromkeys(s.get("link") or s.get("title") for s in json.loads(r["sources"] or "[]")))
            lines.append(json.dumps({
                "question": r["question"], "relevant": [x for x in links if x],
                "rejected_answer": r["answer"], "votes": {"up": r["up"], "down": r["down"]},
                "platform": r["platform"], "message_id": r["message_id"], "created_at": r["created_at"],
            }, ensure_ascii=False))
        text = "".join(line + "\n" for line in lines)
        if isinstance(path_or_file, str | Path):
            Path(path_or_file).write_text(text, encoding="utf-8")
        else:
            path_or_file.write(text)
        return len(lines)

    # --- index runs
    def start_run(self, source: str) -> int:
        """Record the start of a reindex of `source`; returns the run id."""
        return self._write(lambda db: db.execute(
            "insert into index_runs (source, started_at, status, error) values (?, ?, 'running', '')",
            [source, now_iso()]).lastrowid)

    def finish_run(self, run_id: int, counts: dict[str, Any], error: str = "") -> None:
        """Record the end of a run: its counts (`errors` may be a list of per-document errors) and the
        fatal error, if any. Status is `failed` with an error, `ok` otherwise."""
        failed = counts.get("failed", len(counts.get("errors") or []))
        values = [now_iso(), "failed" if error else "ok",
                  *(int(counts.get(k) or 0) for k in ("added", "changed", "unchanged", "removed", "skipped")),
                  int(failed or 0), error, run_id]
        self._write(lambda db: db.execute(
            "update index_runs set finished_at = ?, status = ?, added = ?, changed = ?, unchanged = ?, "
            "removed = ?, skipped = ?, failed = ?, error = ? where id = ?", values))

    def run_progress(self, run_id: int, done: int, total: int) -> None:
        """Record how far a running build is (`done` of `total` documents), for status and the Core."""
        self._write(lambda db: db.execute(
            "update index_runs set done = ?, total = ?, progress_at = ? where id = ?",
            [int(done), int(total), now_iso(), run_id]))

    def ever_indexed(self, source: str) -> bool:
        """Whether a build of `source` ever finished (status ok)."""
        return bool(self._read("select exists(select 1 from index_runs where source = ? and status = 'ok') as ok",
                               [source])[0]["ok"])

    def interrupt_runs(self) -> int:
        """Mark runs still `running` as `interrupted` (their process died); call it only while no run can
        be in progress. Returns how many were marked."""
        return self._write(lambda db: db.execute(
            "update index_runs set status = 'interrupted', finished_at = ?, "
            "error = 'interrupted: the process stopped during the run' where status = 'running'",
            [now_iso()]).rowcount)

    def runs(self, limit: int = 10, source: str | None = None) -> list[dict[str, Any]]:
        """The latest runs, newest first (of one source, or all)."""
        where, args = ("where source = ?", [source]) if source else ("", [])
        return self._read(f"select * from index_runs {where} order by id desc limit ?", [*args, limit])


def _verdict_json(v) -> dict[str, Any]:
    ev = v.evidence
    return {
        "claim": v.claim.text, "start": v.claim.start, "end": v.claim.end, "label": str(v.label),
        "confidence": round(float(v.confidence), 4), "method": v.method, "conflict": v.conflict,
        "sentence": v.sentence,
        "evidence": {"title": ev.title, "link": ev.link, "origin": ev.origin} if ev else None,
    }


def format_stats(stats: dict[str, Any], max_downvoted: int = 5) -> str:
    """The stats as a short plain-text report for chat or the terminal."""

    def pct(x: float | None) -> str:
        return "n/a" if x is None else f"{x:.0%}"

    since = f" since {stats['since'][:16].replace('T', ' ')} UTC" if stats.get("since") else ""
    per = stats["flagged_per_answer"]
    lines = [
        f"Feedback{since}: {stats['answers']} answers, {stats['votes']} votes "
        f"({stats['up']} 👍, {stats['down']} 👎), helpful rate {pct(stats['helpful_rate'])}.",
        f"\"I don't know\": {stats['idk']} ({pct(stats['idk_rate'])}). "
        f"Claims flagged per answer: {'n/a' if per is None else f'{per:.2f}'} "
        f"({stats['flagged']} of {stats['claims']} claims).",
    ]
    if stats["downvoted"]:
        lines.append("👎 answers:")
        for a in stats["downvoted"][:max_downvoted]:
            question = " ".join(a["question"].split())
            question = question if len(question) <= 120 else question[:117] + "..."
            lines.append(f"- {a['down']} 👎 / {a['up']} 👍 ({a['platform']} {a['message_id']}): {question}")
        if len(stats["downvoted"]) > max_downvoted:
            lines.append(f"  ...and {len(stats['downvoted']) - max_downvoted} more (`ravbot feedback export`).")
    if stats["top_sources"]:
        lines.append("Top sources: " + ", ".join(f"{link} ({n})" for link, n in stats["top_sources"]))
    return "\n".join(lines)
