"""`ravbot serve`: the configured platforms and the reindex scheduler in one asyncio process."""

from __future__ import annotations

import asyncio
import logging
import signal
import sys
import threading
from collections.abc import Awaitable, Callable

from bot.app import App, build
from config.settings import Settings

log = logging.getLogger(__name__)

HOW_TO_CONFIGURE = (
    "No chat platform is configured. Set SLACK_BOT_TOKEN and SLACK_APP_TOKEN (Slack Socket Mode), "
    "or SLACK_BOT_TOKEN and SLACK_SIGNING_SECRET (Slack HTTP mode), and/or DISCORD_TOKEN; "
    "see README.md. Running the reindex scheduler only."
)
ROLES = ("all", "worker", "web")


def platforms(settings: Settings, role: str = "all") -> dict[str, Callable[[App, Settings], Awaitable[None]]]:
    """The platform coroutines this process runs. `worker`: Slack Socket Mode and Discord; `web`:
    Slack HTTP mode; `all`: whatever is configured. A platform without its tokens is skipped."""
    if role not in ROLES:
        raise ValueError(f"unknown role {role!r}; expected one of {', '.join(ROLES)}")
    from adapters.slack import slack_mode

    chosen: dict[str, Callable[[App, Settings], Awaitable[None]]] = {}
    mode = slack_mode(settings)
    if mode and (role == "all" or (role == "worker") == (mode == "socket")):
        from adapters.slack import serve_slack

        chosen[f"slack ({mode} mode)"] = serve_slack
    elif settings.slack_bot_token and not mode:
        log.warning("Slack skipped: SLACK_BOT_TOKEN is set but neither SLACK_APP_TOKEN nor SLACK_SIGNING_SECRET is")
    if settings.discord_token and role in ("all", "worker"):
        from adapters.discord import serve_discord

        chosen["discord"] = serve_discord
    return chosen


async def serve(settings: Settings, role: str = "all", stop: asyncio.Event | None = None, *,
                app: App | None = None) -> int:
    """Run until SIGTERM/SIGINT (or `stop` is set); returns the process exit code.

    `app`: a ready Core (from `bot.app.build`, e.g. with injected parts) to serve instead of building
    one from `settings`; its caller chose whether it schedules reindexes and closes it afterwards."""
    stop = stop or asyncio.Event()
    chosen = platforms(settings, role)
    owned = app is None
    if app is None:
        app = build(settings, run_scheduler=role in ("all", "worker"))
    loop = asyncio.get_running_loop()
    if threading.current_thread() is threading.main_thread() and sys.platform != "win32":
        for sig in (signal.SIGTERM, signal.SIGINT):  # signal handlers only exist in the main thread
            loop.add_signal_handler(sig, stop.set)
    if not chosen:
        log.warning(HOW_TO_CONFIGURE)
    try:  # open the index once, before the first build and the first questions open it from their threads:
        await asyncio.to_thread(app.parts.store.counts)  # on a fresh data dir two threads creating it race
    except Exception as e:  # noqa: BLE001 - a store that is down is reported per question, never fatal here
        log.warning("the index is not reachable at start: %s", e)
    app.reindexer.start()
    tasks = {asyncio.create_task(run(app, settings), name=name): name for name, run in chosen.items()}
    for name in tasks.values():
        log.info("serving %s", name)
    failed = 0
    waiter = asyncio.create_task(stop.wait())
    pending = set(tasks) | {waiter}
    try:
        while not stop.is_set():
            done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
            for task in done - {waiter}:
                failed += 1
                error = task.exception() if not task.cancelled() else None
                log.error("%s stopped: %s", tasks[task], error or "finished")
            if tasks and failed == len(tasks):
                log.error("every platform stopped; exiting")
                break
    finally:
        log.info("shutting down")
        for task in pending:
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)
        await asyncio.to_thread(app.reindexer.shutdown, 10.0)
        if owned:
            app.close()
    return 1 if tasks and failed == len(tasks) else 0


def run(settings: Settings, role: str = "all") -> int:
    return asyncio.run(serve(settings, role))
