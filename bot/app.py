"""`build(settings)`: pick the backends once and wire them into `App`, the Core every adapter talks to."""

from __future__ import annotations

import asyncio
import logging
import threading
import time
import uuid
from collections import defaultdict, deque
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from bot.admin import handle_admin, is_authorised
from bot.feedback import FeedbackStore
from bot.scheduler import Reindexer
from config.settings import PROJECT_ROOT, SETTINGS, Settings
from pipeline.answer import Parts, answer_question, clean_question, question_problem
from pipeline.embed import load_embedder
from pipeline.index import index_source
from pipeline.llm import build_llm
from pipeline.store import EmbeddedStore, Store
from pipeline.types import Answer, Question
from pipeline.wiki import build_wikipedia

log = logging.getLogger(__name__)


_SECRETS: set[str] = set()


def redact_secrets_in_logs(settings: Settings) -> None:
    """Make every log record (message and traceback) show `***` instead of any configured secret,
    whatever library logs it. Installed once per process; later calls add their secrets."""
    _SECRETS.update(v for st in SETTINGS if st.secret and len(v := str(getattr(settings, st.name) or "")) >= 4)
    if getattr(logging.getLogRecordFactory(), "redacts_secrets", False):
        return
    base = logging.getLogRecordFactory()

    def factory(*args, **kwargs) -> logging.LogRecord:
        record = base(*args, **kwargs)
        message = record.getMessage()
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        for secret in _SECRETS:
            if secret in message:
                message = message.replace(secret, "***")
            if record.exc_text and secret in record.exc_text:
                record.exc_text = record.exc_text.replace(secret, "***")
        record.msg, record.args = message, ()
        return record

    factory.redacts_secrets = True  # type: ignore[attr-defined]
    logging.setLogRecordFactory(factory)


def build_store(settings: Settings) -> Store:
    """The configured vector store (nothing is connected until first use)."""
    if settings.store == "embedded":
        return EmbeddedStore(settings.data_path / "index.sqlite")
    if settings.store == "weaviate":
        from pipeline.weaviate_store import WeaviateStore

        return WeaviateStore(settings)
    raise ValueError(f"unknown store {settings.store!r}; expected 'embedded' or 'weaviate'")


def build_cross_encoder(settings: Settings):
    if not settings.reranker_model:
        return None
    from sentence_transformers import CrossEncoder

    try:
        return CrossEncoder(settings.reranker_model, device="cpu")
    except Exception as e:  # noqa: BLE001 - any loading failure is a configuration error
        raise ValueError(f"cannot load reranker_model {settings.reranker_model!r}: {e}") from e


def resolve_locations(locations: list[str]) -> list[str]:
    """Relative folder paths are taken from the working directory, else from the project root
    (so the bundled `docs` source works wherever ravbot is started)."""
    out = []
    for loc in locations:
        if "://" not in loc and not Path(loc).expanduser().is_absolute() and not Path(loc).exists():
            candidate = PROJECT_ROOT / loc
            loc = str(candidate) if candidate.exists() else loc
        out.append(loc)
    return out


class App:
    """The Core (see adapters/core.py): owns the store, feedback database and reindexer."""

    def __init__(self, settings: Settings, parts: Parts, feedback: FeedbackStore, run_scheduler: bool = True):
        self.settings, self.parts, self.feedback = settings, parts, feedback
        self.sources = {name: {**spec, "locations": resolve_locations(spec["locations"])}
                        for name, spec in settings.source_specs().items()}
        self.reindexer = Reindexer(self.index_one, feedback, self.sources, lock_dir=settings.data_path, schedule=run_scheduler)
        self._slots = threading.BoundedSemaphore(max(1, settings.workers))
        self._pool = ThreadPoolExecutor(max(1, settings.workers), thread_name_prefix="ravbot-pipeline")
        self._asked: dict[tuple[str, str], deque[float]] = defaultdict(deque)
        self._rate_lock = threading.Lock()

    # --- questions
    def check_question(self, question: Question) -> str | None:
        if problem := question_problem(question.text, self.settings.max_question_chars):
            return problem
        limit = self.settings.rate_limit_per_minute
        if limit and question.asker:
            now = time.monotonic()
            with self._rate_lock:
                asked = self._asked[(question.platform, question.asker)]
                while asked and now - asked[0] > 60:
                    asked.popleft()
                if len(asked) >= limit:
                    wait = int(60 - (now - asked[0])) + 1
                    return f"You're asking faster than I can check answers; please wait about {wait} s and ask again."
                asked.append(now)
        return None

    def ask(self, question: Question) -> Answer:
        with self._slots:
            try:
                return answer_question(question, self.parts)
            except Exception:  # noqa: BLE001 - the user gets an apology with an id, the log gets the trace
                error_id = uuid.uuid4().hex[:8]
                log.exception("pipeline error %s for question %r", error_id, question.text[:200])
                return Answer(question=clean_question(question.text),
                              text=f"Sorry, something went wrong while answering (error id {error_id}).",
                              error=f"pipeline error {error_id}")

    async def ask_async(self, question: Question) -> Answer:
        return await asyncio.get_running_loop().run_in_executor(self._pool, self.ask, question)

    # --- feedback
    def record_answer(self, platform: str, channel: str, message_id: str, thread: str, asker: str, answer: Answer) -> None:
        self.feedback.record_answer(platform, channel, message_id, thread, asker, answer)

    def vote(self, platform: str, message_id: str, user: str, value: int | None) -> bool:
        return self.feedback.vote(platform, message_id, user, value)

    # --- admin
    def is_admin(self, platform: str, user: str, roles: tuple[str, ...] = (), is_platform_admin: bool = False) -> bool:
        return is_authorised(platform, user, roles, is_platform_admin, self.settings)

    def admin(self, platform: str, user: str, roles: tuple[str, ...], command: str,
              is_platform_admin: bool = False, notify: Callable[[str], None] | None = None) -> str:
        return handle_admin(command, authorised=self.is_admin(platform, user, roles, is_platform_admin),
                            reindexer=self.reindexer, feedback=self.feedback, status_info=self.status_info,
                            notify=notify)

    def status_info(self) -> dict:
        try:
            counts = self.parts.store.counts()
        except Exception as e:  # noqa: BLE001 - status must answer even when the store is down
            counts = {"error": str(e)}
        s = self.settings
        return {"index": counts, "store": s.store, "embedding_model": Path(self.parts.embedder.name).name,
                "reranker": s.reranker_model or "built-in", "llm": s.llm_model if s.llm_base_url else "none (extractive)",
                "verifier": s.verify_method if s.verify else "off", "wikipedia": s.wikipedia,
                "sources": {n: spec["locations"] for n, spec in self.sources.items()}}

    # --- indexing
    def index_one(self, name: str, progress: Callable[[int, int], None] | None = None) -> dict:
        """Index one configured source now (called by the reindexer and the CLI)."""
        if name not in self.sources:
            raise ValueError(f"unknown source {name!r}; configured: {', '.join(self.sources) or 'none'}")
        return self.index_locations(name, self.sources[name]["locations"], progress)

    def index_locations(self, name: str, locations: list[str],
                        progress: Callable[[int, int], None] | None = None) -> dict:
        """Index `locations` as source `name` with the configured chunking and limits."""
        s = self.settings
        return index_source(self.parts.store, self.parts.embedder, name, locations,
                            chunk_size=s.chunk_size, chunk_overlap=s.chunk_overlap, max_file_bytes=s.max_file_bytes,
                            fetch_timeout=s.fetch_timeout, progress=progress)

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)
        self.reindexer.shutdown()
        self.feedback.close()
        self.parts.store.close()
        for part in (self.parts.wiki, self.parts.llm):
            if part is not None and hasattr(part, "close"):
                part.close()


def build(settings: Settings, run_scheduler: bool = True) -> App:
    """Wire the configured backends. Cheap: models load and stores connect on first use."""
    redact_secrets_in_logs(settings)
    parts = Parts(store=build_store(settings), embedder=load_embedder(settings.embedding_model), settings=settings,
                  llm=build_llm(settings), wiki=build_wikipedia(settings), cross_encoder=build_cross_encoder(settings))
    feedback = FeedbackStore(settings.data_path / "feedback.sqlite")
    return App(settings, parts, feedback, run_scheduler=run_scheduler)
