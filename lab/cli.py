"""The lab's commands: `ravbot eval …` (each a readable table or, with `--json`, one JSON object) and
`ravbot train-combiner` / `train-verifier`. `bot.__main__` loads this module only when one of them runs.

Thin wrappers over the lab: read the data set (`lab.datasets`), build the verifiers or the corpus
index, run (`lab.runners`), print. Progress and notes go to stderr so that stdout stays one JSON object.
"""

from __future__ import annotations

import json
import random
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import click

from lab.datasets import (
    load_golden,
    load_halueval,
    load_pairs,
    load_perturbed,
    load_qrels,
    load_queries,
    pair_record,
    write_jsonl,
)
from lab.perturb import perturbation_set
from lab.plots import plot_latency, plot_scores
from lab.runners import (
    METHODS,
    VARIANTS,
    Verifier,
    corpus_store,
    make_verifier,
    oracle_evidence,
    retrieved_evidence,
    run_answers,
    run_golden,
    run_perturb,
    run_retrieval,
    run_verify,
)

DATASET = click.Choice(["scifact", "climate-fever", "healthver", "covidfact", "wice", "perturbed"])


def _settings(ctx: click.Context):
    """The settings the `ravbot` group resolved (ctx.obj), or the defaults + environment."""
    obj = ctx.find_root().obj
    found = obj.get("settings") if isinstance(obj, dict) else obj
    if found is not None and hasattr(found, "data_path"):
        return found
    from config.settings import load_settings

    return load_settings()


def _embedder(settings):
    """The embedder as `bot.app.build` makes it: the same model, backend, sentence cache and CPU threads."""
    from bot.app import apply_threads, build_embedder

    apply_threads(settings)
    return build_embedder(settings)


def _names(value: str, allowed: Sequence[str], what: str) -> list[str]:
    names = [v.strip() for v in value.split(",") if v.strip()]
    bad = [n for n in names if n not in allowed]
    if bad or not names:
        raise click.BadParameter(f"unknown {what} {', '.join(bad) or '(none)'}; expected some of {', '.join(allowed)}")
    return names


def _sample(items: list, limit: int | None, seed: int) -> list:
    """At most `limit` items, a seeded random sample in the original order."""
    if not limit or limit >= len(items):
        return items
    keep = sorted(random.Random(seed).sample(range(len(items)), limit))
    return [items[i] for i in keep]


def _progress(label: str):
    def report(done: int, total: int) -> None:
        if done == total or done % 250 == 0:
            click.echo(f"\r{label}: {done}/{total}", err=True, nl=done == total)

    return report


def _fmt(value: Any) -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:.3f}" if abs(value) < 10 else f"{value:.0f}"
    return str(value)


def table(rows: Sequence[Sequence[Any]], header: Sequence[str]) -> str:
    """A plain aligned text table."""
    cells = [list(map(str, header))] + [[_fmt(v) for v in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    lines = ["  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths, strict=True)))
             for r in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def _emit(summary: dict, as_json: bool, text: str) -> None:
    click.echo(json.dumps(summary, ensure_ascii=False) if as_json else text)


def _verifiers(methods: list[str], settings) -> dict[str, Verifier]:
    embedder = _embedder(settings)
    return {m: make_verifier(m, embedder, settings) for m in methods}


def _verify_table(summary: dict) -> str:
    rows = [(m, r["balanced_accuracy"], r["supported_precision"], r["supported_recall"], r["flag_recall"],
             r["p50_ms"], r["p95_ms"]) for m, r in summary["methods"].items()]
    out = [table(rows, ["method", "bal.acc", "P(sup)", "R(sup)", "flag recall", "p50 ms", "p95 ms"])]
    for m, r in summary["methods"].items():
        labels = ("SUPPORTED", "UNCERTAIN", "UNSUPPORTED", "CONTRADICTED")
        out.append(f"\n{m}: confusion (gold × verdict)\n" + table(
            [(gold, *(counts.get(label, 0) for label in labels)) for gold, counts in r["confusion"].items()],
            ["gold", *labels]))
    return "\n".join(out) + f"\n\n{summary['pairs']} pairs"


class _EvalGroup(click.Group):
    """Bad data (a malformed file, an unknown label) ends the command with one clear line."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except (ValueError, OSError) as e:
            raise click.ClickException(str(e)) from e


@click.group("eval", cls=_EvalGroup)
def eval_group() -> None:
    """Measure each stage apart on real data: retrieval, verification, perturbations, answers, golden sets."""


@eval_group.command("retrieval")
@click.option("--corpus", required=True, type=click.Path(exists=True, dir_okay=False), help="SciFact corpus.jsonl or BEIR corpus.jsonl.")
@click.option("--queries", required=True, type=click.Path(exists=True, dir_okay=False), help="SciFact claims or BEIR queries.jsonl.")
@click.option("--qrels", required=True, type=click.Path(exists=True, dir_okay=False), help="BEIR qrels TSV (query-id corpus-id score).")
@click.option("--variants", default=",".join(VARIANTS), show_default=True)
@click.option("--depth", default=400, show_default=True, help="Chunks retrieved for Recall@100 (documents have several chunks).")
@click.option("--candidates", type=int, default=None, help="Candidates per ranker before fusion (default: the `candidates` setting).")
@click.option("--limit", type=int, default=None, help="Evaluate a seeded sample of this many queries.")
@click.option("--seed", default=0, show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@click.option("--plot", "plot_dir", type=click.Path(file_okay=False), default=None, help="Save latency.png here.")
@click.pass_context
def retrieval_cmd(ctx, corpus, queries, qrels, variants, depth, candidates, limit, seed, as_json, plot_dir) -> None:
    """nDCG@10, Recall@5/20/100, MRR@10 and query latency per retrieval variant, in one run."""
    settings = _settings(ctx)
    names = _names(variants, VARIANTS, "variant")
    embedder = _embedder(settings)
    store, _, doc_of = corpus_store(corpus, embedder, settings, progress=_progress("indexing"))
    judged = load_qrels(qrels)
    qs = dict(_sample([(q, t) for q, t in load_queries(queries).items() if q in judged], limit, seed))
    try:
        summary, rows = run_retrieval(store, embedder, settings, qs, judged, variants=names,
                                      doc_of=lambda d: doc_of.get(d, d), depth=depth, candidates=candidates)
    finally:
        store.close()
    metrics = ["ndcg@10", "recall@5", "recall@20", "recall@100", "mrr@10", "p50_ms", "p95_ms"]
    text = table([(v, *(r[m] for m in metrics)) for v, r in summary["variants"].items()], ["variant", *metrics])
    _emit(summary, as_json, text + f"\n\n{summary['queries']} queries")
    if plot_dir:
        plot_latency({v: [r["ms"] for r in rows if r["variant"] == v] for v in names},
                     Path(plot_dir) / "retrieval_latency.png", "query latency per retrieval variant")


@eval_group.command("verify")
@click.option("--dataset", required=True, type=DATASET)
@click.option("--path", required=True, type=click.Path(exists=True, dir_okay=False))
@click.option("--corpus", type=click.Path(exists=True, dir_okay=False), default=None,
              help="SciFact: the corpus (rationale sentences; needed for --evidence retrieved).")
@click.option("--methods", default="cosine,default", show_default=True)
@click.option("--evidence", "evidence_mode", type=click.Choice(["oracle", "retrieved"]), default="oracle", show_default=True,
              help="oracle = the gold evidence sentences; retrieved = what ravbot retrieves from --corpus.")
@click.option("--with-nei", is_flag=True, help="Keep not-enough-info pairs (they count as not supported).")
@click.option("--limit", type=int, default=None, help="Evaluate a seeded sample of this many pairs.")
@click.option("--seed", default=0, show_default=True)
@click.option("--json", "as_json", is_flag=True)
@click.option("--plot", "plot_dir", type=click.Path(file_okay=False), default=None, help="Save score and latency PNGs here.")
@click.pass_context
def verify_cmd(ctx, dataset, path, corpus, methods, evidence_mode, with_nei, limit, seed, as_json, plot_dir) -> None:
    """Claim verification against gold (or retrieved) evidence, per method."""
    settings = _settings(ctx)
    names = _names(methods, METHODS, "method")
    pairs = [p for p in load_pairs(dataset, path, corpus) if with_nei or p.label != "nei"]
    pairs = _sample(pairs, limit, seed)
    evidence_for = oracle_evidence
    store = None
    if evidence_mode == "retrieved":
        if not corpus:
            raise click.UsageError("--evidence retrieved needs --corpus (a SciFact or BEIR corpus to retrieve from)")
        store, _, _ = corpus_store(corpus, _embedder(settings), settings, progress=_progress("indexing"))
        evidence_for = retrieved_evidence(store, _embedder(settings), settings)
    try:
        summary, records = run_verify(pairs, _verifiers(names, settings), evidence_for=evidence_for, with_nei=with_nei)
    finally:
        if store is not None:
            store.close()
    _emit(summary, as_json, f"{dataset} ({evidence_mode} evidence)\n" + _verify_table(summary))
    if plot_dir:
        plot_scores(records, Path(plot_dir) / f"verify_{dataset}_scores.png", f"{dataset}: confidence by gold label")
        plot_latency({m: [r["ms"] for r in records if r["method"] == m] for m in names},
                     Path(plot_dir) / f"verify_{dataset}_latency.png", "per-claim verification latency")


@eval_group.command("perturb")
@click.option("--dataset", type=DATASET, default=None, help="Derive the set from this data set's supported claims.")
@click.option("--path", type=click.Path(exists=True, dir_okay=False), default=None)
@click.option("--corpus", type=click.Path(exists=True, dir_okay=False), default=None, help="SciFact corpus (rationale sentences).")
@click.option("--from", "from_file", type=click.Path(exists=True, dir_okay=False), default=None, help="Evaluate a saved set (JSONL).")
@click.option("--write", "write_file", type=click.Path(dir_okay=False), default=None, help="Save the derived set as JSONL.")
@click.option("--write-only", is_flag=True, help="With --write: save the set and stop.")
@click.option("--methods", default="cosine,default", show_default=True)
@click.option("--limit", type=int, default=None, help="Use a seeded sample of this many supported pairs.")
@click.option("--seed", default=0, show_default=True)
@click.option("--json", "as_json", is_flag=True)
@click.option("--plot", "plot_dir", type=click.Path(file_okay=False), default=None)
@click.pass_context
def perturb_cmd(ctx, dataset, path, corpus, from_file, write_file, write_only, methods, limit, seed, as_json, plot_dir) -> None:
    """Change one number, date or named entity of supported claims; how many still pass as SUPPORTED?"""
    settings = _settings(ctx)
    names = _names(methods, METHODS, "method")
    if from_file:
        pairs = _sample(load_perturbed(from_file), limit, seed)
    elif dataset and path:
        supported = [p for p in load_pairs(dataset, path, corpus) if p.label == "supported" and p.evidence]
        pairs = perturbation_set(_sample(supported, limit, seed), seed=seed)
    else:
        raise click.UsageError("give --from FILE, or --dataset and --path")
    if write_file:
        n = write_jsonl(write_file, (pair_record(p) for p in pairs))
        click.echo(f"wrote {n} pairs to {write_file}", err=True)
        if write_only:
            return
    summary, records = run_perturb(pairs, _verifiers(names, settings))
    rows = [(m, r["perturbed_supported"], r["original_supported"],
             *(r["perturbed_supported_by_kind"].get(k) for k in ("number", "date", "entity")),
             r["checkable_perturbed_supported"], r["checkable_original_supported"], r["p50_ms"])
            for m, r in summary["methods"].items()]
    text = table(rows, ["method", "perturbed→SUP", "original→SUP", "number", "date", "entity",
                        "checkable perturbed→SUP", "checkable original→SUP", "p50 ms"])
    counts = summary["checkable"]
    text += (f"\n\n{summary['pairs']} pairs (perturbed→SUP: lower is better; original→SUP: higher). Checkable: "
             f"{counts['perturbed']} changes of a value the evidence states, {counts['original']} originals whose every change is.")
    bound = summary["kept_bound"]
    if bound:
        text += (f"\n{bound['unstated_number_changes']} of {bound['changes']} changes replace a number the evidence never states "
                 f"with another it never states: a verifier that cannot tell those apart keeps at most "
                 f"{bound['best_kept']:.3f} of originals while passing at most {bound['passed']:.0%} of changes.")
    _emit(summary, as_json, text)
    if plot_dir:
        plot_scores(records, Path(plot_dir) / "perturb_scores.png", "originals (supported) vs one-value changes (refuted)")


@eval_group.command("answers")
@click.option("--dataset", type=click.Choice(["halueval"]), default="halueval", show_default=True)
@click.option("--path", required=True, type=click.Path(exists=True, dir_okay=False))
@click.option("--method", type=click.Choice(list(METHODS)), default="default", show_default=True)
@click.option("--limit", type=int, default=None, help="Use a seeded sample of this many rows.")
@click.option("--seed", default=0, show_default=True)
@click.option("--json", "as_json", is_flag=True)
@click.pass_context
def answers_cmd(ctx, dataset, path, method, limit, seed, as_json) -> None:
    """End to end on HaluEval: is the hallucinated answer flagged and the right one not?"""
    settings = _settings(ctx)
    rows = _sample(load_halueval(path), limit, seed)
    embedder = _embedder(settings)
    with tempfile.TemporaryDirectory(prefix="ravbot-halueval-") as work:
        summary, _ = run_answers(rows, make_verifier(method, embedder, settings), embedder, settings, workdir=work)
    table_rows = [(f"{form} / {subset}", r["pairs"], r.get("hallucinated_flagged"), r.get("right_flagged"),
                   r.get("told_apart"), r.get("p50_ms"))
                  for form, subsets in summary["forms"].items() for subset, r in subsets.items()]
    text = table(table_rows, ["answer form / pairs", "n", "halluc. flagged", "right flagged", "told apart", "p50 ms"])
    _emit(summary | {"method": method}, as_json, text + f"\n\n{summary['pairs']} rows, method {method}")


@eval_group.command("golden")
@click.option("--file", "golden_file", required=True, type=click.Path(exists=True, dir_okay=False),
              help='JSONL: {"question", "relevant": [ids, paths or URLs], "expected_answer"?}')
@click.option("--k", type=int, default=None, help="Recall@k (default: the top_k setting).")
@click.option("--no-answers", is_flag=True, help="Only measure retrieval; do not ask for answers.")
@click.option("--json", "as_json", is_flag=True)
@click.pass_context
def golden_cmd(ctx, golden_file, k, no_answers, as_json) -> None:
    """A team's golden set against the current index: Recall@k and the "I don't know" rate."""
    settings = _settings(ctx)
    rows = load_golden(golden_file)
    from bot.app import build, build_cross_encoder, build_store

    core = None if no_answers else build(settings, run_scheduler=False)
    parts = getattr(core, "parts", None)
    store = parts.store if parts else build_store(settings)
    embedder = parts.embedder if parts else _embedder(settings)
    cross_encoder = parts.cross_encoder if parts else build_cross_encoder(settings)
    try:
        summary, records = run_golden(rows, core, store, embedder, settings, k=k, cross_encoder=cross_encoder)
    finally:
        if core is not None:
            core.close()
        else:
            store.close()
    kk = k or settings.top_k
    text = table([(r["question"][:60], r["found"], r["relevant"], r["idk"]) for r in records],
                 ["question", "found", "relevant", "idk"])
    text += f"\n\nRecall@{kk}: {_fmt(summary[f'recall@{kk}'])}   I-don't-know rate (answer exists): {_fmt(summary['idk_rate'])}"
    _emit(summary, as_json, text)



_CHECK_COLUMNS = (  # (header, figure key) of the `eval check` table
    ("n", None), ("faith.claims flagged", "faithful_claims_flagged"), ("faith.answers flagged", "faithful_answers_flagged"),
    ("good flagged", "good_sentence_flagged"), ("bad flagged", "bad_flagged"), ("CONTRA", "bad_contradicted"),
    ("never checked", "bad_never_checked"), ("bad SUP", "bad_supported"), ("other flagged", "other_claims_flagged"),
    ("clean", "clean_catches"), ("value in conflict", "true_value_in_conflict"),
    ("value in footnote", "true_value_in_footnote"), ("corrected", "correction_success"),
)


def _kn(figure: dict | None) -> str:
    if not figure or figure.get("n") is None:
        return "–"
    return f"{figure['k']}/{figure['n']}" + (f" {figure['share']:.0%}" if figure["n"] else "")


def check_table(summary: dict) -> str:
    """The `eval check` summary as text: one row per error type and method, then refusals and timings."""
    methods = summary["methods"]
    kinds = list(dict.fromkeys(t for m in methods.values() for t in m["by_type"])) + ["overall"]
    rows = []
    for kind in kinds:
        for name, m in methods.items():
            figures = m["overall"] if kind == "overall" else m["by_type"].get(kind)
            if figures:
                rows.append((f"{kind} {name}", figures["cases"], *(_kn(figures.get(key)) for _, key in _CHECK_COLUMNS[1:])))
    out = [table(rows, ["type method", *(h for h, _ in _CHECK_COLUMNS)])]
    out.append("\n" + table([(name, _kn(m["out_of_scope_refused_before_llm"]), _kn(m["out_of_scope_refused"]),
                               _kn(m["overall"]["in_scope_refused"]), m["seconds_per_question_p50"],
                               m["verify_ms_per_claim_p50"], m["claims_per_answer_mean"])
                              for name, m in methods.items()],
                             ["method", "out-of-scope refused before LLM", "out-of-scope refused", "in-scope refused",
                              "s/question p50", "verify ms/claim p50", "claims/answer"]))
    out.append(f"\n{summary['corpus']}: {summary['in_scope']} in-scope cases, {summary['out_of_scope']} out-of-scope; "
               "claims are the drafts' (first verification); 'corrected' = one correction round.")
    return "\n".join(out)


def extractive_table(summary: dict) -> str:
    keys = ("value_found", "value_retrieved", "fragment", "duplicate", "template", "markdown_link", "posted_markdown_link",
            "out_of_scope_refused", "in_scope_refused")
    row = (Path(summary["corpus"]).name, *(_kn(summary[k]) for k in keys), summary["seconds_p50"])
    return table([row], ["corpus", "number/name answer has value", "… value in its chunks", "with fragment", "with duplicate",
                         "with template syntax", "with raw Markdown link", "… as posted (Slack, terminal)",
                         "out-of-scope refused", "in-scope refused", "answer s p50"])


@eval_group.command("check")
@click.option("--cases", "cases_file", required=True, type=click.Path(exists=True, dir_okay=False),
              help="JSONL of answer-check cases (format: README, Evaluation).")
@click.option("--corpus", required=True, type=click.Path(exists=True, file_okay=False),
              help="Folder of the documents the cases are about (indexed as the only source).")
@click.option("--methods", default="cosine,default", show_default=True)
@click.option("--limit", type=int, default=None, help="At most this many cases per error type (and out-of-scope).")
@click.option("--extractive", is_flag=True, help="No LLM: check the extractive answers (values, fragments, duplicates, markup).")
@click.option("--dump", "dump_file", type=click.Path(dir_okay=False), default=None,
              help="Write one JSON line per question asked (claims, labels, conflicts, sentences).")
@click.option("--work-dir", type=click.Path(file_okay=False), default=None,
              help="Keep the corpus's copy and index in this folder between runs (a later run embeds only changed documents).")
@click.option("--json", "as_json", is_flag=True)
@click.pass_context
def check_cmd(ctx, cases_file, corpus, methods, limit, extractive, dump_file, work_dir, as_json) -> None:
    """Does the verifier flag the one wrong sentence of an answer and leave the right ones alone?"""
    from lab import check

    settings = _settings(ctx)
    names = _names(methods, METHODS, "method")
    cases = check.limit_cases(check.load_cases(cases_file), limit)
    out = Path(dump_file).open("w", encoding="utf-8") if dump_file else None

    def dump(record: dict) -> None:
        out.write(json.dumps(record, ensure_ascii=False) + "\n")
        out.flush()

    def say(message: str) -> None:
        click.echo(message, err=True)

    try:
        if extractive:
            summary = check.run_extractive(cases, corpus, settings, progress=say, dump=dump if out else None,
                                           work_dir=work_dir)
            _emit(summary, as_json, extractive_table(summary))
        else:
            summary = check.run_check(cases, corpus, names, settings, progress=say, dump=dump if out else None,
                                      work_dir=work_dir)
            _emit(summary, as_json, check_table(summary))
    finally:
        if out:
            out.close()


# ----------------------------------------------------------------------------------------- training


@click.command("train-combiner")
@click.option("--data", "data_dir", type=click.Path(file_okay=False), default=None, help="The shared/data folder.")
@click.option("--out", type=click.Path(dir_okay=False), default=None, help="Where to write the weights.")
@click.option("--seed", default=0, show_default=True)
def train_combiner(data_dir: str | None, out: str | None, seed: int) -> None:
    """Retrain the `default` verifier's combiner on the open data (see docs/verification.md)."""
    from lab import train_combiner as tc
    from pipeline.verify.combiner import COMBINER_PATH

    data = Path(data_dir) if data_dir else tc.DEFAULT_DATA
    figures = tc.train(data, Path(out) if out else COMBINER_PATH, seed=seed)
    click.echo(json.dumps(figures, indent=2, default=str))


@click.command("train-verifier")
@click.option("--data", "data_dir", type=click.Path(file_okay=False), default=None, help="The shared/data folder.")
@click.option("--out", "out_dir", type=click.Path(file_okay=True), default=None, help="Artifact folder (default: the shipped one).")
@click.option("--seed", default=0, show_default=True)
@click.option("--time-budget", "time_budget_s", default=4500, show_default=True, help="Training wall-clock budget in seconds.")
@click.option("--eval-every", "eval_every_s", default=900, show_default=True, help="Seconds between dev evaluations (checkpoints).")
@click.option("--hold-out", default="", help="Leave one open set out of training and report it (leave-one-domain-out).")
def train_verifier(data_dir: str | None, out_dir: str | None, seed: int, time_budget_s: int, eval_every_s: int, hold_out: str) -> None:
    """Train ravbot's cross-encoder verifier (LoRA over MiniLM); see docs/verifier.md."""
    from lab import train_verifier as tv
    from pipeline.verifier_model import VERIFIER_DIR

    data = Path(data_dir) if data_dir else tv.DEFAULT_DATA
    target = Path(out_dir) if out_dir else VERIFIER_DIR
    figures = tv.train(data, target, seed=seed, time_budget_s=time_budget_s, eval_every_s=eval_every_s, hold_out=hold_out)
    click.echo(json.dumps(figures, indent=2, default=str))


COMMANDS: dict[str, click.Command] = {"eval": eval_group, "train-combiner": train_combiner, "train-verifier": train_verifier}
