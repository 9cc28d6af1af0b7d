"""Reindex jobs: one APScheduler job per source, admin-triggered runs, and the record of every run.

`Reindexer` runs `index_one(source) -> counts` (a closure around `pipeline.index.index_source`)
in a background thread, never on the event loop, and never twice at once for a source: a
scheduled run and an admin trigger share one claim per source, and a second request while
one runs is answered "already running". Runs are serialised (the store builds one generation
at a time), and each run's start, end, counts and error go to the `FeedbackStore`.

One scheduler however many processes: with `lock_dir` set (the data dir), `start()` takes an
exclusive lock on `lock_dir/scheduler.lock`; a second process (the Slack HTTP `web` process
next to the `worker`) finds it held, schedules nothing and says so in `status()`. Runs take
`lock_dir/reindex.lock` too, so a manual trigger in one process waits for a run in another.
A process killed during a run leaves its build uncommitted (the old index keeps serving) and
its run row `running`; the next run marks such rows `interrupted`. The progress of a running build
(documents done of total) is written to its run row, so `status` in any process can show it.
"""

from __future__ import annotations

import asyncio
import fcntl
import inspect
import logging
import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import IO, Any

from apscheduler.schedulers.asyncio import AsyncIOScheduler
from apscheduler.triggers.cron import CronTrigger
from apscheduler.triggers.interval import IntervalTrigger

from bot.feedback import FeedbackStore

log = logging.getLogger(__name__)

IndexOne = Callable[..., dict[str, Any]]  # index_one(source, progress=...) -> counts
PROGRESS_EVERY_S = 1.0
Notify = Callable[[str], None]


class AlreadyRunning(RuntimeError):
    """A reindex of this source is in progress."""


class Reindexer:
    """Owns the reindex schedule and the background threads that run reindexes."""

    def __init__(self, index_one: IndexOne, feedback: FeedbackStore, specs: dict[str, dict[str, Any]],
                 *, lock_dir: str | Path | None = None, schedule: bool = True,
                 misfire_grace_s: int = 3600):
        self.index_one = index_one
        self.feedback = feedback
        self.specs = dict(specs)
        self.lock_dir = Path(lock_dir) if lock_dir else None
        self.schedule = schedule  # False: this process never schedules (admin triggers still work)
        self.misfire_grace_s = misfire_grace_s
        self._claims_lock = threading.Lock()
        self._running: dict[str, str] = {}  # source -> "schedule" | "admin" | "cli"
        self._run_lock = threading.Lock()  # one build at a time in this process
        self._threads: list[threading.Thread] = []
        self._scheduler: AsyncIOScheduler | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._scheduler_lock: IO[str] | None = None
        self._scheduler_state = "off" if not schedule else "not started"

    # --- the schedule
    def start(self, run_unindexed: bool = True) -> None:
        """Schedule one job per source on the running event loop (call it from a coroutine).
        Sources that never finished a run are run at once when `run_unindexed`."""
        if self._scheduler is not None or not self.schedule:
            return
        if self.lock_dir and not self._take_scheduler_lock():
            self._scheduler_state = "in another process"
            log.info("reindex scheduler: already running in another process (%s); not scheduling here",
                     self.lock_dir / "scheduler.lock")
            return
        scheduler = AsyncIOScheduler()
        for name, spec in self.specs.items():
            trigger = _trigger(spec)
            if trigger is None:
                continue
            last_ok = [r for r in self.feedback.runs(limit=20, source=name) if r["status"] == "ok"]
            extra = {"next_run_time": datetime.now(trigger.timezone)} if run_unindexed and not last_ok else {}
            scheduler.add_job(self._scheduled, trigger, args=[name], id=f"reindex:{name}",
                              name=f"reindex {name}", max_instances=1, coalesce=True,
                              misfire_grace_time=self.misfire_grace_s, **extra)
        scheduler.start()
        self._scheduler, self._loop = scheduler, asyncio.get_running_loop()
        self._scheduler_state = "running here"
        log.info("reindex scheduler started: %s", ", ".join(f"{n} ({_describe(s)})" for n, s in self.specs.items()))

    def shutdown(self, wait_s: float = 0.0) -> None:
        """Stop scheduling (from the loop or any thread); wait up to `wait_s` for runs in progress. An
        abandoned run never commits, so the old index keeps serving and the next run starts clean."""
        if self._scheduler is not None:
            scheduler, loop = self._scheduler, self._loop
            if loop is not None and loop.is_running() and not _on_loop(loop):
                loop.call_soon_threadsafe(scheduler.shutdown, False)  # APScheduler is not thread-safe
            else:
                scheduler.shutdown(wait=False)
            self._scheduler = None
            self._scheduler_state = "stopped"
        if self._scheduler_lock is not None:
            self._scheduler_lock.close()  # closing the file releases the lock
            self._scheduler_lock = None
        deadline = time.monotonic() + wait_s
        for thread in list(self._threads):
            thread.join(max(0.0, deadline - time.monotonic()))

    async def _scheduled(self, source: str) -> None:
        if not self._claim(source, "schedule"):
            log.info("scheduled reindex of %s skipped: already running", source)
            return
        self._start_thread([source], None)

    def next_runs(self) -> dict[str, datetime | None]:
        """When each source is next scheduled here (None: not scheduled in this process)."""
        out: dict[str, datetime | None] = dict.fromkeys(self.specs)
        if self._scheduler is not None:
            for job in self._scheduler.get_jobs():
                out[job.args[0]] = job.next_run_time
        return out

    # --- runs
    def trigger(self, source: str | None = None, notify: Notify | None = None) -> str:
        """Start a reindex of `source` (all sources when None) in the background now and return at
        once. `notify(text)` is called from the worker thread with the outcome."""
        names = self._names(source)
        started = [n for n in names if self._claim(n, "admin")]
        busy = [n for n in names if n not in started]
        if not started:
            return f"Reindex of {_join(busy)} is already running."
        self._start_thread(started, notify)
        note = f" ({_join(busy)} already running.)" if busy else ""
        return f"Reindex of {_join(started)} started; I'll report when it is done.{note}"

    def run_now(self, source: str, **options: Any) -> dict[str, Any]:
        """Reindex `source` in this thread (CLI, tests) and return the result (see `_run`); `options`
        go to `index_one` (e.g. `progress=`). The run is recorded like any other; a failure is
        recorded and then raised. Raises AlreadyRunning while another run of `source` is going."""
        self._names(source)
        if not self._claim(source, "cli"):
            raise AlreadyRunning(f"a reindex of {source!r} is already running")
        return self._run(source, options, raise_errors=True)

    def running(self) -> dict[str, str]:
        with self._claims_lock:
            return dict(self._running)

    def status(self) -> dict[str, Any]:
        """Scheduler state, runs in progress, and per source: schedule, next run, last run."""
        nexts = self.next_runs()
        running = self.running()
        sources = {}
        for name, spec in self.specs.items():
            last = self.feedback.runs(limit=1, source=name)
            sources[name] = {"schedule": _describe(spec), "next_run": nexts.get(name),
                             "running": running.get(name), "last_run": last[0] if last else None}
        return {"scheduler": self._scheduler_state, "running": running, "sources": sources}

    def _names(self, source: str | None) -> list[str]:
        if source is None:
            return list(self.specs)
        if source not in self.specs:
            known = ", ".join(self.specs) or "none configured"
            raise ValueError(f"unknown source {source!r}; known sources: {known}")
        return [source]

    def _claim(self, source: str, origin: str) -> bool:
        with self._claims_lock:
            if source in self._running:
                return False
            self._running[source] = origin
            return True

    def _release(self, source: str) -> None:
        with self._claims_lock:
            self._running.pop(source, None)

    def _start_thread(self, sources: list[str], notify: Notify | None) -> None:
        def work() -> None:
            results = []
            for i, name in enumerate(sources):
                try:
                    results.append(self._run(name))
                except BaseException:
                    for rest in sources[i + 1:]:
                        self._release(rest)
                    raise
            if notify is not None:
                try:
                    notify("\n".join(summary(r) for r in results))
                except Exception:
                    log.exception("reindex: notifying the result failed")

        thread = threading.Thread(target=work, name=f"reindex-{'+'.join(sources)}", daemon=True)
        self._threads = [t for t in self._threads if t.is_alive()] + [thread]
        thread.start()

    def _run(self, source: str, options: dict[str, Any] | None = None, raise_errors: bool = False) -> dict[str, Any]:
        """Run `index_one(source)` (the claim on `source` must be held; it is released here).
        Returns {"source", "run_id", "status": "ok"|"failed", "error", "seconds", **counts}."""
        try:
            with self._run_lock, self._process_lock():
                self.feedback.interrupt_runs()  # no run can be in progress anywhere now
                run_id = self.feedback.start_run(source)
                started = time.monotonic()
                log.info("reindex of %s started (run %d)", source, run_id)
                options = dict(options or {})
                if _takes_progress(self.index_one):
                    options["progress"] = self._recorder(run_id, options.get("progress"))
                try:
                    counts = dict(self.index_one(source, **options))
                except Exception as e:
                    error = f"{type(e).__name__}: {e}"
                    self.feedback.finish_run(run_id, {}, error=error)
                    log.exception("reindex of %s failed; the previous index keeps serving", source)
                    if raise_errors:
                        raise
                    return {"source": source, "run_id": run_id, "status": "failed", "error": error,
                            "seconds": time.monotonic() - started}
                self.feedback.finish_run(run_id, counts)
                result = {**counts, "source": source, "run_id": run_id, "status": "ok", "error": "",
                          "seconds": time.monotonic() - started}
                log.info("%s", summary(result))
                return result
        finally:
            self._release(source)

    def _recorder(self, run_id: int, then: Callable[[int, int], None] | None) -> Callable[[int, int], None]:
        """A progress callback that records `done` of `total` on the run (at most about once a second,
        and always the first and last call), then calls `then`."""
        last = [0.0]

        def record(done: int, total: int) -> None:
            now = time.monotonic()
            if done in (0, total) or now - last[0] >= PROGRESS_EVERY_S:
                last[0] = now
                try:
                    self.feedback.run_progress(run_id, done, total)
                except Exception:  # progress is for display: never fail a build over it
                    log.warning("reindex: recording progress of run %d failed", run_id, exc_info=True)
            if then is not None:
                then(done, total)

        return record

    # --- cross-process locks
    def _take_scheduler_lock(self) -> bool:
        self.lock_dir.mkdir(parents=True, exist_ok=True)
        f = open(self.lock_dir / "scheduler.lock", "a+")  # noqa: SIM115 - held until shutdown
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            f.close()
            return False
        f.truncate(0)
        f.write(f"{os.getpid()}\n")
        f.flush()
        self._scheduler_lock = f
        return True

    def build_in_progress(self) -> bool:
        """Whether a build holds `reindex.lock` now, in this process or another: a run row left
        `running` by a killed process is then told apart from a live one. True without `lock_dir`."""
        if self.lock_dir is None or self._run_lock.locked():
            return True
        path = self.lock_dir / "reindex.lock"
        if not path.exists():
            return False
        with open(path, "a+") as f:
            try:
                fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return True
            fcntl.flock(f, fcntl.LOCK_UN)
            return False

    @contextmanager
    def _process_lock(self) -> Iterator[None]:
        if self.lock_dir is None:
            yield
            return
        self.lock_dir.mkdir(parents=True, exist_ok=True)
        with open(self.lock_dir / "reindex.lock", "a+") as f:
            fcntl.flock(f, fcntl.LOCK_EX)  # waits for a run in another process
            yield


def _takes_progress(index_one: IndexOne) -> bool:
    try:
        params = inspect.signature(index_one).parameters.values()
    except (TypeError, ValueError):
        return False
    return any(p.name == "progress" or p.kind is inspect.Parameter.VAR_KEYWORD for p in params)


def progress_line(run: dict[str, Any], now: datetime | None = None) -> str:
    """"412 of 5,183 documents, 8.6 documents/s, done in about 9 min (19:45 UTC)" for a running build
    (from its `index_runs` row); "reading the source" before the documents are counted."""
    done, total = int(run.get("done") or 0), int(run.get("total") or 0)
    if not total:
        return "reading the source"
    text = f"{done:,} of {total:,} documents"
    now = now or datetime.now(UTC)
    try:
        started = datetime.fromisoformat(run["started_at"])
        at = datetime.fromisoformat(run["progress_at"]) if run.get("progress_at") else now
    except (KeyError, TypeError, ValueError):
        return text
    seconds = (at - started).total_seconds()
    if done and seconds > 0:
        rate = done / seconds
        left = (total - done) / rate
        finish = at + timedelta(seconds=left)
        text += (f", {rate:.1f} documents/s, done in about {_duration(max(0.0, (finish - now).total_seconds()))} "
                 f"({finish.astimezone(UTC):%H:%M} UTC)")
    return text


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{max(1, round(seconds))} s"
    if seconds < 90 * 60:
        return f"{round(seconds / 60)} min"
    return f"{seconds / 3600:.1f} h"


def _on_loop(loop: asyncio.AbstractEventLoop) -> bool:
    try:
        return asyncio.get_running_loop() is loop
    except RuntimeError:
        return False


def _trigger(spec: dict[str, Any]) -> CronTrigger | IntervalTrigger | None:
    cron = str(spec.get("cron") or "").strip()
    if cron:
        return CronTrigger.from_crontab(cron)
    minutes = float(spec.get("interval_minutes") or 0)
    return IntervalTrigger(seconds=minutes * 60) if minutes > 0 else None


def _describe(spec: dict[str, Any]) -> str:
    cron = str(spec.get("cron") or "").strip()
    if cron:
        return f"cron `{cron}`"
    minutes = float(spec.get("interval_minutes") or 0)
    return f"every {minutes:g} min" if minutes > 0 else "manual only"


def _join(names: list[str]) -> str:
    return ", ".join(names)


def summary(result: dict[str, Any]) -> str:
    """One line for chat or logs describing a finished run."""
    took = f"{result.get('seconds', 0.0):.1f} s"
    if result["status"] != "ok":
        return (f"Reindex of {result['source']} failed after {took}: {result['error']}. "
                "The previous index is still serving.")
    errors = list(result.get("errors") or [])
    counts = ", ".join(f"{int(result.get(k) or 0)} {k}" for k in ("added", "changed", "unchanged", "removed", "skipped"))
    text = f"Reindex of {result['source']} finished in {took}: {counts}, {len(errors)} failed."
    if errors:
        shown = "; ".join(errors[:3]) + (f"; and {len(errors) - 3} more" if len(errors) > 3 else "")
        text += f" Problems: {shown}"
    return text

