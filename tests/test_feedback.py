"""FeedbackStore on real SQLite files: answers, votes (changes, removals, duplicates, out-of-order
events, lock contention), migrations from an older schema, stats on a hand-computed set, export."""

from __future__ import annotations

import io
import json
import sqlite3
import threading
from datetime import UTC, datetime, timedelta

import pytest
import sqlite_utils

from bot.feedback import MIGRATIONS, FeedbackStore, format_stats
from pipeline.types import IDK, Answer, Claim, Evidence, Label, Source, Verdict


def make_answer(question: str, labels: list[Label], links: list[str], idk: bool = False) -> Answer:
    verdicts = tuple(
        Verdict(claim=Claim(text=f"claim {i}", start=0, end=7), label=label, confidence=0.5,
                method="default", evidence=Evidence(text="e", title="T", path="docs/a.md"))
        for i, label in enumerate(labels)
    )
    sources = tuple(Source(id=i + 1, title=link.rsplit("/", 1)[-1], path=link) for i, link in enumerate(links))
    return Answer(question=question, text=IDK if idk else f"answer to {question}", sources=sources,
                  verdicts=verdicts, timings={"retrieve": 12.5}, idk=idk)


@pytest.fixture
def fb(tmp_path):
    store = FeedbackStore(tmp_path / "feedback.db")
    yield store
    store.close()


def vote_rows(fb: FeedbackStore) -> list[tuple]:
    return [tuple(r.values()) for r in fb._read("select message_id, user, value from votes order by message_id, user")]


def test_answer_is_recorded_with_its_details_and_wal(fb):
    answer = make_answer("Who founded Acme?", [Label.SUPPORTED, Label.CONTRADICTED], ["docs/a.md", "docs/b.md"])
    fb.record_answer("slack", "C1", "1700000000.0001", "1700000000.0000", "U1", answer)
    row = fb._read("select * from answers")[0]
    assert (row["platform"], row["channel"], row["thread"], row["asker"]) == ("slack", "C1", "1700000000.0000", "U1")
    assert row["question"] == "Who founded Acme?" and row["answer"] == "answer to Who founded Acme?"
    assert (row["flagged"], row["claims"], row["idk"]) == (1, 2, 0)
    assert [v["label"] for v in json.loads(row["verdicts"])] == ["SUPPORTED", "CONTRADICTED"]
    assert [s["link"] for s in json.loads(row["sources"])] == ["docs/a.md", "docs/b.md"]
    assert json.loads(row["timings"]) == {"retrieve": 12.5}
    assert fb.db.execute("pragma journal_mode").fetchone()[0] == "wal"


def test_recording_the_same_message_twice_keeps_one_row(fb):
    fb.record_answer("slack", "C1", "m1", "", "U1", make_answer("q", [], []))
    first = fb._read("select created_at from answers")[0]["created_at"]
    fb.record_answer("slack", "C1", "m1", "", "U1", make_answer("q", [Label.UNSUPPORTED], []))
    rows = fb._read("select created_at, flagged from answers")
    assert rows == [{"created_at": first, "flagged": 1}]


def test_votes_add_change_and_remove(fb):
    fb.record_answer("slack", "C1", "m1", "", "U1", make_answer("q", [], []))
    assert fb.vote("slack", "m1", "U2", 1) is True
    assert vote_rows(fb) == [("m1", "U2", 1)]
    fb.vote("slack", "m1", "U2", -1)  # changed mind: still one row, latest wins
    assert vote_rows(fb) == [("m1", "U2", -1)]
    fb.vote("slack", "m1", "U2", None)  # reaction removed
    assert vote_rows(fb) == [("m1", "U2", None)]
    assert fb.stats()["votes"] == 0
    with pytest.raises(ValueError, match="2"):
        fb.vote("slack", "m1", "U2", 2)


def test_removing_one_of_two_held_reactions_keeps_the_other_as_the_vote(fb):
    fb.record_answer("slack", "C1", "m1", "", "U1", make_answer("q", [], []))
    fb.vote("slack", "m1", "U2", 1)
    fb.vote("slack", "m1", "U2", -1)  # both held now: the latest added is the vote
    assert vote_rows(fb) == [("m1", "U2", -1)]
    fb.vote("slack", "m1", "U2", None, removed=-1)  # 👎 removed: the 👍 still held counts again
    assert vote_rows(fb) == [("m1", "U2", 1)]
    fb.vote("slack", "m1", "U2", -1)
    fb.vote("slack", "m1", "U2", None, removed=1)  # 👍 removed: the 👎 stays
    assert vote_rows(fb) == [("m1", "U2", -1)]
    fb.vote("slack", "m1", "U2", None, removed=-1)  # nothing held any more
    assert vote_rows(fb) == [("m1", "U2", None)]
    assert fb.stats()["votes"] == 0
    fb.vote("slack", "m1", "U3", None, removed=1)  # a removal of something never seen: no vote
    assert vote_rows(fb)[1] == ("m1", "U3", None)
    with pytest.raises(ValueError, match="removed"):
        fb.vote("slack", "m1", "U2", 1, removed=-1)


def test_repeated_events_are_idempotent(fb):
    fb.record_answer("discord", "ch", "42", "", "u", make_answer("q", [], []))
    at = datetime(2025, 1, 1, 12, tzinfo=UTC)
    for _ in range(3):
        fb.vote("discord", "42", "u7", 1, at=at)
    assert vote_rows(fb) == [("42", "u7", 1)]
    assert fb.stats()["up"] == 1


def test_out_of_order_events_latest_wins(fb):
    fb.record_answer("slack", "C1", "m1", "", "U1", make_answer("q", [], []))
    t0 = datetime(2025, 1, 1, 12, 0, 0, tzinfo=UTC)
    fb.vote("slack", "m1", "U2", None, at=t0 + timedelta(seconds=5))  # removal delivered first
    fb.vote("slack", "m1", "U2", 1, at=t0)  # the older add arrives late: must not resurrect the vote
    assert vote_rows(fb) == [("m1", "U2", None)]
    fb.vote("slack", "m1", "U3", -1, at=t0 + timedelta(seconds=9))
    fb.vote("slack", "m1", "U3", 1, at=t0 + timedelta(seconds=1))  # stale change ignored
    assert vote_rows(fb)[1] == ("m1", "U3", -1)


def test_vote_before_its_answer_is_kept_and_counted_once_recorded(fb):
    assert fb.vote("slack", "m9", "U2", -1) is False  # the reaction raced the answer's database write
    assert fb.stats()["votes"] == 0  # not an answer (yet): not counted
    fb.record_answer("slack", "C1", "m9", "", "U1", make_answer("late", [], ["docs/a.md"]))
    stats = fb.stats()
    assert (stats["votes"], stats["down"]) == (1, 1)
    assert stats["downvoted"][0]["question"] == "late"
    assert fb.vote("slack", "m9", "U3", 1) is True


def test_votes_on_messages_that_never_become_answers_are_pruned(fb):
    old = datetime.now(UTC) - timedelta(days=3)
    fb.vote("slack", "not-an-answer", "U2", 1, at=old)
    fb.vote("slack", "other", "U2", 1)  # any vote on an unknown message prunes orphans over a day old
    assert [r[0] for r in vote_rows(fb)] == ["other"]


def test_no_vote_lost_while_another_process_holds_the_lock(tmp_path):
    path = tmp_path / "feedback.db"
    fb = FeedbackStore(path, busy_timeout=0.01)
    fb.record_answer("slack", "C1", "m1", "", "U1", make_answer("q", [], []))
    other = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    other.execute("BEGIN IMMEDIATE")  # e.g. the web process writing
    release = threading.Timer(0.5, other.execute, ["COMMIT"])
    release.start()
    try:
        assert fb.vote("slack", "m1", "U2", 1) is True  # "database is locked" retried, not lost
    finally:
        release.join()
        other.close()
    assert vote_rows(fb) == [("m1", "U2", 1)]
    fb.close()


def test_no_vote_lost_under_concurrent_writers(tmp_path):
    path = tmp_path / "feedback.db"
    setup = FeedbackStore(path)
    setup.record_answer("slack", "C1", "m1", "", "U1", make_answer("q", [], []))
    stores = [FeedbackStore(path, busy_timeout=0.001) for _ in range(6)]  # one connection each, like processes

    def cast(i: int, store: FeedbackStore) -> None:
        for j in range(20):
            store.vote("slack", "m1", f"U{i}-{j}", 1 if j % 2 else -1)

    threads = [threading.Thread(target=cast, args=(i, s)) for i, s in enumerate(stores)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    stats = setup.stats()
    assert (stats["up"], stats["down"]) == (60, 60)
    for s in [setup, *stores]:
        s.close()


def test_migrates_an_older_schema(tmp_path):
    path = tmp_path / "feedback.db"
    old = sqlite_utils.Database(path)
    MIGRATIONS.apply(old, stop_before="m002_index_runs_and_claim_counts")  # the first release's schema
    assert "index_runs" not in old.table_names()
    old["answers"].insert({
        "platform": "slack", "message_id": "m1", "channel": "C1", "thread": "", "asker": "U1",
        "question": "old question", "answer": "old answer", "idk": 0,
        "verdicts": json.dumps([{"label": "SUPPORTED"}, {"label": "UNSUPPORTED"}]),
        "sources": json.dumps([{"link": "docs/a.md"}]), "timings": "{}", "flagged": 1,
        "created_at": "2025-01-01T00:00:00.000000+00:00",
    })
    old["votes"].insert({"platform": "slack", "message_id": "m1", "user": "U2", "value": -1,
                         "updated_at": "2025-01-01T00:01:00.000000+00:00"})
    old.conn.close()

    fb = FeedbackStore(path)
    stats = fb.stats()
    assert (stats["answers"], stats["down"], stats["claims"], stats["flagged"]) == (1, 1, 2, 1)  # claims backfilled
    run = fb.start_run("docs")
    fb.finish_run(run, {"added": 1})
    assert fb.runs()[0]["status"] == "ok"
    assert [m.name for m in MIGRATIONS.applied(fb.db)] == [m.name for m in MIGRATIONS._migrations]
    fb.close()
    FeedbackStore(path).close()  # reopening applies nothing twice


@pytest.fixture
def known_set(fb):
    """Four answers with votes; the expected figures below are computed by hand."""
    S, U, C = Label.SUPPORTED, Label.UNCERTAIN, Label.CONTRADICTED
    fb.record_answer("slack", "C1", "a1", "", "U1", make_answer("When was Acme founded?", [S, S, C], ["docs/a.md", "docs/b.md"]))
    fb.record_answer("slack", "C1", "a2", "", "U1", make_answer("Who runs support?", [U, C], ["docs/a.md"]))
    fb.record_answer("discord", "ch", "a3", "", "u1", make_answer("What is the wifi password?", [], [], idk=True))
    fb.record_answer("discord", "ch", "a4", "", "u1", make_answer("Where is the office?", [S], ["docs/c.md"]))
    for platform, msg, user, value in [
        ("slack", "a1", "U1", 1), ("slack", "a1", "U2", -1),
        ("slack", "a2", "U1", -1), ("slack", "a2", "U3", -1),
        ("discord", "a3", "u1", 1), ("discord", "a3", "u1", None),
        ("discord", "a4", "u4", 1), ("discord", "a4", "u5", 1),
    ]:
        fb.vote(platform, msg, user, value)
    return fb


def test_stats_on_a_known_set(known_set):
    s = known_set.stats()
    assert (s["answers"], s["votes"], s["up"], s["down"]) == (4, 6, 3, 3)
    assert s["helpful_rate"] == pytest.approx(0.5)
    assert (s["idk"], s["idk_rate"]) == (1, pytest.approx(0.25))
    assert (s["claims"], s["flagged"]) == (6, 3)
    assert s["flagged_per_answer"] == pytest.approx(1.0)  # 3 flagged over the 3 answers that were not IDK
    assert [(a["message_id"], a["down"], a["up"]) for a in s["downvoted"]] == [("a2", 2, 0), ("a1", 1, 1)]
    assert s["downvoted"][0]["question"] == "Who runs support?"
    assert s["top_sources"][0] == ("docs/a.md", 2)
    assert sorted(s["top_sources"][1:]) == [("docs/b.md", 1), ("docs/c.md", 1)]

    text = format_stats(s)
    assert "4 answers" in text and "helpful rate 50%" in text and "Who runs support?" in text
    assert "docs/a.md (2)" in text and "1.00" in text


def test_stats_since_counts_only_recent_answers(known_set):
    old = (datetime.now(UTC) - timedelta(days=10)).isoformat(timespec="microseconds")
    known_set._write(lambda db: db.execute("update answers set created_at = ? where message_id in ('a1', 'a2')", [old]))
    s = known_set.stats(since=datetime.now(UTC) - timedelta(days=1))
    assert (s["answers"], s["up"], s["down"], s["helpful_rate"]) == (2, 2, 0, 1.0)
    assert s["idk_rate"] == pytest.approx(0.5) and s["downvoted"] == []
    assert "since" in format_stats(s)


def test_stats_when_empty(fb):
    s = fb.stats()
    assert (s["answers"], s["helpful_rate"], s["idk_rate"], s["flagged_per_answer"]) == (0, None, None, None)
    assert "0 answers" in format_stats(s) and "n/a" in format_stats(s)


def test_export_golden_writes_downvoted_answers(known_set, tmp_path):
    path = tmp_path / "golden.jsonl"
    assert known_set.export_golden(path) == 2
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    assert [r["question"] for r in rows] == ["When was Acme founded?", "Who runs support?"]
    assert rows[0]["relevant"] == ["docs/a.md", "docs/b.md"]
    assert rows[0]["votes"] == {"up": 1, "down": 1} and rows[1]["votes"] == {"up": 0, "down": 2}
    assert rows[1]["rejected_answer"] == "answer to Who runs support?"
    assert "expected_answer" not in rows[0]  # a reviewer writes it

    buffer = io.StringIO()
    assert known_set.export_golden(buffer, since=datetime.now(UTC) + timedelta(days=1)) == 0
    assert buffer.getvalue() == ""


def test_index_runs_are_recorded(fb):
    first = fb.start_run("docs")
    assert fb.runs()[0]["status"] == "running"
    fb.finish_run(first, {"added": 2, "changed": 1, "unchanged": 5, "removed": 1, "skipped": 0, "errors": ["bad.pdf: unreadable"]})
    second = fb.start_run("docs")
    fb.finish_run(second, {}, error="RuntimeError: disk full")
    third = fb.start_run("wiki")
    runs = fb.runs()
    assert [r["id"] for r in runs] == [third, second, first]
    assert runs[1]["status"] == "failed" and runs[1]["error"] == "RuntimeError: disk full"
    assert {k: runs[2][k] for k in ("added", "changed", "unchanged", "removed", "failed", "status")} == {
        "added": 2, "changed": 1, "unchanged": 5, "removed": 1, "failed": 1, "status": "ok"}
    assert runs[2]["finished_at"] >= runs[2]["started_at"]
    assert [r["id"] for r in fb.runs(source="docs", limit=1)] == [second]
    assert fb.interrupt_runs() == 1
    assert fb.runs()[0]["status"] == "interrupted"
