"""`Core`: the one route from every platform into ravbot, implemented by `bot.app.Core`.

Adapters receive a Core and never build pipelines, stores or settings themselves, so Slack,
Discord and the CLI reach the same code in the same way.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from pipeline.types import Answer, Question


class Core(Protocol):
    def ask(self, question: Question) -> Answer:
        """Answer and verify a question. Blocking (seconds): adapters call it via `asyncio.to_thread`
        or `run_in_executor`. Never raises for bad input or a down LLM/store: the Answer says so
        (`answer.error` set when nothing could be answered)."""

    async def ask_async(self, question: Question) -> Answer:
        """`ask` on the Core's bounded pipeline pool (settings.workers threads), awaited without
        blocking the event loop. Adapters use this, never the default executor: a burst of
        questions then queues here and cannot starve the quick calls (posting, votes, acks)."""

    def check_question(self, question: Question) -> str | None:
        """A user-facing refusal ("please wait...", "question too long") or None if it may be asked.
        Cheap; call it before showing progress. Records the ask for rate limiting."""

    def record_answer(self, platform: str, channel: str, message_id: str, thread: str,
                      asker: str, answer: Answer) -> None:
        """Remember a posted answer so reactions on `message_id` become votes."""

    def vote(self, platform: str, message_id: str, user: str, value: int | None) -> bool:
        """Record a vote (+1 / -1) or retract it (None). False if `message_id` is not a ravbot answer."""

    def admin(self, platform: str, user: str, roles: tuple[str, ...], command: str,
              is_platform_admin: bool = False, notify: Callable[[str], None] | None = None) -> str:
        """Run an admin command line (`reindex [source]`, `status`, `stats`, `help`) and return the
        text to show at once. Authorisation is checked here; refusals come back as text. A reindex
        runs in the background and calls `notify(text)` (from a worker thread) when it ends."""

    def is_admin(self, platform: str, user: str, roles: tuple[str, ...] = (),
                 is_platform_admin: bool = False) -> bool: ...
