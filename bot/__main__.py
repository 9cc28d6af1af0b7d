"""The `ravbot` command line: index, ask, serve, status, feedback, eval, settings."""

from __future__ import annotations

import json
import logging
import sys

import click

from config.settings import SETTINGS, load_settings, markdown_table

log = logging.getLogger("ravbot")


def _settings(ctx: click.Context):
    return ctx.obj["settings"]


def _app(ctx: click.Context, run_scheduler: bool = False):
    """The command's Core, built once. `ctx.obj["parts"]`, when the caller gave one (e.g.
    `CliRunner().invoke(cli, args, obj={"parts": {"embedder": e}})`), holds parts passed to `build`."""
    from bot.app import build

    if "app" not in ctx.obj:
        ctx.obj["app"] = build(_settings(ctx), run_scheduler=run_scheduler, **ctx.obj.get("parts", {}))
        ctx.call_on_close(ctx.obj["app"].close)
    return ctx.obj["app"]


def _quiet_libraries() -> None:
    import os
    import warnings

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    warnings.filterwarnings("ignore")
    try:
        import transformers

        transformers.logging.set_verbosity_error()
        transformers.logging.disable_progress_bar()
    except ImportError:  # pragma: no cover
        pass
    for name in ("sentence_transformers", "httpx", "httpx2", "urllib3", "apscheduler"):
        logging.getLogger(name).setLevel(logging.WARNING)


# The lab's commands (lab/cli.py): loaded only when one of them runs, so that answering never imports
# the lab (nor scikit-learn or matplotlib). The one import of the lab from runtime code is in
# `RavbotGroup.get_command` (tests/test_layout.py allows exactly that one).
LAB_COMMANDS = ("eval", "train-combiner", "train-verifier")


class RavbotGroup(click.Group):
    """The `ravbot` group: its own commands, plus the lab's (`LAB_COMMANDS`), imported on first use."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted([*super().list_commands(ctx), *LAB_COMMANDS])

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name in LAB_COMMANDS:
            from lab.cli import COMMANDS

            return COMMANDS[name]
        return super().get_command(ctx, name)


@click.group(cls=RavbotGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--config", "config_file", type=click.Path(dir_okay=False), help="TOML settings file (also RAVBOT_CONFIG).")
@click.option("--data-dir", help="Override the data directory (also RAVBOT_DATA_DIR).")
@click.option("-v", "--verbose", is_flag=True, help="Log debug detail.")
@click.pass_context
def cli(ctx: click.Context, config_file: str | None, data_dir: str | None, verbose: bool) -> None:
    """ravbot answers questions from your documents and verifies every claim before posting."""
    try:
        overrides = {"data_dir": data_dir} if data_dir else {}
        settings = load_settings(config_file=config_file, **overrides)
    except ValueError as e:
        raise click.ClickException(str(e)) from None
    logging.basicConfig(level=logging.DEBUG if verbose else getattr(logging, str(settings.log_level).upper(), logging.INFO),
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s", stream=sys.stderr)
    _quiet_libraries()
    ctx.obj = {**(ctx.obj or {}), "settings": settings}


def _progress_bar(label: str):
    from tqdm import tqdm

    bar = {"t": None}

    def update(done: int, total: int) -> None:
        if bar["t"] is None:
            bar["t"] = tqdm(total=total, desc=label, unit="doc", file=sys.stderr, leave=False)
        bar["t"].n = done
        bar["t"].refresh()
        if done >= total:
            bar["t"].close()

    return update


@cli.command()
@click.argument("locations", nargs=-1)
@click.option("--source", "source_names", multiple=True, help="Index only this configured source (repeatable); with LOCATIONS, the name to index them under.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object with the counts.")
@click.pass_context
def index(ctx: click.Context, locations: tuple[str, ...], source_names: tuple[str, ...], as_json: bool) -> None:
    """Index the configured sources (or LOCATIONS: folders, files, URLs, sitemaps) incrementally."""
    app = _app(ctx)
    totals = {"added": 0, "changed": 0, "unchanged": 0, "removed": 0, "skipped": 0}
    errors: list[str] = []
    jobs: list[tuple[str, list[str] | None]]
    if locations:
        jobs = [(source_names[0] if source_names else "adhoc", list(locations))]
    else:
        names = list(source_names) or list(app.sources)
        jobs = [(name, None) for name in names]
    for name, locs in jobs:
        try:
            if locs is None:
                counts = app.reindexer.run_now(name, progress=None if as_json else _progress_bar(name))
            else:
                counts = app.index_locations(name, locs, progress=None if as_json else _progress_bar(name))
        except (ValueError, RuntimeError, OSError) as e:
            raise click.ClickException(str(e)) from None
        for key in totals:
            totals[key] += int(counts.get(key, 0))
        errors += counts.get("errors", [])
    if as_json:
        click.echo(json.dumps(totals))
        return
    for err in errors:
        click.echo(f"skipped: {err}", err=True)
    click.echo(", ".join(f"{v} {k}" for k, v in totals.items()))


@cli.command()
@click.argument("question", nargs=-1)
@click.option("--json", "as_json", is_flag=True, help="Print the answer as JSON (schema in the README).")
@click.option("--source", "sources", multiple=True, help="Only use documents of this source (repeatable).")
@click.option("--no-verify", is_flag=True, help="Skip claim verification.")
@click.pass_context
def ask(ctx: click.Context, question: tuple[str, ...], as_json: bool, sources: tuple[str, ...], no_verify: bool) -> None:
    """Answer QUESTION (or open an interactive prompt when none is given). Indexes first if the index is empty."""
    from adapters.cli import answer_to_json, answer_to_text
    from pipeline.store import StoreUnavailable
    from pipeline.types import Question

    if no_verify:
        ctx.obj["settings"] = _settings(ctx).replace(verify=False)
    app = _app(ctx)
    try:
        if app.parts.store.counts()["chunks"] == 0:
            click.echo("The index is empty: indexing the configured sources first...", err=True)
            for name in app.sources:
                counts = app.reindexer.run_now(name, progress=_progress_bar(name))
                click.echo(f"{name}: " + ", ".join(f"{counts[k]} {k}" for k in ("added", "changed", "unchanged", "removed", "skipped")), err=True)
    except (StoreUnavailable, ValueError) as e:
        raise click.ClickException(str(e)) from None

    def one(text: str) -> int:
        answer = app.ask(Question(text=text, sources=sources))
        if as_json:
            click.echo(json.dumps(answer_to_json(answer), ensure_ascii=False))
        elif answer.error:
            click.echo(f"Error: {answer.text}", err=True)  # one line on stderr
        else:
            click.echo(answer_to_text(answer))
        return 1 if answer.error else 0

    if question:
        text = " ".join(question)
        if text == "-":
            text = sys.stdin.read()
        if code := one(text):
            raise click.exceptions.Exit(code)
        return
    click.echo("Ask a question about your documents (empty line or Ctrl-D to quit).", err=True)
    while True:
        try:
            text = input("? ")
        except (EOFError, KeyboardInterrupt):
            break
        if not text.strip():
            break
        one(text)
        click.echo("")


@cli.command()
@click.pass_context
def status(ctx: click.Context) -> None:
    """Index size, sources, backends and the last reindex runs."""
    app = _app(ctx)
    info = app.status_info()
    info["runs"] = app.feedback.runs(limit=10)
    click.echo(json.dumps(info, indent=2, default=str))


@cli.command()
@click.option("--role", type=click.Choice(["all", "worker", "web"]), default="all", show_default=True,
              help="worker: Slack Socket Mode + Discord + scheduler; web: Slack HTTP mode on $PORT; all: everything configured.")
@click.pass_context
def serve(ctx: click.Context, role: str) -> None:
    """Run the configured platforms (Slack, Discord) and the reindex scheduler until stopped."""
    from bot.serve import run

    sys.exit(run(_settings(ctx), role))


@cli.group()
def feedback() -> None:
    """Answer and vote statistics; export of 👎 answers."""


@feedback.command("stats")
@click.option("--since", help="Only count answers since this date (YYYY-MM-DD) or ISO time.")
@click.option("--json", "as_json", is_flag=True)
@click.pass_context
def feedback_stats(ctx: click.Context, since: str | None, as_json: bool) -> None:
    from datetime import datetime

    from bot.feedback import FeedbackStore, format_stats

    try:
        when = datetime.fromisoformat(since) if since else None
    except ValueError:
        raise click.ClickException(f"--since {since!r} is not a date like 2026-01-31") from None
    store = FeedbackStore(_settings(ctx).data_path / "feedback.sqlite")
    try:
        stats = store.stats(since=when)
        click.echo(json.dumps(stats, indent=2, default=str) if as_json else format_stats(stats))
    finally:
        store.close()


@feedback.command("export")
@click.argument("path", type=click.Path(dir_okay=False))
@click.option("--since", help="Only answers since this date (YYYY-MM-DD).")
@click.pass_context
def feedback_export(ctx: click.Context, path: str, since: str | None) -> None:
    """Write 👎-voted answers to PATH as golden-set candidates (JSONL, for `ravbot eval golden`)."""
    from datetime import datetime

    from bot.feedback import FeedbackStore

    store = FeedbackStore(_settings(ctx).data_path / "feedback.sqlite")
    try:
        n = store.export_golden(path, since=datetime.fromisoformat(since) if since else None)
    finally:
        store.close()
    click.echo(f"wrote {n} golden-set candidates to {path}")


@cli.command("settings")
@click.option("--json", "as_json", is_flag=True)
@click.option("--markdown", is_flag=True, help="Print the README's settings table (defaults, not current values).")
@click.pass_context
def show_settings(ctx: click.Context, as_json: bool, markdown: bool) -> None:
    """Show every setting's current value (secrets redacted)."""
    if markdown:
        click.echo(markdown_table())
        return
    values = _settings(ctx).as_dict()
    if as_json:
        click.echo(json.dumps(values, indent=2))
        return
    for s in SETTINGS:
        click.echo(f"{s.name} = {values[s.name]!r}")


def main() -> None:
    cli(prog_name="ravbot")


if __name__ == "__main__":
    main()
