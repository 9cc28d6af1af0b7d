"""Load figures: questions/minute sustained, p50/p95 ack time and time to answer, and memory, through
the real Slack adapter (HTTP mode, signed requests) and the real Discord client, on loopback.

The Core is the real default one (extractive answers, claim verification on, Wikipedia off) over the
bundled `docs/` folder. Bounded: `--slack N` + `--discord M` questions, sent in bursts of `--burst`,
and a hard `--max-seconds`. Prints the figures; docs/reliability.md quotes them.

    .venv/bin/python benchmarks/load.py                  # 40 Slack + 20 Discord questions
    .venv/bin/python benchmarks/load.py --slack 10 --discord 0
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import os
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlencode

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import aiohttp  # noqa: E402
from slack_sdk.signature import SignatureVerifier  # noqa: E402

from adapters.discord import build_discord_client  # noqa: E402
from adapters.slack import build_slack_app, start_http  # noqa: E402
from bot.app import build  # noqa: E402
from config.settings import PROJECT_ROOT, load_settings  # noqa: E402
from tests.fakes.discord_api import BOT_ID, CHANNEL_ID, FakeDiscord  # noqa: E402
from tests.fakes.slack_api import TEAM_ID, FakeSlackAPI  # noqa: E402

SECRET = "bench-signing-secret"
QUESTIONS = ["How do I trigger a reindex?", "How are claims verified?", "What does the Slack bot need to run?",
             "How do I add a source?", "Where is feedback stored?", "How does Discord mention handling work?",
             "What happens when the LLM is down?", "How do I run ravbot in Socket Mode?"]


def rss_mib() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def pct(values: list[float], q: float) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1] if len(values) > 1 else values[0]


async def slack_load(core, n: int, burst: int, deadline: float) -> dict:
    with FakeSlackAPI(_ts=itertools.count(1)) as api:
        runner = await start_http(build_slack_app(core, core.settings.replace(slack_api_url=api.api_url)), "127.0.0.1", 0)
        url = f"http://127.0.0.1:{runner.addresses[0][1]}/slack/events"
        sent: dict[int, float] = {}
        acks: list[float] = []
        answered: dict[int, float] = {}

        async def ask(i: int, session: aiohttp.ClientSession) -> None:
            body = urlencode({"team_id": TEAM_ID, "channel_id": "C1", "user_id": f"U{i}", "command": "/ask",
                              "text": f"{QUESTIONS[i % len(QUESTIONS)]} #{i}", "response_url": api.response_url(str(i)),
                              "trigger_id": "t", "api_app_id": "A1", "token": "x"})
            ts = str(int(time.time()))
            headers = {"X-Slack-Request-Timestamp": ts, "Content-Type": "application/x-www-form-urlencoded",
                       "X-Slack-Signature": SignatureVerifier(SECRET).generate_signature(timestamp=ts, body=body)}
            sent[i] = time.monotonic()
            async with session.post(url, data=body.encode(), headers=headers) as r:
                assert r.status == 200, r.status
            acks.append(time.monotonic() - sent[i])

        async def watch() -> None:
            while len(answered) < n and time.monotonic() < deadline:
                calls = api.of("chat.postMessage")
                parents = {c.response["ts"]: int(c.body["text"].rsplit("#", 1)[1]) for c in calls if not c.body.get("thread_ts")}
                for c in calls:
                    i = parents.get(c.body.get("thread_ts"))
                    if i is not None and i not in answered:
                        answered[i] = time.monotonic()
                await asyncio.sleep(0.02)

        start = time.monotonic()
        watcher = asyncio.create_task(watch())
        async with aiohttp.ClientSession() as session:
            for first in range(0, n, burst):
                await asyncio.gather(*(ask(i, session) for i in range(first, min(n, first + burst))))
                while len(answered) < first and time.monotonic() < deadline:  # keep about two bursts in flight
                    await asyncio.sleep(0.05)
        await watcher
        elapsed = time.monotonic() - start
        await runner.cleanup()
        threaded = [c for c in api.of("chat.postMessage") if c.body.get("thread_ts")]
    times = [answered[i] - sent[i] for i in answered]
    return {"questions": n, "answered": len(answered), "posted_answers": len(threaded), "seconds": elapsed,
            "per_minute": 60 * len(answered) / elapsed, "ack_p50": pct(acks, 50), "ack_p95": pct(acks, 95),
            "ack_max": max(acks), "answer_p50": pct(times, 50) if times else None,
            "answer_p95": pct(times, 95) if times else None}


async def discord_load(core, n: int, burst: int, deadline: float) -> dict:
    fake = await FakeDiscord().start()
    client = build_discord_client(core, core.settings.replace(discord_api_url=fake.api_url), guild_ready_timeout=0.05)
    task = asyncio.create_task(client.start("bench-token"))
    await fake.wait_identified()
    await asyncio.wait_for(client.wait_until_ready(), 20)
    dm = CHANNEL_ID + 9
    sent: dict[int, float] = {}
    answered: dict[int, float] = {}
    start = time.monotonic()
    for first in range(0, n, burst):
        for i in range(first, min(n, first + burst)):
            payload = fake.message_payload(f"<@{BOT_ID}> {QUESTIONS[i % len(QUESTIONS)]}", mentions_bot=True,
                                           guild=False, channel_id=dm, author_id=1000 + i)
            sent[int(payload["id"])] = time.monotonic()
            await fake.dispatch("MESSAGE_CREATE", payload)
        while len(answered) < min(n, first + burst) - burst and time.monotonic() < deadline or \
                (first + burst >= n and len(answered) < n and time.monotonic() < deadline):
            for r in fake.find("POST", f"/channels/{dm}/messages"):
                ref = int((r.body.get("message_reference") or {}).get("message_id") or 0)
                if ref in sent and ref not in answered:
                    answered[ref] = time.monotonic()
            await asyncio.sleep(0.02)
            if first + burst < n and len(answered) >= first:
                break
    elapsed = time.monotonic() - start
    await client.close()
    await asyncio.wait_for(task, 10)
    await fake.stop()
    times = [answered[i] - sent[i] for i in answered]
    return {"questions": n, "answered": len(answered), "seconds": elapsed, "per_minute": 60 * len(answered) / elapsed,
            "answer_p50": pct(times, 50) if times else None, "answer_p95": pct(times, 95) if times else None}


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--slack", type=int, default=40)
    parser.add_argument("--discord", type=int, default=20)
    parser.add_argument("--burst", type=int, default=10)
    parser.add_argument("--max-seconds", type=float, default=600)
    args = parser.parse_args()
    data = tempfile.mkdtemp(prefix="ravbot-load-")
    settings = load_settings(env={}, data_dir=data, sources=f"docs={PROJECT_ROOT / 'docs'}", wikipedia="off",
                             rate_limit_per_minute=0, slack_bot_token="xoxb-bench", slack_signing_secret=SECRET)
    core = build(settings, run_scheduler=False)
    indexed = core.index_one("docs")
    core.ask(__import__("pipeline.types", fromlist=["Question"]).Question(text="warm up: how do I reindex?"))
    rss_before = rss_mib()
    deadline = time.monotonic() + args.max_seconds
    print(f"corpus: {indexed['added'] + indexed['unchanged']} documents of docs/; workers={settings.workers}; "
          f"cpus={os.cpu_count()}; RSS after warm-up {rss_before:.0f} MiB")
    if args.slack:
        s = await slack_load(core, args.slack, args.burst, deadline)
        print(f"slack  : {s['answered']}/{s['questions']} answered ({s['posted_answers']} answers posted) in "
              f"{s['seconds']:.1f} s = {s['per_minute']:.1f} questions/min; ack p50 {s['ack_p50'] * 1000:.0f} ms, "
              f"p95 {s['ack_p95'] * 1000:.0f} ms, max {s['ack_max'] * 1000:.0f} ms; time to answer "
              f"p50 {s['answer_p50']:.1f} s, p95 {s['answer_p95']:.1f} s")
    if args.discord:
        d = await discord_load(core, args.discord, args.burst, deadline)
        print(f"discord: {d['answered']}/{d['questions']} answered in {d['seconds']:.1f} s = {d['per_minute']:.1f} "
              f"questions/min; time to answer p50 {d['answer_p50']:.1f} s, p95 {d['answer_p95']:.1f} s")
    print(f"memory : RSS {rss_before:.0f} MiB after warm-up, {rss_mib():.0f} MiB after the load; "
          f"peak {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")
    core.close()


if __name__ == "__main__":
    asyncio.run(main())
