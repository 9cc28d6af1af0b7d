"""`ravbot eval check`: the answer-check test end to end through the real pipeline, and its extractive variant.

A cases file (JSONL, the shape of `../shared/answer-check`, documented in the README) gives per
question an LLM-style cited answer twice: `faithful`, and `corrupted` with one wrong sentence. The
harness indexes the corpus folder as the only source in a fresh data directory, puts
`lab.scripted_llm.ScriptedLLM` behind ravbot as its OpenAI-compatible endpoint, asks every question
through `App.ask` and scores each claim's verdict against the sentence it belongs to.

Passes per verifier method (one index, reused by every pass):
- `faithful` and `corrupted`, with `correction_rounds = 0`: the verdicts are those of the LLM's
  draft, the first verification (an `Answer` only carries the final verdicts, so this is the one
  way to see the draft's through the public API). The out-of-scope questions are asked once, in
  the faithful pass.
- `correction`: the corrupted answers again with `correction_rounds = 1` (only those whose draft
  has a claim to correct; the others keep their wrong sentence by construction); the scripted LLM
  answers a correction request with `faithful`. Success: the final answer no longer holds the
  wrong sentence and carries no flag.

`run_extractive` asks the same questions with no LLM and checks what a newcomer would see.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import re
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

ERROR_TYPES = ("number", "name", "negation", "unsupported")
VALUE_TYPES = ("number", "name")
RUNS = ("faithful", "corrupted", "correction")
_SENTENCE_SPLIT = re.compile(r"(?<=\]\.)\s+")
_MARKERS = re.compile(r"\[\s*\d+(?:\s*[,;–-]\s*\d+)*\s*\]")
_TOKEN = re.compile(r"[a-z0-9_]+")
_CITATION_RUN = re.compile(r"(?:\s*\[\s*\d+(?:\s*[,;–-]\s*\d+)*\s*\])+\.?")
_MD_LINK = re.compile(r"\[[^\[\]\n]+\]\([^()\s]+\)")
_MD_LINK_TEXT = re.compile(r"\[([^\[\]\n]+)\]\([^()\s]+\)")
_TEMPLATE = ("{%", "%}", "{{", "}}")
_STARTS_OK = re.compile(r"^[A-Z0-9\"'“‘`]")
_ENDS_OK = re.compile(r"[.!?:][\"'”’)]*$|[\"'”’]$")
DUPLICATE_JACCARD = 0.9
SKIPPED_FILES = frozenset({"SOURCE.txt"})

Progress = Callable[[str], None]


# --------------------------------------------------------------------------- cases and text helpers

def load_cases(path: str | Path) -> list[dict[str, Any]]:
    """The cases of a JSONL file, checked: ValueError names the line and the problem."""
    cases, seen = [], set()
    for n, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            case = json.loads(line)
        except ValueError as e:
            raise ValueError(f"{path}:{n}: not JSON ({e})") from None
        where = f"{path}:{n} ({case.get('id', 'no id')!r})"
        for key in ("id", "question"):
            if not isinstance(case.get(key), str) or not case[key].strip():
                raise ValueError(f"{where}: missing {key!r}")
        if case["id"] in seen:
            raise ValueError(f"{where}: duplicate id")
        seen.add(case["id"])
        if not case.get("out_of_scope"):
            for key in ("faithful", "corrupted", "bad_sentence", "good_sentence", "error_type"):
                if not isinstance(case.get(key), str) or not case[key].strip():
                    raise ValueError(f"{where}: missing {key!r} (needed unless out_of_scope is true)")
            if case["error_type"] not in ERROR_TYPES:
                raise ValueError(f"{where}: error_type {case['error_type']!r} is not one of {', '.join(ERROR_TYPES)}")
            if bad_index(case) is None:
                raise ValueError(f"{where}: bad_sentence is not one of the sentences of corrupted "
                                 "(split after each '].'), or good_sentence is not at its place in faithful")
        cases.append(case)
    if not cases:
        raise ValueError(f"{path}: no cases")
    return cases


def limit_cases(cases: Sequence[Mapping[str, Any]], limit: int | None) -> list[dict[str, Any]]:
    """At most `limit` cases of each error type and `limit` out-of-scope ones, in file order."""
    if not limit:
        return [dict(c) for c in cases]
    taken: dict[str, int] = {}
    out = []
    for c in cases:
        kind = "out_of_scope" if c.get("out_of_scope") else c["error_type"]
        if taken.get(kind, 0) < limit:
            taken[kind] = taken.get(kind, 0) + 1
            out.append(dict(c))
    return out


def split_sentences(text: str) -> list[str]:
    """The answer's sentences as the answer-check set defines them: split after each `].`."""
    return [s for s in _SENTENCE_SPLIT.split(text.strip()) if s]


def tokens(text: str) -> list[str]:
    """Lower-case `[a-z0-9_]+` tokens with citation markers removed."""
    return _TOKEN.findall(_MARKERS.sub(" ", text).lower())


def bad_index(case: Mapping[str, Any]) -> int | None:
    """The position of the wrong sentence in both answers, or None when the case is inconsistent."""
    corrupted, faithful = split_sentences(case["corrupted"]), split_sentences(case["faithful"])
    bad, good = case["bad_sentence"].strip(), case["good_sentence"].strip()
    if len(corrupted) != len(faithful) or corrupted.count(bad) != 1:
        return None
    i = corrupted.index(bad)
    return i if faithful[i] == good else None


def assign(claim_texts: Sequence[str], sentences: Sequence[str]) -> list[int | None]:
    """For each claim, the index of the sentence holding most of its tokens (None: no token shared)."""
    sentence_tokens = [set(tokens(s)) for s in sentences]
    out: list[int | None] = []
    for text in claim_texts:
        claim = set(tokens(text))
        overlaps = [len(claim & s) for s in sentence_tokens]
        best = max(range(len(overlaps)), key=lambda i: overlaps[i], default=None)
        out.append(best if best is not None and overlaps[best] > 0 else None)
    return out


def quotes_value(text: str, value: str) -> bool:
    """`value` occurs in `text` as a whole token, case-insensitively: `(?<![\\w.])VALUE(?![\\w])`."""
    return bool(value) and re.search(rf"(?<![\w.]){re.escape(value)}(?![\w])", text or "", re.IGNORECASE) is not None


def holds_sentence(text: str, sentence: str) -> bool:
    """`text` still holds `sentence` (same token sequence, citations and spacing aside)."""
    needle = " ".join(tokens(sentence))
    return bool(needle) and f" {needle} " in f" {' '.join(tokens(text))} "


# --------------------------------------------------------------------------- index and settings

def copy_corpus(corpus: str | Path, dest: Path) -> int:
    """Copy the corpus's documents (the formats ravbot reads; no `SOURCE.txt`, no hidden files) to `dest`."""
    from pipeline.markup import FORMATS

    root = Path(corpus).expanduser()
    if not root.is_dir():
        raise ValueError(f"corpus {str(corpus)!r} is not a folder")
    n = 0
    for file in sorted(root.rglob("*")):
        rel = file.relative_to(root)
        if (not file.is_file() or file.name in SKIPPED_FILES or file.suffix.lower() not in FORMATS
                or any(p.startswith(".") for p in rel.parts)):
            continue
        (dest / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(file, dest / rel)
        n += 1
    if not n:
        raise ValueError(f"corpus {str(corpus)!r} holds no documents ravbot can read ({', '.join(sorted(FORMATS))})")
    return n


@contextlib.contextmanager
def corpus_work(corpus: str | Path, work_dir: str | Path | None = None) -> Iterator[Path]:
    """The folder a run copies `corpus` into and keeps its data dir (index, sentence vectors) in: a
    temporary one, removed afterwards; or, with `work_dir`, a folder in it named after the corpus
    (its name and a hash of its path, so corpora never share an index), kept for the next run, which
    then embeds only the documents that changed. The previous copy is removed first, so that a
    document deleted from the corpus leaves the index too."""
    if work_dir is None:
        with tempfile.TemporaryDirectory(prefix="ravbot-check-") as work:
            yield Path(work)
        return
    where = str(Path(corpus).expanduser().resolve())
    folder = Path(work_dir).expanduser() / f"{source_name(corpus)}-{hashlib.blake2b(where.encode(), digest_size=4).hexdigest()}"
    shutil.rmtree(folder / source_name(corpus), ignore_errors=True)
    folder.mkdir(parents=True, exist_ok=True)
    yield folder


def source_name(corpus: str | Path) -> str:
    return re.sub(r"[^a-z0-9_-]+", "-", Path(corpus).resolve().name.lower()).strip("-") or "corpus"


def check_settings(base, data_dir: Path, name: str, docs: Path, **changes: Any):
    """`base` (or the defaults, no environment read) with the corpus as the only source in
    `data_dir`, Wikipedia off, no rate limit, and `changes`."""
    from config.settings import load_settings

    env = {"RAVBOT_DATA_DIR": str(data_dir), "RAVBOT_SOURCES": f"{name}={docs}", "RAVBOT_WIKIPEDIA": "off",
           "RAVBOT_RATE_LIMIT_PER_MINUTE": "0", "RAVBOT_REINDEX_INTERVAL_MINUTES": "0"}
    if base is None:
        return load_settings(env=env, **changes)
    return base.replace(data_dir=str(data_dir), sources=f"{name}={docs}", source_table={}, wikipedia="off",
                        rate_limit_per_minute=0, reindex_interval_minutes=0, reindex_cron="", **changes)


def _build(settings):
    from bot.app import build

    return build(settings, run_scheduler=False)


def _index(settings, name: str, say: Progress) -> dict:
    app = _build(settings)
    try:
        start = time.perf_counter()
        counts = app.index_one(name)
        say(f"indexed {name}: {counts.get('added', 0)} documents in {time.perf_counter() - start:.1f} s"
            + (f"; skipped {counts['errors']}" if counts.get("errors") else ""))
        return counts
    finally:
        app.close()


# --------------------------------------------------------------------------- asking

def _ask(app, scripted, case: Mapping[str, Any]) -> dict[str, Any]:
    """Ask one case's question; the answer with its claims, verdicts and LLM request counts."""
    from adapters.render import footnote
    from pipeline.types import Question

    before = {k: scripted.count(case["id"], k) for k in ("draft", "correction")}
    start = time.perf_counter()
    answer = app.ask(Question(text=case["question"]))
    seconds = time.perf_counter() - start
    claims = [{"text": v.claim.text, "label": v.label.value, "confidence": round(float(v.confidence), 4),
               "conflict": v.conflict, "unstated": v.unstated, "evidence": v.sentence,
               "footnote": footnote(v) if v.flagged else ""} for v in answer.verdicts]
    return {"id": case["id"], "question": case["question"], "error_type": case.get("error_type", "out_of_scope"),
            "out_of_scope": bool(case.get("out_of_scope")), "answer": answer.text, "draft": answer.draft,
            "idk": answer.idk, "error": answer.error, "seconds": round(seconds, 4),
            "timings": {k: round(v, 2) for k, v in answer.timings.items()},
            "llm_drafts": scripted.count(case["id"], "draft") - before["draft"],
            "llm_corrections": scripted.count(case["id"], "correction") - before["correction"],
            "claims": claims}


def _to_correct(draft: Mapping[str, Any]) -> bool:
    """Whether the pipeline sends this draft back to the LLM: a claim is flagged
    (pipeline.correct.needs_correction). A draft with none is not asked again in the correction
    pass: its answer would stay the draft, wrong sentence included."""
    return any(c["label"] != "SUPPORTED" for c in draft["claims"])


def _score(record: dict[str, Any], case: Mapping[str, Any], run: str) -> dict[str, Any]:
    """Add each claim's sentence and the wrong (or, in the faithful run, its twin) sentence's fate."""
    if record["out_of_scope"]:
        return record
    given = case["faithful" if run == "faithful" else "corrupted"]
    sentences = split_sentences(given)
    bi = bad_index(case)
    for claim, index in zip(record["claims"], assign([c["text"] for c in record["claims"]], sentences), strict=True):
        claim["sentence"] = index
        claim["on_bad"] = index == bi
    mine = [c for c in record["claims"] if c["on_bad"]]
    record["bad_index"] = bi
    record["target_checked"] = bool(mine)
    record["target_flagged"] = any(c["label"] != "SUPPORTED" for c in mine)
    record["target_contradicted"] = any(c["label"] == "CONTRADICTED" for c in mine)
    record["other_flags"] = sum(c["label"] != "SUPPORTED" for c in record["claims"] if not c["on_bad"])
    value = case.get("true_value") or ""
    flagged = [c for c in mine if c["label"] != "SUPPORTED"]
    record["true_value_in_conflict"] = any(quotes_value(c["conflict"], value) for c in flagged)
    record["true_value_in_footnote"] = any(quotes_value(c["footnote"], value) for c in flagged)
    if run == "correction":
        record["corrected"] = (not record["idk"] and not record["error"]
                               and not holds_sentence(record["answer"], case["bad_sentence"])
                               and not any(c["label"] != "SUPPORTED" for c in record["claims"]))
    return record


def run_check(cases: Sequence[Mapping[str, Any]], corpus: str | Path, methods: Sequence[str] = ("cosine", "default"),
              base_settings=None, progress: Progress | None = None,
              dump: Callable[[dict], None] | None = None, work_dir: str | Path | None = None) -> dict[str, Any]:
    """Index `corpus` once, then per method the faithful, corrupted and correction passes; the summary.
    (`work_dir`: see `corpus_work`.)"""
    from lab.scripted_llm import ScriptedLLM

    say = progress or (lambda _msg: None)
    in_scope = [c for c in cases if not c.get("out_of_scope")]
    by_id = {c["id"]: c for c in cases}
    records: list[dict[str, Any]] = []
    with corpus_work(corpus, work_dir) as work_path, ScriptedLLM(cases) as scripted:
        name = source_name(corpus)
        docs = work_path / name
        say(f"copied {copy_corpus(corpus, docs)} documents of {corpus}")
        llm = {"llm_base_url": scripted.url, "llm_model": "scripted", "llm_api_key": "scripted", "llm_retries": 0}
        settings = {m: check_settings(base_settings, work_path / "data", name, docs, verify_method=m, **llm)
                    for m in methods}
        _index(settings[methods[0]], name, say)
        for method in methods:
            drafts: dict[str, dict[str, Any]] = {}
            for run, rounds in (("faithful", 0), ("corrupted", 0), ("correction", 1)):
                scripted.set_mode("faithful" if run == "faithful" else "corrupted")
                asked = cases if run == "faithful" else in_scope
                app = _build(settings[method].replace(correction_rounds=rounds))
                try:
                    for n, case in enumerate(asked, start=1):
                        draft = drafts.get(case["id"])
                        if run == "correction" and draft and not _to_correct(draft):
                            # nothing in the draft is sent for correction, so the answer stays the draft
                            record = draft | {"run": run, "asked": False, "corrected": False, "llm_drafts": 0}
                        else:
                            record = _score(_ask(app, scripted, case), case, run) | {"method": method, "run": run}
                        if run == "corrupted":
                            drafts[case["id"]] = record
                        records.append(record)
                        if dump:
                            dump(record)
                        if n % 10 == 0 or n == len(asked):
                            say(f"{method} {run}: {n}/{len(asked)}")
                finally:
                    app.close()
        summary = summarise(records, by_id, methods)
        summary |= {"corpus": str(corpus), "cases": len(cases), "in_scope": len(in_scope),
                    "out_of_scope": len(cases) - len(in_scope), "llm_requests": dict(scripted.kinds())}
    return summary


# --------------------------------------------------------------------------- figures

def _ratio(k: int, n: int) -> dict[str, Any]:
    return {"k": k, "n": n, "share": round(k / n, 4) if n else None}


def _type_figures(rows: dict[str, list[dict]], error_type: str | None) -> dict[str, Any]:
    pick = {run: [r for r in rows[run] if not r["out_of_scope"] and error_type in (None, r["error_type"])]
            for run in RUNS}
    faithful, corrupted, corrected = pick["faithful"], pick["corrupted"], pick["correction"]
    twin_ok = {r["id"]: r["target_checked"] and not r["target_flagged"] for r in faithful}
    values = [r for r in corrupted if r["error_type"] in VALUE_TYPES]
    claims = [c for r in faithful for c in r["claims"]]
    out = {
        "cases": len(corrupted),
        "faithful_claims_flagged": _ratio(sum(c["label"] != "SUPPORTED" for c in claims), len(claims)),
        "faithful_answers_flagged": _ratio(sum(any(c["label"] != "SUPPORTED" for c in r["claims"]) for r in faithful), len(faithful)),
        "good_sentence_flagged": _ratio(sum(r["target_flagged"] for r in faithful), len(faithful)),
        "bad_flagged": _ratio(sum(r["target_flagged"] for r in corrupted), len(corrupted)),
        "bad_contradicted": _ratio(sum(r["target_contradicted"] for r in corrupted), len(corrupted)),
        "bad_never_checked": _ratio(sum(not r["target_checked"] for r in corrupted), len(corrupted)),
        "bad_supported": _ratio(sum(r["target_checked"] and not r["target_flagged"] for r in corrupted), len(corrupted)),
        "other_claims_flagged": _ratio(sum(r["other_flags"] for r in corrupted),
                                       sum(not c["on_bad"] for r in corrupted for c in r["claims"])),
        "clean_catches": _ratio(sum(r["target_flagged"] and twin_ok.get(r["id"], False) for r in corrupted), len(corrupted)),
        "correction_success": _ratio(sum(r["corrected"] for r in corrected), len(corrected)),
        "in_scope_refused": _ratio(sum(r["idk"] for r in faithful), len(faithful)),
    }
    if error_type in (None, *VALUE_TYPES):
        out["true_value_in_conflict"] = _ratio(sum(r["true_value_in_conflict"] for r in values), len(values))
        out["true_value_in_footnote"] = _ratio(sum(r["true_value_in_footnote"] for r in values), len(values))
    return out


def summarise(records: Sequence[dict[str, Any]], cases: Mapping[str, Mapping[str, Any]],
              methods: Sequence[str]) -> dict[str, Any]:
    """Per method: figures per error type and overall, refusals and timings (see the README)."""
    out: dict[str, Any] = {"methods": {}}
    for method in methods:
        rows = {run: [r for r in records if r["method"] == method and r["run"] == run] for run in RUNS}
        present = [t for t in ERROR_TYPES if any(r["error_type"] == t for r in rows["corrupted"])]
        oos = [r for r in rows["faithful"] if r["out_of_scope"]]
        detection = rows["faithful"] + rows["corrupted"]
        per_claim = [r["timings"].get("verify", 0.0) / len(r["claims"]) for r in detection if r["claims"]]
        out["methods"][method] = {
            "by_type": {t: _type_figures(rows, t) for t in present},
            "overall": _type_figures(rows, None),
            "out_of_scope_refused_before_llm": _ratio(sum(r["idk"] and r["llm_drafts"] == 0 for r in oos), len(oos)),
            "out_of_scope_refused": _ratio(sum(r["idk"] for r in oos), len(oos)),
            "seconds_per_question_p50": round(statistics.median(r["seconds"] for r in detection), 3) if detection else None,
            "verify_ms_per_claim_p50": round(statistics.median(per_claim), 1) if per_claim else None,
            "claims_per_answer_mean": round(statistics.mean(len(r["claims"]) for r in detection), 2) if detection else None,
        }
    return out


# --------------------------------------------------------------------------- extractive answers

def answer_units(text: str) -> list[str]:
    """The answer's sentences for the extractive checks: the text between citation markers
    (`Sentence. [1] Next one. [2]`), citations removed, whitespace collapsed."""
    return [u for u in (" ".join(p.split()) for p in _CITATION_RUN.split(text or "")) if u]


def plain(unit: str) -> str:
    """`unit` without Markdown decoration: `[text](url)` → text, emphasis markers (`*`, `_` at word
    edges), a leading blockquote `>` and table pipes removed (snake_case names are kept)."""
    text = _MD_LINK_TEXT.sub(r"\1", unit)
    text = re.sub(r"(?<!\w)[*_]+|[*_]+(?!\w)", "", text)
    text = re.sub(r"^\s*>\s?", "", text)
    return " ".join(text.replace("|", " ").split())


def is_fragment(unit: str) -> bool:
    """A sentence fragment: once Markdown decoration is removed (`plain`; raw links are counted on
    their own), it does not start with an upper-case letter, a digit, a quote or a backtick, or
    does not end with `.`, `!`, `?` or `:` (closing quotes or brackets may follow) or a closing quote."""
    text = plain(unit)
    return not (_STARTS_OK.match(text) and _ENDS_OK.search(text))


def has_duplicate(units: Sequence[str]) -> bool:
    """Two sentences whose token sets have a Jaccard similarity of at least 0.9, or one of at
    least 5 tokens whose tokens are, to 90% or more, in another (a copy cut from chunk overlap)."""
    sets = [set(tokens(u)) for u in units]

    def same(a: set, b: set) -> bool:
        small = min(a, b, key=len)
        return bool(a and b) and (len(a & b) / len(a | b) >= DUPLICATE_JACCARD
                                  or (len(small) >= 5 and len(a & b) / len(small) >= DUPLICATE_JACCARD))

    return any(same(a, b) for i, a in enumerate(sets) for b in sets[i + 1:])


_FENCED = re.compile(r"^[ \t]*(`{3,}|~{3,})[^\n]*\n.*?^[ \t]*\1[ \t]*$", re.S | re.M)


def prose(text: str) -> str:
    """`text` without its fenced code blocks: a how-to answer's code example is shown as code, so
    its lines are neither sentences nor site markup (Jinja's `{{ }}` in a template example is code)."""
    return _FENCED.sub("", text)


def extractive_flags(text: str) -> dict[str, bool]:
    text = prose(text)
    units = answer_units(text)
    return {"fragment": any(is_fragment(u) for u in units), "duplicate": has_duplicate(units),
            "template": any(t in text for t in _TEMPLATE), "markdown_link": bool(_MD_LINK.search(text))}


def posted_markdown_link(answer) -> bool:
    """Whether a raw Markdown link reaches a user as posted: in the Slack message (whose renderer
    writes links as `<url|text>`) or in the terminal's text ("text (url)"). `answer.text` keeps
    Markdown on purpose; each platform converts it."""
    from adapters.render import to_text
    from adapters.slack import render_answer

    return bool(_MD_LINK.search(render_answer(answer)[1]) or _MD_LINK.search(to_text(answer)))


def run_extractive(cases: Sequence[Mapping[str, Any]], corpus: str | Path, base_settings=None,
                   progress: Progress | None = None, dump: Callable[[dict], None] | None = None,
                   work_dir: str | Path | None = None) -> dict[str, Any]:
    """Index `corpus` once and ask every question with no LLM (the configured verifier and
    correction stay on, as a newcomer runs it); what the posted answers hold. (`work_dir`: see
    `corpus_work`.)"""
    say = progress or (lambda _msg: None)
    records = []
    with corpus_work(corpus, work_dir) as work_path:
        name = source_name(corpus)
        docs = work_path / name
        say(f"copied {copy_corpus(corpus, docs)} documents of {corpus}")
        settings = check_settings(base_settings, work_path / "data", name, docs, llm_base_url="")
        _index(settings, name, say)
        app = _build(settings)
        try:
            from pipeline.answer import question_hits
            from pipeline.types import Question

            for n, case in enumerate(cases, start=1):
                start = time.perf_counter()
                answer = app.ask(Question(text=case["question"]))
                seconds = time.perf_counter() - start
                value = case.get("true_value") or ""
                retrieved = value and not answer.idk and any(
                    quotes_value(h.chunk.context_text, value) or quotes_value(h.chunk.text, value)
                    for h in question_hits(answer.question, app.parts))
                record = {"id": case["id"], "question": case["question"], "run": "extractive",
                          "error_type": case.get("error_type", "out_of_scope"), "out_of_scope": bool(case.get("out_of_scope")),
                          "answer": answer.text, "idk": answer.idk, "error": answer.error, "seconds": round(seconds, 4),
                          "value_found": quotes_value(answer.text, value) if value else None,
                          "value_retrieved": bool(retrieved) if value else None,
                          "flags": [v.label.value for v in answer.verdicts],
                          **({} if answer.idk else extractive_flags(answer.text)),
                          **({} if answer.idk else {"posted_markdown_link": posted_markdown_link(answer)})}
                records.append(record)
                if dump:
                    dump(record)
                if n % 10 == 0 or n == len(cases):
                    say(f"extractive: {n}/{len(cases)}")
        finally:
            app.close()
    return summarise_extractive(records) | {"corpus": str(corpus)}


def summarise_extractive(records: Iterable[dict[str, Any]]) -> dict[str, Any]:
    records = list(records)
    inside = [r for r in records if not r["out_of_scope"]]
    outside = [r for r in records if r["out_of_scope"]]
    valued = [r for r in inside if r["value_found"] is not None]
    answered = [r for r in inside if not r["idk"]]
    return {
        "mode": "extractive", "in_scope": len(inside), "out_of_scope": len(outside),
        "value_found": _ratio(sum(bool(r["value_found"]) for r in valued), len(valued)),
        # the value was in a chunk the answer was drawn from: what is left to the choice of sentences
        "value_retrieved": _ratio(sum(bool(r.get("value_retrieved")) for r in valued), len(valued)),
        **{key: _ratio(sum(bool(r.get(key)) for r in answered), len(inside))
           for key in ("fragment", "duplicate", "template", "markdown_link", "posted_markdown_link")},
        "out_of_scope_refused": _ratio(sum(r["idk"] for r in outside), len(outside)),
        "in_scope_refused": _ratio(sum(r["idk"] for r in inside), len(inside)),
        "seconds_p50": round(statistics.median(r["seconds"] for r in records), 3) if records else None,
    }
