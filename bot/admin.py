"""Admin commands, the same on every platform: `reindex [source]`, `status`, `stats [days]`, `help`.

Adapters pass the command line and whether the user is authorised (`is_authorised`, checked
here from settings, not only by platform permissions); the reply is plain text to post.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from datetime import UTC, datetime, timedelta
from typing import Any

from bot.feedback import FeedbackStore, format_stats
from bot.scheduler import Reindexer, progress_line

HELP = """ravbot admin commands:
- `reindex [source]`: reindex one source now (all sources without a name); I report when it is done.
- `status`: index size, model and store in use, last and next reindex runs, progress of a running one.
- `stats [days]`: answers, votes, helpful rate, 👎 answers, flagged claims, "I don't know" rate, top sources.
- `help`: this list."""

REFUSAL = ("Sorry, only ravbot admins can run admin commands. An admin can add you to `slack_admins`, "
           "`discord_admin_users` or `discord_admin_roles` in ravbot's settings.")


def is_authorised(platform: str, user: str, roles: Iterable[str], is_platform_admin: bool, settings: Any) -> bool:
    """Whether `user` may run admin commands: platform admins (Slack workspace admins, Discord members
    with Manage Server) and the users/roles listed in settings. The local CLI is always allowed."""
    if platform == "cli" or is_platform_admin:
        return True
    if platform == "slack":
        return str(user) in settings.list("slack_admins")
    if platform == "discord":
        return (str(user) in settings.list("discord_admin_users")
                or bool({str(r) for r in roles} & set(settings.list("discord_admin_roles"))))
    return False


def handle_admin(command_line: str, *, authorised: bool, reindexer: Reindexer, feedback: FeedbackStore,
                 status_info: Callable[[], dict[str, Any]], notify: Callable[[str], None] | None = None) -> str:
    """Run one admin command line and return the reply. `status_info()` gives the index and backends:
    {"index": {"documents", "chunks"} (or {"error"}), "store", "embedding_model", ...: other scalar
    values are listed too}; `notify` receives the reindex outcome later."""
    words = command_line.strip().lstrip("/").split()
    if words and words[0].lower() in ("admin", "ravbot"):
        words = words[1:]
    command, args = (words[0].lower(), words[1:]) if words else ("help", [])
    if command == "help":
        return HELP
    if not authorised:
        return REFUSAL
    if command == "reindex":
        return _reindex(reindexer, args, notify)
    if command == "status":
        return format_status(status_info, reindexer.status())
    if command == "stats":
        return _stats(feedback, args)
    return f"Unknown admin command `{command}`.\n{HELP}"


def _reindex(reindexer: Reindexer, args: list[str], notify: Callable[[str], None] | None) -> str:
    source = args[0] if args else None
    if source is not None and source not in reindexer.specs:
        known = ", ".join(f"`{name}`" for name in reindexer.specs) or "none are configured"
        return f"There is no source named `{source}`. Known sources: {known}."
    return reindexer.trigger(source, notify)


def _stats(feedback: FeedbackStore, args: list[str]) -> str:
    since = None
    if args:
        try:
            days = float(args[0].rstrip("d"))
        except ValueError:
            return f"`stats` takes a number of days, e.g. `stats 7`; `{args[0]}` is not one."
        since = datetime.now(UTC) - timedelta(days=days)
    return format_stats(feedback.stats(since=since))


def format_status(status_info: Callable[[], dict[str, Any]], reindex: dict[str, Any]) -> str:
    """Index, backends and reindex runs as a short text."""
    try:
        info = status_info()
        counts = info.get("index") if isinstance(info.get("index"), dict) else info
        if counts.get("error"):
            raise RuntimeError(counts["error"])
        model = info.get("model") or info.get("embedding_model") or "?"
        index = (f"Index: {counts.get('documents', '?')} documents, {counts.get('chunks', '?')} chunks; "
                 f"store `{info.get('store', '?')}`, embedding model `{model}`")
        shown = {"index", "documents", "chunks", "store", "model", "embedding_model", "error"}
        extra = [f"{k} `{v}`" for k, v in info.items() if k not in shown and not isinstance(v, dict | list)]
        index += ("; " + "; ".join(extra) if extra else "") + "."
    except Exception as e:  # the store may be down: say so, still show the runs
        index = f"Index: unavailable ({type(e).__name__}: {e})."
    lines = [index, f"Reindex scheduler: {reindex['scheduler']}."]
    for name, s in reindex["sources"].items():
        parts = [f"`{name}` ({s['schedule']})"]
        last = s["last_run"]
        if s["running"]:
            building = f": {progress_line(last)}" if last and last["status"] == "running" else ""
            parts.append(f"running now ({s['running']}){building}")
        if last:
            when = _when(last["finished_at"] or last["started_at"])
            if last["status"] == "ok":
                parts.append(f"last run ok {when}: {last['added']} added, {last['changed']} changed, "
                             f"{last['removed']} removed, {last['failed']} failed")
            elif last["status"] == "running":
                if not s["running"]:
                    parts.append(f"running in another process since {when}: {progress_line(last)}")
            else:
                parts.append(f"last run {last['status']} {when}: {last['error']}")
        else:
            parts.append("never run")
        if s["next_run"]:
            parts.append(f"next {_when(s['next_run'])}")
        lines.append("- " + "; ".join(parts))
    return "\n".join(lines)


def _when(value: str | datetime) -> str:
    when = datetime.fromisoformat(value) if isinstance(value, str) else value
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return when.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC")
