"""`build(settings)`: pick the backends once and wire them into `App`, the Core every adapter talks to.

The one composition root: `stage_options` and `weaviate_options` turn the settings into the frozen
options the pipeline's stages read, and the `build_*` functions make its runtime parts (embedder,
store, LLM, Wikipedia, cross-encoder, trained verifier); nothing under `pipeline/` reads settings.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import os
import sys
import threading
import time
import uuid
from collections import Counter, defaultdict, deque
from collections.abc import Callable, Collection
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from bot.admin import handle_admin, is_authorised
from bot.feedback import FeedbackStore
from bot.scheduler import Reindexer, progress_line
from config.settings import PROJECT_ROOT, SETTINGS, Settings
from pipeline.answer import AnswerOptions, Parts, answer_question, clean_question, question_problem
from pipeline.embed import Embedder, load_embedder, same_vectors
from pipeline.index import index_source
from pipeline.llm import LLM, OpenAIChat
from pipeline.retrieve import RetrieveOptions
from pipeline.sentence_vectors import SentenceEmbedder, SentenceVectors
from pipeline.store import EmbeddedStore, Store
from pipeline.types import Answer, Question
from pipeline.verifier_model import TrainedVerifier
from pipeline.verify import VerifyOptions
from pipeline.weaviate_schema import WeaviateOptions
from pipeline.wiki import WikipediaSource

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


STILL_READING = "I'm still reading the documents{progress}; ask again in a few minutes."
STILL_INDEXING = "Still indexing: {progress}, so this answer may miss what is not read yet."


def while_building(answer: Answer, building: dict[str, dict]) -> Answer:
    """An answer given while a source's first build runs: "I don't know" becomes "still reading",
    a real answer gets a note saying how far the build is. Errors are left as they are."""
    if answer.error:
        return answer
    done = sum(b["done"] for b in building.values())
    total = sum(b["total"] for b in building.values())
    counted = all(b["total"] for b in building.values())
    if answer.idk:
        progress = f" ({done:,} of {total:,})" if counted else ""
        return dataclasses.replace(answer, text=STILL_READING.format(progress=progress), sources=(), verdicts=())
    progress = f"{done:,} of {total:,} documents read so far" if counted else "the documents are still being read"
    return dataclasses.replace(answer, notes=(*answer.notes, STILL_INDEXING.format(progress=progress)))


THREAD_ENV = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")


def apply_threads(settings: Settings) -> int:
    """Set the CPU threads of torch, OpenMP and BLAS from the `threads` setting (0 = the cores this
    process may run on) and return the number. The environment is set before torch loads (it loads
    with the first encode), so its thread pool starts at that size; a torch or BLAS already loaded is
    set directly."""
    n = int(settings.threads) or len(os.sched_getaffinity(0))
    if n < 1:
        raise ValueError(f"setting threads: {settings.threads!r} must be 0 (all cores) or more")
    for var in THREAD_ENV:
        os.environ[var] = str(n)
    if "torch" in sys.modules:
        sys.modules["torch"].set_num_threads(n)
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # numpy's BLAS then keeps its own default (the cores)
        pass
    else:
        threadpool_limits(n)
    return n


# --- options: the settings each stage reads, by the same names


def stage_options(settings: Settings) -> AnswerOptions:
    """The options of every stage of the flow (retrieval and verification included), from the settings."""
    s = settings
    retrieval = RetrieveOptions(top_k=s.top_k, candidates=s.candidates, rrf_k=s.rrf_k, rerank_weight=s.rerank_weight,
                                weaviate_fusion=s.weaviate_fusion)
    verification = VerifyOptions(
        supported_threshold=s.supported_threshold, uncertain_threshold=s.uncertain_threshold,
        numbers_must_appear=s.numbers_must_appear, names_must_appear=s.names_must_appear,
        details_must_appear=s.details_must_appear, cosine_supported=s.cosine_supported,
        cosine_uncertain=s.cosine_uncertain, verifier_in_default=s.verifier_in_default,
        verifier_refutes=s.verifier_refutes, nli_model=s.nli_model)
    return AnswerOptions(
        retrieval=retrieval, verification=verification, max_question_chars=s.max_question_chars, rerank=s.rerank,
        relevance_floor=s.relevance_floor, relevance_confident=s.relevance_confident,
        relevance_topical=s.relevance_topical, relevance_broad=s.relevance_broad,
        llm_max_tokens=s.llm_max_tokens, answer_sentences=s.answer_sentences,
        verify=s.verify, verify_method=s.verify_method, verify_llm_second_opinion=s.verify_llm_second_opinion,
        entity_types=tuple(s.list("entity_types")), evidence_k=s.evidence_k, correction_rounds=s.correction_rounds,
        wikipedia=s.wikipedia, wikipedia_pages=s.wikipedia_pages)


def weaviate_options(settings: Settings) -> WeaviateOptions:
    """The Weaviate server and collection options, from the `weaviate_*` settings."""
    s = settings
    return WeaviateOptions(
        weaviate_url=s.weaviate_url, weaviate_grpc_port=s.weaviate_grpc_port, weaviate_api_key=s.weaviate_api_key,
        weaviate_collection=s.weaviate_collection, weaviate_tenant=s.weaviate_tenant,
        weaviate_replication=s.weaviate_replication, weaviate_shards=s.weaviate_shards,
        weaviate_fusion=s.weaviate_fusion)


# --- runtime parts: each cheap to build; models load and servers connect on first use


def build_embedder(settings: Settings) -> Embedder:
    """The embedding model with its backend, ONNX cache folder and sentence cache (one per process)."""
    return load_embedder(settings.embedding_model, settings.embed_backend, str(settings.data_path / "models"),
                         settings.embed_cache)


def build_sentence_vectors(settings: Settings, embedder: Embedder) -> SentenceVectors | None:
    """The data dir's sentence-vector file for this embedder (None when the setting is 0)."""
    if not settings.sentence_vectors:
        return None
    model = f"{Path(embedder.name).name}|{same_vectors(getattr(embedder, 'backend', '') or settings.embed_backend)}"
    return SentenceVectors(settings.data_path / "sentences.sqlite", model, settings.sentence_vectors)


def build_store(settings: Settings) -> Store:
    """The configured vector store (nothing is connected until first use)."""
    if settings.store == "embedded":
        return EmbeddedStore(settings.data_path / "index.sqlite")
    if settings.store == "weaviate":
        from pipeline.weaviate_store import WeaviateStore

        return WeaviateStore(weaviate_options(settings))
    raise ValueError(f"unknown store {settings.store!r}; expected 'embedded' or 'weaviate'")


def build_llm(settings: Settings) -> LLM | None:
    """The configured LLM, or None when `llm_base_url` is empty (extractive answers)."""
    if not settings.llm_base_url:
        return None
    return OpenAIChat(base_url=settings.llm_base_url, model=settings.llm_model, api_key=settings.llm_api_key,
                      timeout=float(settings.llm_timeout), max_retries=int(settings.llm_retries))


def build_wikipedia(settings: Settings) -> WikipediaSource | None:
    """The configured Wikipedia source, or None when the `wikipedia` setting is `off`."""
    if str(settings.wikipedia).lower() == "off":
        return None
    return WikipediaSource(settings.data_path / "wikipedia-cache.sqlite", api_url=settings.wikipedia_api_url,
                           timeout=float(settings.wikipedia_timeout),
                           cache_hours=float(settings.wikipedia_cache_hours), pages=int(settings.wikipedia_pages))


def build_verifier(settings: Settings) -> TrainedVerifier:
    """The trained verifier `verifier_model` names (empty: the shipped one), loaded when first used;
    a named folder without one is reported then, as it always was (by `TrainedVerifier.load`)."""
    return TrainedVerifier(str(settings.verifier_model or ""), settings.verifier_backend, str(settings.data_path / "models"))


def build_cross_encoder(settings: Settings):
    """The configured CrossEncoder reranker, or None (the built-in reranker) when `reranker_model` is empty."""
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

    def __init__(self, settings: Settings, parts: Parts, feedback: FeedbackStore, run_scheduler: bool = True,
                 borrowed: Collection[str] = ()):
        self.settings, self.parts, self.feedback = settings, parts, feedback
        self.borrowed = frozenset(borrowed)  # names of parts the caller passed in and closes itself
        self.sources = {name: {**spec, "locations": resolve_locations(spec["locations"])}
                        for name, spec in settings.source_specs().items()}
        self.reindexer = Reindexer(self.index_one, feedback, self.sources, lock_dir=settings.data_path, schedule=run_scheduler)
        self._slots = threading.BoundedSemaphore(max(1, settings.workers))
        self._pool = ThreadPoolExecutor(max(1, settings.workers), thread_name_prefix="ravbot-pipeline")
        self._asked: dict[tuple[str, str], deque[float]] = defaultdict(deque)
        self._indexed_once: set[str] = set()
        self._swept = time.monotonic()
        self._rate_lock = threading.Lock()

    # --- questions
    def check_question(self, question: Question) -> str | None:
        if problem := question_problem(question.text, self.settings.max_question_chars):
            return problem
        limit = self.settings.rate_limit_per_minute
        if limit and question.asker:
            now = time.monotonic()
            with self._rate_lock:
                if now - self._swept > 60:  # forget askers quiet for a minute: the table must not grow forever
                    self._swept = now
                    for key in [k for k, times in self._asked.items() if not times or now - times[-1] > 60]:
                        del self._asked[key]
                asked = self._asked[(question.platform, question.asker)]
                while asked and now - asked[0] > 60:
                    asked.popleft()
                if len(asked) >= limit:
                    wait = int(60 - (now - asked[0])) + 1
                    return f"You're asking faster than I can check answers; please wait about {wait} s and ask again."
                asked.append(now)
        return None

    def ask(self, question: Question) -> Answer:
        started = time.perf_counter()
        with self._slots:
            building = self.first_builds(question.sources)
            try:
                answer = answer_question(question, self.parts)
            except Exception:  # noqa: BLE001 - the user gets an apology with an id, the log gets the trace
                error_id = uuid.uuid4().hex[:8]
                shown = f" for question {question.text[:200]!r}" if self.settings.log_questions else ""
                log.exception("pipeline error %s%s", error_id, shown)
                answer = Answer(question=clean_question(question.text),
                                text=f"Sorry, something went wrong while answering (error id {error_id}).",
                                error=f"pipeline error {error_id}")
            if building:
                answer = while_building(answer, building)
        self._log_answer(question, answer, time.perf_counter() - started)
        return answer

    def first_builds(self, sources: tuple[str, ...] = ()) -> dict[str, dict]:
        """The sources (of `sources`, or all) whose first build is running now, here or in another
        process, each with its progress {"done", "total"} (total 0: not counted yet). A source that
        finished a build once is never asked about again."""
        out = {}
        running = self.reindexer.running()
        for name in sources or self.sources:
            if name not in self.sources or name in self._indexed_once:
                continue
            try:
                if self.feedback.ever_indexed(name):
                    self._indexed_once.add(name)
                    continue
                last = self.feedback.runs(limit=1, source=name)
            except Exception:  # noqa: BLE001 - a note about progress must never stop an answer
                log.warning("could not read the index runs of %s", name, exc_info=True)
                continue
            run = last[0] if last and last[0]["status"] == "running" else None
            if name in running or (run is not None and self.reindexer.build_in_progress()):
                out[name] = {"done": int((run or {}).get("done") or 0), "total": int((run or {}).get("total") or 0)}
        return out

    def _log_answer(self, question: Question, answer: Answer, seconds: float) -> None:
        """The one log line per question: no question text unless `log_questions`."""
        labels = Counter(str(v.label) for v in answer.verdicts)
        outcome = "error" if answer.error else "idk" if answer.idk else "answered"
        line = (f"question {outcome}: platform={question.platform or '-'} latency_ms={seconds * 1000:.0f} "
                f"claims={len(answer.verdicts)} labels={','.join(f'{k}:{n}' for k, n in sorted(labels.items())) or '-'} "
                f"sources={','.join(src.chunk_id or src.link for src in answer.sources) or '-'}")
        if self.settings.log_questions:
            line += f" question={clean_question(question.text)[:500]!r}"
        log.info("%s", line)

    async def ask_async(self, question: Question) -> Answer:
        return await asyncio.get_running_loop().run_in_executor(self._pool, self.ask, question)

    # --- feedback
    def record_answer(self, platform: str, channel: str, message_id: str, thread: str, asker: str, answer: Answer) -> None:
        self.feedback.record_answer(platform, channel, message_id, thread, asker, answer)

    def vote(self, platform: str, message_id: str, user: str, value: int | None, removed: int | None = None) -> bool:
        """`value` +1/-1: a 👍/👎 added; None: a reaction removed (`removed` says which, so a user still
        holding the other one keeps it as their vote)."""
        return self.feedback.vote(platform, message_id, user, value, removed=removed)

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
                "embedding_backend": getattr(self.parts.embedder, "backend_used", "") or s.embed_backend,
                "reranker": s.reranker_model or "built-in", "llm": s.llm_model if s.llm_base_url else "none (extractive)",
                "verifier": s.verify_method if s.verify else "off",
                "verifier_backend": (self.parts.verifier.running() if self.parts.verifier else "") or s.verifier_backend,
                "wikipedia": s.wikipedia,
                "sources": {n: spec["locations"] for n, spec in self.sources.items()},
                "indexing": self.indexing()}

    def indexing(self) -> dict[str, str]:
        """Builds running now (in any process), per source: "412 of 5,183 documents, 8.6 documents/s,
        done in about 9 min (19:45 UTC)"."""
        out = {}
        for name in self.sources:
            try:
                last = self.feedback.runs(limit=1, source=name)
            except Exception:  # noqa: BLE001 - status must answer even when the feedback db is locked
                continue
            if last and last[0]["status"] == "running" and self.reindexer.build_in_progress():
                out[name] = progress_line(last[0])
        return out

    # --- indexing
    def index_one(self, name: str, progress: Callable[[int, int], None] | None = None) -> dict:
        """Index one configured source now (called by the reindexer and the CLI)."""
        if name not in self.sources:
            raise ValueError(f"unknown source {name!r}; configured: {', '.join(self.sources) or 'none'}")
        spec = self.sources[name]
        return self.index_locations(name, spec["locations"], progress, url_base=spec.get("url_base", ""),
                                    url_pattern=spec.get("url_pattern", ""))

    def index_locations(self, name: str, locations: list[str],
                        progress: Callable[[int, int], None] | None = None, url_base: str = "",
                        url_pattern: str = "") -> dict:
        """Index `locations` as source `name` with the configured chunking and limits; pages are
        linked under `url_base` (see `pipeline.ingest.Site`)."""
        s = self.settings
        return index_source(self.parts.store, self.parts.embedder, name, locations,
                            chunk_size=s.chunk_size, chunk_overlap=s.chunk_overlap, max_file_bytes=s.max_file_bytes,
                            fetch_timeout=s.fetch_timeout, progress=progress, url_base=url_base, url_pattern=url_pattern,
                            sentence_vectors=self.parts.sentence_vectors)

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)
        self.reindexer.shutdown()
        self.feedback.close()
        if self.parts.sentence_vectors is not None:
            self.parts.sentence_vectors.close()
        for name in ("store", "wiki", "llm"):  # what `build` made; a part passed in stays open
            part = getattr(self.parts, name)
            if name not in self.borrowed and part is not None and hasattr(part, "close"):
                part.close()


def build(settings: Settings, run_scheduler: bool = True, *, embedder: Embedder | None = None,
          store: Store | None = None, llm: LLM | None = None, wiki: object | None = None,
          cross_encoder: object | None = None) -> App:
    """Wire the configured backends. Cheap: models load and stores connect on first use.

    Each keyword part, when given, is used instead of the one the settings would build (None: build
    it from the settings): `embedder` (anything with `Embedder`'s `encode`, `dim`, `name` and
    `model`), `store` (a `Store`), `llm`, `wiki`, `cross_encoder`. The caller owns what it passes:
    `App.close` leaves it open, so one store or embedder can serve several Cores."""
    redact_secrets_in_logs(settings)
    apply_threads(settings)
    given = {"embedder": embedder, "store": store, "llm": llm, "wiki": wiki, "cross_encoder": cross_encoder}
    embedder = build_embedder(settings) if embedder is None else embedder
    sentence_vectors = build_sentence_vectors(settings, embedder)
    parts = Parts(store=build_store(settings) if store is None else store,
                  embedder=embedder if sentence_vectors is None else SentenceEmbedder(embedder, sentence_vectors),
                  options=stage_options(settings), sentence_vectors=sentence_vectors,
                  llm=build_llm(settings) if llm is None else llm,
                  wiki=build_wikipedia(settings) if wiki is None else wiki,
                  cross_encoder=build_cross_encoder(settings) if cross_encoder is None else cross_encoder,
                  verifier=build_verifier(settings))
    feedback = FeedbackStore(settings.data_path / "feedback.sqlite")
    return App(settings, parts, feedback, run_scheduler=run_scheduler,
               borrowed={name for name, part in given.items() if part is not None})
