"""Reindexer: claims (never twice at once), run records, notify, the one-scheduler lock, and scheduled
runs on a small real corpus with the real EmbeddedStore and pipeline.index.index_source, embedded by
the deterministic fake embedder (these tests are about runs, not about the model)."""

from __future__ import annotations

import asyncio
import threading
import time
from datetime import datetime
from pathlib import Path

import pytest

from bot.feedback import FeedbackStore
from bot.scheduler import AlreadyRunning, Reindexer, summary
from pipeline.index import index_source
from pipeline.store import EmbeddedStore

WAIT = 60.0  # generous upper bound for background work; the tests wait for events, never assert speed


def wait_until(condition, what: str, timeout: float = WAIT) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(0.02)


async def async_wait_until(condition, what: str, timeout: float = WAIT) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}")
        await asyncio.sleep(0.05)


class FakeIndex:
    """An index_one that records its calls and can be held open or made to fail."""

    def __init__(self):
        self.calls: list[str] = []
        self.started = threading.Event()
        self.release = threading.Event()
        self.release.set()
        self.fail_with: Exception | None = None
        self.active = 0
        self.max_active = 0
        self._lock = threading.Lock()

    def __call__(self, source: str) -> dict:
        with self._lock:
            self.calls.append(source)
            self.active += 1
            self.max_active = max(self.max_active, self.active)
        try:
            self.started.set()
            assert self.release.wait(WAIT), "test never released the run"
            if self.fail_with is not None:
                raise self.fail_with
            return {"added": 1, "changed": 0, "unchanged": 2, "removed": 0, "skipped": 0, "errors": []}
        finally:
            with self._lock:
                self.active -= 1


@pytest.fixture
def feedback(tmp_path):
    fb = FeedbackStore(tmp_path / "feedback.db")
    yield fb
    fb.close()


SPECS = {"docs": {"locations": ["docs"], "interval_minutes": 60, "cron": ""},
         "wiki": {"locations": ["wiki"], "interval_minutes": 0, "cron": "0 3 * * *"},
         "manual": {"locations": ["m"], "interval_minutes": 0, "cron": ""}}


def test_concurrent_triggers_run_once_and_notify(feedback):
    index = FakeIndex()
    index.release.clear()
    reindexer = Reindexer(index, feedback, SPECS)
    notes: list[str] = []
    done = threading.Event()

    def notify(text: str) -> None:
        notes.append(text)
        done.set()

    assert reindexer.trigger("docs", notify).startswith("Reindex of docs started")
    assert index.started.wait(WAIT)
    assert reindexer.trigger("docs", notify) == "Reindex of docs is already running."
    with pytest.raises(AlreadyRunning):
        reindexer.run_now("docs")
    assert reindexer.status()["sources"]["docs"]["running"] == "admin"
    index.release.set()
    assert done.wait(WAIT)
    reindexer.shutdown(wait_s=WAIT)
    assert index.calls == ["docs"]
    assert len(notes) == 1 and "Reindex of docs finished" in notes[0] and "1 added" in notes[0]
    runs = feedback.runs()
    assert [(r["source"], r["status"], r["added"], r["unchanged"]) for r in runs] == [("docs", "ok", 1, 2)]
    assert reindexer.running() == {}


def test_many_simultaneous_triggers_start_one_run(feedback):
    index = FakeIndex()
    index.release.clear()
    reindexer = Reindexer(index, feedback, SPECS)
    replies: list[str] = []
    barrier = threading.Barrier(8)

    def ask() -> None:
        barrier.wait()
        replies.append(reindexer.trigger("docs"))

    threads = [threading.Thread(target=ask) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sum(r.startswith("Reindex of docs started") for r in replies) == 1
    assert sum(r.endswith("already running.") for r in replies) == 7
    index.release.set()
    reindexer.shutdown(wait_s=WAIT)
    assert index.calls == ["docs"] and len(feedback.runs()) == 1


def test_a_failed_run_is_recorded_and_the_next_one_works(feedback):
    index = FakeIndex()
    index.fail_with = RuntimeError("embedding server exploded")
    reindexer = Reindexer(index, feedback, SPECS)
    notes: list[str] = []
    reindexer.trigger("docs", notes.append)
    reindexer.shutdown(wait_s=WAIT)
    assert "failed" in notes[0] and "embedding server exploded" in notes[0] and "previous index" in notes[0]
    failed = feedback.runs()[0]
    assert failed["status"] == "failed" and failed["error"] == "RuntimeError: embedding server exploded"
    assert failed["finished_at"]

    with pytest.raises(RuntimeError, match="exploded"):  # run_now (the CLI) raises, after recording
        reindexer.run_now("docs")
    assert [r["status"] for r in feedback.runs()] == ["failed", "failed"]

    index.fail_with = None
    result = reindexer.run_now("docs")
    assert result["status"] == "ok" and result["added"] == 1
    assert [r["status"] for r in feedback.runs()] == ["ok", "failed", "failed"]
    assert reindexer.status()["sources"]["docs"]["last_run"]["status"] == "ok"


def test_trigger_all_runs_sources_one_at_a_time(feedback):
    index = FakeIndex()
    reindexer = Reindexer(index, feedback, SPECS)
    notes: list[str] = []
    assert reindexer.trigger(None, notes.append).startswith("Reindex of docs, wiki, manual started")
    reindexer.shutdown(wait_s=WAIT)
    assert index.calls == ["docs", "wiki", "manual"] and index.max_active == 1
    assert len(notes) == 1 and notes[0].count("finished") == 3


def test_unknown_source_names_the_known_ones(feedback):
    reindexer = Reindexer(FakeIndex(), feedback, SPECS)
    with pytest.raises(ValueError, match="'nope'.*docs, wiki, manual"):
        reindexer.trigger("nope")
    with pytest.raises(ValueError, match="'nope'"):
        reindexer.run_now("nope")


def test_a_run_left_running_by_a_killed_process_is_marked_interrupted(feedback):
    feedback.start_run("docs")  # a process died during this run
    Reindexer(FakeIndex(), feedback, SPECS).run_now("docs")
    assert [r["status"] for r in feedback.runs()] == ["ok", "interrupted"]


def test_summary_lists_document_errors():
    text = summary({"source": "docs", "status": "ok", "seconds": 1.0, "added": 2, "errors": ["a.pdf: unreadable"] * 5})
    assert "2 added" in text and "5 failed" in text and "a.pdf: unreadable" in text and "2 more" in text


async def test_scheduler_jobs_and_the_one_scheduler_lock(feedback, tmp_path):
    index = FakeIndex()
    first = Reindexer(index, feedback, SPECS, lock_dir=tmp_path)
    second = Reindexer(index, feedback, SPECS, lock_dir=tmp_path)  # e.g. the `web` process
    first.start(run_unindexed=False)
    second.start(run_unindexed=False)
    try:
        assert first.status()["scheduler"] == "running here"
        assert second.status()["scheduler"] == "in another process"
        nexts = first.next_runs()
        assert isinstance(nexts["docs"], datetime) and isinstance(nexts["wiki"], datetime)
        assert (nexts["wiki"].hour, nexts["wiki"].minute) == (3, 0)
        assert nexts["manual"] is None
        assert second.next_runs() == {"docs": None, "wiki": None, "manual": None}
        status = first.status()["sources"]
        assert status["docs"]["schedule"] == "every 60 min" and status["wiki"]["schedule"] == "cron `0 3 * * *`"
        assert status["manual"]["schedule"] == "manual only"
        # admin triggers work in the process without the schedule
        second.trigger("docs")
        await async_wait_until(lambda: feedback.runs() and feedback.runs()[0]["status"] == "ok", "the run")
    finally:
        await asyncio.to_thread(first.shutdown)  # as `serve` does on SIGTERM: from a worker thread
        second.shutdown(wait_s=WAIT)
    assert first.status()["scheduler"] == "stopped"
    second.start(run_unindexed=False)  # the lock is free once its holder stops
    assert second.status()["scheduler"] == "running here"
    second.shutdown()


async def test_schedule_false_never_schedules(feedback):
    reindexer = Reindexer(FakeIndex(), feedback, SPECS, schedule=False)
    reindexer.start()
    assert reindexer.status()["scheduler"] == "off" and reindexer.next_runs()["docs"] is None


async def test_a_scheduled_run_while_an_admin_run_is_going_is_skipped(feedback, caplog):
    caplog.set_level("INFO", logger="bot.scheduler")
    index = FakeIndex()
    index.release.clear()
    reindexer = Reindexer(index, feedback, {"docs": {"locations": [], "interval_minutes": 0.005, "cron": ""}})
    reindexer.trigger("docs")
    await asyncio.to_thread(index.started.wait, WAIT)
    reindexer.start(run_unindexed=False)  # ticks every 0.3 s while the admin run is held
    await async_wait_until(lambda: "scheduled reindex of docs skipped: already running" in caplog.text, "a skipped tick")
    assert index.calls == ["docs"]
    index.release.set()
    await async_wait_until(lambda: len(index.calls) >= 2, "the next scheduled run")
    reindexer.shutdown(wait_s=WAIT)
    assert index.max_active == 1


# --- a small real corpus: the fake embedder, the real EmbeddedStore and index_source

DOCS = {
    "alpha.md": "# Alpha\n\nThe Alpha project ships every Tuesday from the Berlin office.\n",
    "beta.md": "# Beta\n\nBeta invoices are approved by the finance team within five days.\n",
    "gamma.md": "# Gamma\n\nGamma servers are patched on the first Monday of each month.\n",
}


@pytest.fixture
def corpus(tmp_path):
    folder = tmp_path / "docs"
    folder.mkdir()
    for name, text in DOCS.items():
        (folder / name).write_text(text)
    return folder


@pytest.fixture
def store(tmp_path):
    s = EmbeddedStore(tmp_path / "index.db")
    yield s
    s.close()


def make_index_one(store, embedder, corpus: Path, hooks: dict):
    def index_one(source: str, progress=None) -> dict:  # like bot.app.App.index_one
        def both(done: int, total: int) -> None:  # the reindexer's recorder, then the test's hook
            if progress:
                progress(done, total)
            if hooks.get("progress"):
                hooks["progress"](done, total)
        return index_source(store, embedder, source, [str(corpus)], progress=both)
    return index_one


def served_texts(store) -> list[str]:
    rows = store.db.execute("select c.text from chunks c join members m on m.chunk_id = c.id where m.gen = ?",
                            [store.active_gen()]).fetchall()
    return sorted(r[0] for r in rows)


def doc_names(store) -> set[str]:
    return {Path(d).name for d in store.doc_hashes("docs")}


async def test_scheduled_reindex_picks_up_edits_and_deletions_and_skips_unchanged(store, fake_embedder, corpus, feedback):
    hooks: dict = {}
    reindexer = Reindexer(make_index_one(store, fake_embedder, corpus, hooks), feedback,
                          {"docs": {"locations": [str(corpus)], "interval_minutes": 0.01, "cron": ""}})
    reindexer.start()  # never indexed: runs at once, then every 0.6 s
    try:
        await async_wait_until(lambda: any(r["status"] == "ok" for r in feedback.runs()), "the first run")
        assert doc_names(store) == set(DOCS)
        first = next(r for r in feedback.runs() if r["status"] == "ok")
        assert (first["added"], first["changed"], first["removed"]) == (3, 0, 0)

        encoded_before = fake_embedder.texts_encoded
        edited = corpus / ".alpha.md.tmp"  # replaced atomically: a run never reads a half-written file
        edited.write_text("# Alpha\n\nThe Alpha project ships every Thursday from the Lisbon office.\n")
        edited.replace(corpus / "alpha.md")
        (corpus / "gamma.md").unlink()
        await async_wait_until(lambda: doc_names(store) == {"alpha.md", "beta.md"}
                               and "Lisbon" in " ".join(served_texts(store)), "a run that sees the edit")
        await async_wait_until(lambda: feedback.runs(limit=1)[0]["status"] != "running", "that run to finish")
    finally:
        reindexer.shutdown(wait_s=WAIT)
    later = [r for r in feedback.runs(limit=1000) if r["id"] > first["id"]]  # unchanged runs count 0
    assert all(r["status"] == "ok" for r in later)
    assert sum(r["changed"] for r in later) == 1 and sum(r["removed"] for r in later) == 1
    assert sum(r["added"] for r in later) == 0 and later[-1]["unchanged"] >= 1
    assert doc_names(store) == {"alpha.md", "beta.md"}
    texts = " ".join(served_texts(store))
    assert "Lisbon" in texts and "Berlin" not in texts and "Gamma" not in texts
    alpha_chunks = store.db.execute("select count(*) from chunks where doc_id like '%alpha.md'").fetchone()[0]
    assert fake_embedder.texts_encoded - encoded_before == alpha_chunks  # only the edited document was embedded
    hits = store.bm25_search("when are Gamma servers patched", 5)
    assert hits == []


def test_questions_during_a_reindex_are_answered_from_the_old_index(store, fake_embedder, corpus, feedback):
    hooks: dict = {}
    reindexer = Reindexer(make_index_one(store, fake_embedder, corpus, hooks), feedback, {"docs": {"locations": [str(corpus)]}})
    reindexer.run_now("docs")
    (corpus / "alpha.md").write_text("# Alpha\n\nThe Alpha project ships every Thursday from the Lisbon office.\n")
    (corpus / "gamma.md").unlink()
    (corpus / "delta.md").write_text("# Delta\n\nDelta laptops are replaced every three years.\n")

    held, release = threading.Event(), threading.Event()

    def hold(done: int, total: int) -> None:
        if done == total:  # every document written to the new generation, not yet committed
            held.set()
            assert release.wait(WAIT)

    hooks["progress"] = hold
    reindexer.trigger("docs")
    assert held.wait(WAIT)
    try:
        query = fake_embedder.encode(["Where does the Alpha project ship from?"])[0]
        best = store.chunks([store.dense_search(query, 1)[0][0]])[0]
        assert "Berlin" in best.text  # the complete old index answers
        assert store.bm25_search("Lisbon", 5) == [] and store.bm25_search("laptops", 5) == []
        assert store.bm25_search("Gamma servers patched", 5)
        assert doc_names(store) == set(DOCS) and store.counts()["documents"] == 3
    finally:
        release.set()
    reindexer.shutdown(wait_s=WAIT)
    assert doc_names(store) == {"alpha.md", "beta.md", "delta.md"}
    assert store.bm25_search("Lisbon", 5) and store.bm25_search("laptops", 5)


def test_a_reindex_that_raises_midway_leaves_the_old_index_serving(store, fake_embedder, corpus, feedback):
    hooks: dict = {}
    reindexer = Reindexer(make_index_one(store, fake_embedder, corpus, hooks), feedback, {"docs": {"locations": [str(corpus)]}})
    reindexer.run_now("docs")
    old_hashes = store.doc_hashes("docs")
    (corpus / "alpha.md").write_text("# Alpha\n\nThe Alpha project ships every Thursday from the Lisbon office.\n")
    (corpus / "gamma.md").unlink()

    def explode(done: int, total: int) -> None:
        if done == 1:
            raise OSError("disk unplugged")

    hooks["progress"] = explode
    notes: list[str] = []
    reindexer.trigger("docs", notes.append)
    reindexer.shutdown(wait_s=WAIT)
    assert "failed" in notes[0] and "disk unplugged" in notes[0]
    assert feedback.runs()[0]["status"] == "failed" and "disk unplugged" in feedback.runs()[0]["error"]
    assert store.doc_hashes("docs") == old_hashes
    assert store.bm25_search("Berlin", 5) and store.bm25_search("Gamma", 5) and store.bm25_search("Lisbon", 5) == []

    hooks.pop("progress")
    seen: list[int] = []
    result = reindexer.run_now("docs", progress=lambda done, total: seen.append(done))  # the next run completes
    assert seen == [0, 1, 2]  # 0 first: the total is known before any document is read
    assert (result["status"], result["changed"], result["removed"]) == ("ok", 1, 1)
    assert store.bm25_search("Lisbon", 5) and store.bm25_search("Gamma", 5) == []


def test_a_running_build_records_its_progress_for_status_in_any_process(store, fake_embedder, corpus, feedback, tmp_path,
                                                                        monkeypatch):
    import bot.scheduler
    from bot.admin import format_status

    monkeypatch.setattr(bot.scheduler, "PROGRESS_EVERY_S", 0.0)  # record every document, not once a second
    hooks: dict = {}
    reindexer = Reindexer(make_index_one(store, fake_embedder, corpus, hooks), feedback,
                          {"docs": {"locations": [str(corpus)]}}, lock_dir=tmp_path / "locks", schedule=False)
    other = Reindexer(lambda source: {}, feedback, {"docs": {"locations": [str(corpus)]}},
                      lock_dir=tmp_path / "locks", schedule=False)  # e.g. the `web` process next to the worker
    assert not other.build_in_progress()
    held, release = threading.Event(), threading.Event()

    def hold(done: int, total: int) -> None:
        if done == 2:
            held.set()
            assert release.wait(WAIT)

    hooks["progress"] = hold
    reindexer.trigger("docs")
    assert held.wait(WAIT)
    try:
        run = feedback.runs(limit=1)[0]
        assert (run["status"], run["done"], run["total"]) == ("running", 2, 3)
        assert other.build_in_progress()  # the lock is held by a live build
        info = {"index": {"documents": 0, "chunks": 0}, "store": "embedded", "embedding_model": "m"}
        assert "running now (admin): 2 of 3 documents, " in format_status(lambda: info, reindexer.status())
        assert "running in another process since" in format_status(lambda: info, other.status())
        assert "2 of 3 documents" in format_status(lambda: info, other.status())
    finally:
        release.set()
    reindexer.shutdown(wait_s=WAIT)
    run = feedback.runs(limit=1)[0]
    assert (run["status"], run["done"], run["total"]) == ("ok", 3, 3)
    assert not other.build_in_progress()


def test_a_run_left_running_by_a_killed_process_is_not_a_build_in_progress(feedback, tmp_path):
    reindexer = Reindexer(lambda source: {}, feedback, {"docs": {"locations": ["x"]}}, lock_dir=tmp_path, schedule=False)
    feedback.start_run("docs")  # its process died: the row says running, nobody holds reindex.lock
    (tmp_path / "reindex.lock").touch()
    assert not reindexer.build_in_progress()


def test_progress_line_gives_rate_and_expected_finish():
    from datetime import UTC

    from bot.scheduler import progress_line

    run = {"done": 412, "total": 5183, "started_at": "2026-01-01T19:00:00+00:00",
           "progress_at": "2026-01-01T19:00:48+00:00"}
    now = datetime(2026, 1, 1, 19, 0, 48, tzinfo=UTC)
    assert progress_line(run, now) == "412 of 5,183 documents, 8.6 documents/s, done in about 9 min (19:10 UTC)"
    assert progress_line({**run, "done": 0, "total": 0}, now) == "reading the source"
