"""Soak: does memory level off? Thousands of questions through the real Slack adapter (HTTP mode,
signed `/ask` commands and mentions, 👍/👎 reactions on the answers) with a reindex every few
minutes, RSS sampled every 100 questions, and the growth over the last half reported.

The Core is the real default one (extractive answers, claim verification on, Wikipedia off) over a
copy of the bundled `docs/` folder; before each reindex one document is edited, so every reindex
embeds and commits a new generation. Askers rotate over many user ids (as a workspace has), and
question texts vary. Bounded by `--questions` and `--minutes`, whichever comes first.

    .venv/bin/python benchmarks/soak.py                                 # 2,000 questions, ≤ 30 min
    .venv/bin/python benchmarks/soak.py --questions 300 --minutes 5     # a quick look

Prints one line per sample (questions, minutes, RSS MiB, threads) and then: RSS at start, after
warm-up (the first 20% of the questions), at the end; growth over the last half; questions/minute.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path
from urllib.parse import urlencode

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import aiohttp  # noqa: E402
from slack_sdk.signature import SignatureVerifier  # noqa: E402

from adapters.slack import build_slack_app, start_http  # noqa: E402
from bot.app import build  # noqa: E402
from config.settings import PROJECT_ROOT, load_settings  # noqa: E402
from pipeline.types import Question  # noqa: E402
from tests.fakes.slack_api import BOT_USER_ID, TEAM_ID, FakeSlackAPI  # noqa: E402

SECRET = "soak-signing-secret"
QUESTIONS = ["How do I trigger a reindex?", "How are claims verified?", "What does the Slack bot need to run?",
             "How do I add a source?", "Where is feedback stored?", "How does Discord mention handling work?",
             "What happens when the LLM is down?", "How do I run ravbot in Socket Mode?",
             "Which settings control the relevance floor?", "How are votes counted?",
             "How do I use Weaviate instead of the embedded store?", "What does the status command show?"]
SAMPLE_EVERY = 100


def rss_mib() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def sign(body: str) -> dict[str, str]:
    ts = str(int(time.time()))
    return {"X-Slack-Request-Timestamp": ts,
            "X-Slack-Signature": SignatureVerifier(SECRET).generate_signature(timestamp=ts, body=body)}


async def post(session: aiohttp.ClientSession, url: str, body: str, content_type: str) -> None:
    async with session.post(url, data=body.encode(), headers={"Content-Type": content_type, **sign(body)}) as r:
        if r.status != 200:
            raise RuntimeError(f"Slack handler answered {r.status}: {await r.text()}")


def question_text(i: int) -> str:
    """Varied texts, as real users write them (a finite vocabulary, not random strings)."""
    base = QUESTIONS[i % len(QUESTIONS)]
    prefix = ("", "Quick one: ", "Hi! ", "Does anyone know: ")[(i // len(QUESTIONS)) % 4]
    suffix = ("", " Thanks!", " (asking for the team)")[(i // 48) % 3]
    return prefix + base + suffix


async def soak(args: argparse.Namespace) -> dict:
    root = Path(tempfile.mkdtemp(prefix="ravbot-soak-"))
    docs = root / "docs"
    shutil.copytree(PROJECT_ROOT / "docs", docs)
    settings = load_settings(env={}, data_dir=str(root / "data"), sources=f"docs={docs}", wikipedia="off",
                             reindex_interval_minutes=0, rate_limit_per_minute=args.rate_limit,
                             workers=args.workers, verify=args.verify_method != "off",
                             verify_method=args.verify_method if args.verify_method != "off" else "default")
    core = build(settings, run_scheduler=False)
    core.index_one("docs")
    core.ask(Question(text="warm up: how do I reindex?"))
    start_rss = rss_mib()
    samples: list[tuple[int, float, float, int]] = [(0, 0.0, start_rss, threading.active_count())]
    t0 = time.monotonic()
    deadline = t0 + args.minutes * 60
    answered = 0
    reindexes = 0
    with FakeSlackAPI(_ts=itertools.count(1)) as api:
        runner = await start_http(build_slack_app(core, settings.replace(
            slack_bot_token="xoxb-soak", slack_signing_secret=SECRET, slack_api_url=api.api_url)), "127.0.0.1", 0)
        url = f"http://127.0.0.1:{runner.addresses[0][1]}/slack/events"
        next_reindex = t0 + args.reindex_every

        async def ask(i: int, session: aiohttp.ClientSession) -> None:
            user = f"U{i % args.users:05d}"
            if i % 2:
                ts = f"1700000000.{i:06d}"
                event = {"type": "app_mention", "user": user, "text": f"<@{BOT_USER_ID}> {question_text(i)}",
                         "ts": ts, "channel": "C1", "event_ts": ts}
                body = {"token": "t", "team_id": TEAM_ID, "api_app_id": "A1", "type": "event_callback",
                        "event": event, "event_id": f"Ev{i:07d}", "event_time": int(time.time())}
                await post(session, url, json.dumps(body), "application/json")
            else:
                form = {"token": "t", "team_id": TEAM_ID, "channel_id": "C1", "user_id": user, "command": "/ask",
                        "text": question_text(i), "api_app_id": "A1", "response_url": api.response_url(user),
                        "trigger_id": "1.2"}
                await post(session, url, urlencode(form), "application/x-www-form-urlencoded")

        def answers() -> list:
            return [c for c in api.of("chat.postMessage") if c.body.get("thread_ts")]

        async def vote(n: int, answer, session: aiohttp.ClientSession) -> None:
            reaction = {"type": "reaction_added", "user": f"U{n % args.users:05d}", "reaction": "+1" if n % 2 else "-1",
                        "item_user": BOT_USER_ID, "event_ts": "1700000500.000100",
                        "item": {"type": "message", "channel": "C1", "ts": answer.response["ts"]}}
            body = {"token": "t", "team_id": TEAM_ID, "api_app_id": "A1", "type": "event_callback",
                    "event": reaction, "event_id": f"Er{n:07d}", "event_time": int(time.time())}
            await post(session, url, json.dumps(body), "application/json")

        async with aiohttp.ClientSession() as session:
            i = 0
            while i < args.questions and time.monotonic() < deadline:
                batch = range(i, min(i + SAMPLE_EVERY, args.questions))
                for lo in range(batch.start, batch.stop, args.concurrency):  # a burst, then wait for its answers
                    if time.monotonic() >= deadline:
                        batch = range(batch.start, lo)
                        break
                    burst = range(lo, min(lo + args.concurrency, batch.stop))
                    await asyncio.gather(*(ask(j, session) for j in burst))
                    waited = time.monotonic()
                    while len(answers()) < burst.stop - batch.start:
                        if time.monotonic() - waited > 300:
                            raise RuntimeError(f"no answer to questions {burst.start}-{burst.stop - 1} in 300 s")
                        await asyncio.sleep(0.01)
                answered += len(batch)
                await asyncio.gather(*(vote(batch.start + k, a, session) for k, a in enumerate(answers()) if k % 5 == 0))
                await asyncio.sleep(0.2)
                i = batch.stop
                with api._lock:  # the fake's own record of calls is not ravbot's memory
                    api.calls.clear()
                if time.monotonic() >= next_reindex:
                    files = sorted(docs.glob("*.md"))
                    doc = files[reindexes % len(files)]
                    doc.write_text(doc.read_text() + f"\n\nSoak edit {reindexes}.\n")
                    core.reindexer.trigger("docs")  # in the background: questions keep coming
                    reindexes += 1
                    next_reindex = time.monotonic() + args.reindex_every
                minutes = (time.monotonic() - t0) / 60
                samples.append((i, minutes, rss_mib(), threading.active_count()))
                print(f"{i:6d} questions  {minutes:6.1f} min  RSS {samples[-1][2]:7.1f} MiB  "
                      f"threads {samples[-1][3]:3d}  reindexes {reindexes}", flush=True)
        await runner.cleanup()
    core.close()
    shutil.rmtree(root, ignore_errors=True)
    elapsed = (time.monotonic() - t0) / 60
    warm = next(s for s in samples if s[0] >= max(SAMPLE_EVERY, samples[-1][0] // 5))  # warm-up: the first 20%
    half = next(s for s in samples if s[0] >= samples[-1][0] // 2)
    end = samples[-1]
    return {"questions": answered, "minutes": round(elapsed, 2), "questions_per_minute": round(answered / elapsed, 1),
            "reindexes": reindexes, "rss_start_mib": round(start_rss, 1),
            "rss_after_warmup_mib": round(warm[2], 1), "warmup_questions": warm[0],
            "rss_half_mib": round(half[2], 1), "rss_end_mib": round(end[2], 1),
            "growth_last_half_pct": round((end[2] - half[2]) / half[2] * 100, 2),
            "threads_end": end[3], "samples": [(q, round(m, 2), round(r, 1), t) for q, m, r, t in samples]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--questions", type=int, default=2000)
    parser.add_argument("--minutes", type=float, default=30.0, help="stop after this long whatever the count")
    parser.add_argument("--reindex-every", type=float, default=180.0, help="seconds between reindexes")
    parser.add_argument("--concurrency", type=int, default=4, help="questions sent at once (a burst)")
    parser.add_argument("--users", type=int, default=500, help="distinct asker ids to rotate over")
    parser.add_argument("--workers", type=int, default=2, help="the Core's pipeline threads")
    parser.add_argument("--rate-limit", type=int, default=1000, help="rate_limit_per_minute (per user)")
    parser.add_argument("--verify-method", default="default",
                        help="claim verifier (`default`, `cosine`, ...), or `off`: a cheaper question when CPU is short")
    parser.add_argument("--json", dest="json_path", help="also write the figures here")
    args = parser.parse_args()
    result = asyncio.run(soak(args))
    print(json.dumps({k: v for k, v in result.items() if k != "samples"}, indent=2))
    if args.json_path:
        Path(args.json_path).write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
