"""The settings table (name, default, help) and `load_settings`, the only reader of the environment.

Precedence, lowest first: the defaults below, a TOML file (`RAVBOT_CONFIG` or `--config`),
then environment variables: `RAVBOT_<NAME>` for every setting, and the conventional names
(`SLACK_BOT_TOKEN`, `DISCORD_TOKEN`, `WEAVIATE_URL`, `PORT`, ...) where a setting has one.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

PROJECT_ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Setting:
    name: str
    default: Any
    help: str
    env: str = ""  # conventional environment variable, besides RAVBOT_<NAME>
    secret: bool = False


SETTINGS: tuple[Setting, ...] = (
    # --- where things live
    Setting("data_dir", ".ravbot", "Directory holding the index, caches and feedback database."),
    Setting("sources", "docs=docs", "Sources to index: `name=location|location;name2=...` (folders, files, URLs, sitemaps). TOML may use a `[sources]` table instead."),
    Setting("reindex_interval_minutes", 60, "Scheduled reindex interval per source, in minutes (0 = no schedule)."),
    Setting("reindex_cron", "", "Cron expression for scheduled reindexing (overrides the interval), e.g. `0 3 * * *`."),
    Setting("log_level", "INFO", "Logging level."),
    Setting("log_questions", False, "Include the question text in the one log line per question (off: platform, latency, verdict counts and source ids only)."),
    # --- ingestion and chunking
    Setting("chunk_size", 800, "Target chunk length in characters."),
    Setting("chunk_overlap", 120, "Characters of overlap between neighbouring chunks."),
    Setting("max_file_bytes", 5_000_000, "Files larger than this are reported and skipped."),
    Setting("fetch_timeout", 15.0, "Seconds allowed for fetching one web page when indexing URLs."),
    # --- retrieval
    Setting("embedding_model", "", "Path or name of a sentence-transformers model; empty = the bundled all-MiniLM-L6-v2."),
    Setting("embed_backend", "auto", "How the embedding model runs on the CPU: `auto` (`torch-bf16` with Intel AMX, else `torch`), `torch`, `torch-bf16` (matrix products in bfloat16, each batch padded to a multiple of 16 tokens up to 128, of 32 beyond: vectors within cosine 0.9999 of torch's; with AMX 2-2.9× faster; slower without AMX), `torch-int8` (its Linear layers quantised to int8 per channel: vectors move) or `onnx` (exported once to ONNX under the data dir and run by ONNX Runtime: same vectors). A backend that cannot load falls back to `torch` with a warning."),
    Setting("sentence_vectors", 200000, "How many sentence vectors to keep on disk (`sentences.sqlite` in the data dir, about 2 KB each: 200,000 take about 420 MB): indexing embeds every answer and evidence sentence of the documents it adds, so that a question embeds only itself and its claims (indexing takes about 4× longer; questions about half as long). Past this many, the oldest go and indexing stops adding; a sentence not on disk is embedded when a question needs it, and kept. 0 = off."),
    Setting("embed_cache", 20000, "How many evidence and answer sentence vectors to keep in memory (about 1.6 KB each), so a sentence retrieved again is not embedded again; 0 = off. Chunks are embedded at index time and are not kept here."),
    Setting("reranker_model", "", "Path to a sentence-transformers CrossEncoder; empty = the built-in reranker from the embedding model."),
    Setting("rerank", True, "Rerank the fused candidates before taking the top k."),
    Setting("candidates", 40, "Candidates taken from dense search and from BM25 before fusion."),
    Setting("rrf_k", 60, "The k constant of reciprocal rank fusion."),
    Setting("rerank_weight", 0.5, "Built-in reranker: weight of the cosine score against BM25 (0..1)."),
    Setting("top_k", 5, "Chunks passed to generation."),
    Setting("relevance_floor", 0.25, "Minimum cosine similarity of the best chunk; below it the answer is \"I don't have information...\" (before any LLM call)."),
    Setting("relevance_confident", 0.65, "Below this similarity of the best chunk, a question with a noun that no document contains is refused as out of scope."),
    Setting("relevance_topical", 0.45, "Below this similarity of the best chunk, a question with a noun that none of the three best chunks contains is refused as out of scope."),
    Setting("relevance_broad", 0.5, "Below this similarity of the best chunk, a question with two or more nouns (not of the asker's own setting) that none of the three best chunks contains is refused as out of scope."),
    Setting("store", "embedded", "Vector store: `embedded` (SQLite + numpy) or `weaviate`."),
    Setting("weaviate_url", "", "Weaviate HTTP URL, e.g. http://localhost:8080.", env="WEAVIATE_URL"),
    Setting("weaviate_grpc_port", 50051, "Weaviate gRPC port."),
    Setting("weaviate_api_key", "", "Weaviate API key.", env="WEAVIATE_API_KEY", secret=True),
    Setting("weaviate_collection", "Ravbot", "Base name of ravbot's Weaviate collection."),
    Setting("weaviate_tenant", "", "Tenant name when multi-tenancy is used (one per team/workspace); empty = off."),
    Setting("weaviate_replication", 1, "Replication factor passed at collection creation."),
    Setting("weaviate_shards", 1, "Desired shard count passed at collection creation."),
    Setting("weaviate_fusion", "ravbot", "How BM25 and vectors are fused on Weaviate: `ravbot` (our RRF), `ranked` or `relative_score` (Weaviate hybrid)."),
    # --- generation
    Setting("llm_base_url", "", "OpenAI-compatible endpoint (OpenAI, Ollama, vLLM, llama.cpp); empty = extractive answers, no LLM.", env="OPENAI_BASE_URL"),
    Setting("llm_model", "gpt-4o-mini", "Model name sent to the LLM endpoint."),
    Setting("llm_api_key", "", "API key for the LLM endpoint.", env="OPENAI_API_KEY", secret=True),
    Setting("llm_timeout", 30.0, "Seconds before an LLM call times out."),
    Setting("llm_retries", 2, "Retries of a failed LLM call."),
    Setting("llm_max_tokens", 700, "Maximum tokens in a generated answer."),
    Setting("answer_sentences", 3, "Sentences in an extractive answer (no LLM)."),
    # --- verification
    Setting("verify", True, "Verify answers claim by claim before posting."),
    Setting("verify_method", "default", "Verifier: `default`, `cosine` (published baseline), `combiner`, `model` (ravbot's trained verifier model), `llm` or `nli`."),
    Setting("verify_llm_second_opinion", False, "With an LLM configured, send the claims the verifier left UNCERTAIN (only those, all in one JSON call per answer) to the LLM for a second opinion; a validated reply may make them SUPPORTED or CONTRADICTED, never changing any other verdict (method `llm-second-opinion`)."),
    Setting("entity_types", "PERSON,ORG,GPE,LOC,DATE,EVENT,NORP,FAC,PRODUCT,WORK_OF_ART,LAW,TIME,PERCENT,MONEY,QUANTITY,CARDINAL,ORDINAL", "spaCy entity labels that make a sentence a claim."),
    Setting("supported_threshold", 0.5, "`default` verifier: confidence at or above which a claim is SUPPORTED."),
    Setting("uncertain_threshold", 0.2, "`default` verifier: confidence at or above which an unsupported claim is UNCERTAIN rather than UNSUPPORTED."),
    Setting("numbers_must_appear", True, "`default` verifier: a claim with a number, date or percentage (in digits) that its evidence nowhere states is at most UNCERTAIN."),
    Setting("details_must_appear", True, "`default` verifier: a claim the answer cites a source for (`[n]`) that adds content no evidence passage states (a run of two or more content words, or three in all) is at most UNCERTAIN, and its footnote names the missing part. Uncited claims are not held to it."),
    Setting("names_must_appear", False, "`default` verifier: a claim naming something (a capitalised name, an acronym, a code) that its evidence nowhere mentions is at most UNCERTAIN. Stricter: see docs/verification.md."),
    Setting("cosine_supported", 0.65, "`cosine` verifier: max cosine for SUPPORTED."),
    Setting("cosine_uncertain", 0.45, "`cosine` verifier: max cosine for UNCERTAIN."),
    Setting("verifier_model", "", "Directory of a trained ravbot verifier (see docs/verifier.md); empty = the shipped one if present."),
    Setting("verifier_backend", "onnx", "How the verifier model runs on the CPU: `onnx` (exported once to ONNX under the data dir, about 90 MB, and run by ONNX Runtime: the same probabilities, about a quarter faster than `torch`), `torch`, `torch-bf16` (matrix products in bfloat16: probabilities within 0.01 of `torch`'s; with Intel AMX `verify` took 8% less per claim than `onnx`, same labels; slower without AMX), or `auto` (`torch-bf16` with AMX, else `onnx`). When ONNX Runtime or the export fails, `torch` runs, with a warning."),
    Setting("verifier_in_default", True, "`default` also uses the trained verifier model when one is present (see docs/verifier.md)."),
    Setting("verifier_refutes", 0.5, "Verifier model: P(refutes) at or above which (and above P(supports)) a claim is CONTRADICTED."),
    Setting("nli_model", "", "Path to a sentence-transformers NLI CrossEncoder for the `nli` method."),
    Setting("evidence_k", 5, "Knowledge-base chunks retrieved as evidence per claim."),
    Setting("correction_threshold", 0.6, "Ignored (kept so existing configuration files still load): only flagged claims, never SUPPORTED ones, are sent for correction."),
    Setting("correction_rounds", 1, "Maximum correct-and-reverify rounds."),
    Setting("wikipedia", "auto", "Wikipedia evidence: `off`, `auto` (when the knowledge base is weak) or `always`."),
    Setting("wikipedia_api_url", "", "MediaWiki API URL; empty = the wikipedia package default (en.wikipedia.org)."),
    Setting("wikipedia_timeout", 5.0, "Hard time limit in seconds per Wikipedia call."),
    Setting("wikipedia_pages", 3, "Wikipedia pages fetched per claim."),
    Setting("wikipedia_cache_hours", 168, "How long fetched Wikipedia results are cached."),
    # --- serving
    Setting("show_timings", False, "Show the stage timings under answers posted in Slack (the terminal and `--json` always have them)."),
    Setting("max_question_chars", 4000, "Longer questions are refused with a message."),
    Setting("rate_limit_per_minute", 6, "Questions one user may ask per minute (0 = unlimited)."),
    Setting("workers", 2, "Worker threads running pipeline calls."),
    Setting("threads", 0, "CPU threads for the embedding model (torch, ONNX Runtime) and BLAS; 0 = the cores this process may run on. One encode call runs at a time per process, with all of them.", env="OMP_NUM_THREADS"),
    Setting("port", 3000, "Port of the Slack HTTP mode server.", env="PORT"),
    Setting("slack_bot_token", "", "Slack bot token (xoxb-...).", env="SLACK_BOT_TOKEN", secret=True),
    Setting("slack_app_token", "", "Slack app-level token (xapp-...) for Socket Mode.", env="SLACK_APP_TOKEN", secret=True),
    Setting("slack_signing_secret", "", "Slack signing secret for HTTP mode.", env="SLACK_SIGNING_SECRET", secret=True),
    Setting("slack_api_url", "", "Slack Web API base URL (GovSlack / Enterprise); empty = https://slack.com/api/.", env="SLACK_API_URL"),
    Setting("slack_retry_backoff", 0.5, "Seconds before the first retry of a Slack Web API call that failed (a 500/503 or a dropped connection); each further retry waits twice as long. A 429 waits as long as Slack's Retry-After says."),
    Setting("slack_admins", "", "Comma-separated Slack user IDs allowed to run admin commands."),
    Setting("slack_allow_bots", False, "Answer mentions from other bots."),
    Setting("discord_token", "", "Discord bot token.", env="DISCORD_TOKEN", secret=True),
    Setting("discord_api_url", "", "Discord REST base URL (e.g. a rate-limit proxy); empty = Discord's.", env="DISCORD_API_URL"),
    Setting("discord_admin_users", "", "Comma-separated Discord user IDs allowed to run admin commands."),
    Setting("discord_admin_roles", "", "Comma-separated Discord role IDs allowed to run admin commands."),
    Setting("discord_sync_commands", False, "Sync slash commands with Discord at start (do it once after changes)."),
    Setting("discord_guild_ids", "", "Comma-separated guild IDs to sync commands to (fast); empty = global."),
)

_BY_NAME = {s.name: s for s in SETTINGS}


class Settings:
    """Resolved settings; read them as attributes (`settings.top_k`)."""

    def __init__(self, values: Mapping[str, Any]):
        unknown = set(values) - set(_BY_NAME) - {"source_table"}
        if unknown:
            raise ValueError(f"unknown setting(s): {', '.join(sorted(unknown))}")
        self._values = {s.name: s.default for s in SETTINGS} | {"source_table": {}} | dict(values)

    def __getattr__(self, name: str) -> Any:
        try:
            return self.__dict__["_values"][name]
        except KeyError:
            raise AttributeError(f"no setting named {name!r}") from None

    def replace(self, **changes: Any) -> Settings:
        return Settings({**self._values, **{k: _coerce(_BY_NAME[k], v) if k in _BY_NAME else v for k, v in changes.items()}})

    def as_dict(self, redact: bool = True) -> dict[str, Any]:
        """All values; secrets shown as `***` (set) or `` (unset) unless `redact` is False."""
        out = {}
        for s in SETTINGS:
            value = self._values[s.name]
            out[s.name] = ("***" if value else "") if (s.secret and redact) else value
        return out

    @property
    def data_path(self) -> Path:
        path = Path(self.data_dir).expanduser()
        path.mkdir(parents=True, exist_ok=True)
        return path

    def list(self, name: str) -> list[str]:
        """A comma-separated setting as a list of non-empty, stripped items."""
        return [item.strip() for item in str(getattr(self, name)).split(",") if item.strip()]

    def source_specs(self) -> dict[str, dict[str, Any]]:
        """Sources as {name: {"locations": [...], "interval_minutes": int, "cron": str}}, plus
        `url_base`/`url_pattern` (where pages are published) when a TOML table sets them."""
        specs: dict[str, dict[str, Any]] = {}
        for part in str(self.sources).split(";"):
            if not part.strip():
                continue
            name, sep, locations = part.partition("=")
            if not sep or not name.strip():
                raise ValueError(f"bad sources entry {part!r}: expected name=location|location")
            specs[name.strip()] = {"locations": [x.strip() for x in locations.split("|") if x.strip()]}
        for name, table in self.source_table.items():
            locs = table.get("locations", table.get("paths", []))
            specs[name] = {"locations": [locs] if isinstance(locs, str) else list(locs)}
            specs[name] |= {k: table[k] for k in ("interval_minutes", "cron", "url_base", "url_pattern") if k in table}
        for spec in specs.values():
            spec.setdefault("interval_minutes", self.reindex_interval_minutes)
            spec.setdefault("cron", self.reindex_cron)
        return specs


def _coerce(setting: Setting, raw: Any) -> Any:
    kind = type(setting.default)
    if isinstance(raw, kind) and not (kind is int and isinstance(raw, bool)):
        return raw
    text = str(raw).strip()
    try:
        if kind is bool:
            if text.lower() in {"1", "true", "yes", "on"}:
                return True
            if text.lower() in {"0", "false", "no", "off", ""}:
                return False
            raise ValueError
        if kind is int:
            return int(text)
        if kind is float:
            return float(text)
    except ValueError:
        raise ValueError(f"setting {setting.name}: {raw!r} is not a valid {kind.__name__}") from None
    return text


def load_settings(
    env: Mapping[str, str] | None = None,
    config_file: str | Path | None = None,
    **overrides: Any,
) -> Settings:
    """Resolve settings from defaults, a TOML file, the environment and explicit overrides."""
    env = os.environ if env is None else env
    values: dict[str, Any] = {}
    path = config_file or env.get("RAVBOT_CONFIG")
    if path:
        path = Path(path).expanduser()
        if not path.is_file():
            raise ValueError(f"config file {str(path)!r} does not exist")
        with path.open("rb") as f:
            table = tomllib.load(f)
        if isinstance(table.get("sources"), dict):
            values["source_table"] = table.pop("sources")
        for key, raw in table.items():
            if key not in _BY_NAME:
                raise ValueError(f"unknown setting {key!r} in {path}")
            values[key] = _coerce(_BY_NAME[key], raw)
    for s in SETTINGS:
        for var in (s.env, f"RAVBOT_{s.name.upper()}"):
            if var and env.get(var) not in (None, ""):
                values[s.name] = _coerce(s, env[var])
    for key, raw in overrides.items():
        if key not in _BY_NAME:
            raise ValueError(f"unknown setting {key!r}")
        values[key] = _coerce(_BY_NAME[key], raw)
    return Settings(values)


def markdown_table(settings: tuple[Setting, ...] = SETTINGS) -> str:
    """The README's settings table (`ravbot settings --markdown`): name, environment variables,
    default and help of every setting, in table order."""
    def default(s: Setting) -> str:
        if s.secret:
            return "secret, unset"
        return f'`"{s.default}"`' if isinstance(s.default, str) else f"`{s.default!r}`"

    lines = ["| setting | environment | default | what it does |", "|---|---|---|---|"]
    for s in settings:
        env = ", ".join(f"`{v}`" for v in (f"RAVBOT_{s.name.upper()}", s.env) if v)
        lines.append(f"| `{s.name}` | {env} | {default(s)} | {s.help.replace('|', '&#124;')} |")
    return "\n".join(lines)
