"""The `ravbot` CLI through click's runner: the bundled docs answer out of the box, JSON schemas, errors.

The README's question runs on the real model (`run_real`, slow); the other commands on the
deterministic fake embedder, passed to `bot.app.build` through click's `obj` (`run`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from bot.__main__ import cli

CLEAN_ENV = {"RAVBOT_CONFIG": None, "RAVBOT_SOURCES": None, "RAVBOT_LLM_BASE_URL": None, "OPENAI_BASE_URL": None,
             "SLACK_BOT_TOKEN": None, "RAVBOT_WIKIPEDIA": "off"}


def invoker(data: Path, parts: dict):
    """`ravbot` with `data` as its data dir and `parts` passed to `bot.app.build`."""
    def invoke(*args: str, input: str | None = None, env: dict | None = None):
        return CliRunner(env={**CLEAN_ENV, **(env or {})}).invoke(
            cli, ["--data-dir", str(data), *args], input=input, catch_exceptions=False, obj={"parts": parts})

    return invoke


@pytest.fixture(scope="module")
def run(tmp_path_factory, fake_embedder):
    """Invoke `ravbot` with one data dir for the module, on the fake embedder; the bundled docs are
    indexed first, as the first `ask` of a fresh install does."""
    invoke = invoker(tmp_path_factory.mktemp("cli") / "data", {"embedder": fake_embedder})
    assert invoke("index", "--json").exit_code == 0
    return invoke


@pytest.fixture(scope="module")
def run_real(tmp_path_factory, embedder):
    """Invoke `ravbot` as installed: the real model, its own data dir."""
    return invoker(tmp_path_factory.mktemp("cli-real") / "data", {})


@pytest.mark.slow
def test_fresh_install_answers_how_to_reindex_from_bundled_docs(run_real):
    result = run_real("ask", "--json", "How do I trigger a reindex?")
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert set(out) >= {"answer", "sources", "claims", "timings"}
    assert "ravbot index" in out["answer"] and "/ask-admin reindex" in out["answer"]
    assert out["sources"][0]["title"] == "Reindexing" and out["sources"][0]["url"].endswith("docs/reindexing.md")
    assert out["claims"] and {c["label"] for c in out["claims"]} <= {"SUPPORTED", "UNCERTAIN", "UNSUPPORTED", "CONTRADICTED"}
    assert {"text", "label", "confidence", "evidence", "source"} <= set(out["claims"][0])
    assert {"retrieve", "generate", "claims", "evidence", "verify"} <= set(out["timings"])


def test_index_counts_and_incremental_reindex(run, tmp_path):
    folder = tmp_path / "kb"
    folder.mkdir()
    (folder / "a.md").write_text("# A\n\nAlpha is the first letter.\n")
    (folder / "b.md").write_text("# B\n\nBeta is the second letter.\n")
    first = json.loads(run("index", "--json", "--source", "kb", str(folder)).stdout)
    assert first == {"added": 2, "changed": 0, "unchanged": 0, "removed": 0, "skipped": 0}
    (folder / "a.md").write_text("# A\n\nAlpha is the first Greek letter.\n")
    (folder / "b.md").unlink()
    (folder / "c.md").write_bytes(b"\x00binary")
    second = json.loads(run("index", "--json", "--source", "kb", str(folder)).stdout)
    assert second == {"added": 0, "changed": 1, "unchanged": 0, "removed": 1, "skipped": 1}


@pytest.mark.slow
def test_text_output_has_sources_summary_and_timings(run_real):  # "warning sign" finds ⚠️ by meaning: the real model
    result = run_real("ask", "What does the warning sign next to a sentence mean?")
    assert result.exit_code == 0
    assert "Sources:\n[1] " in result.stdout
    assert "claims verified" in result.stdout or "No checkable claims" in result.stdout
    assert "retrieve " in result.stdout and " ms" in result.stdout


def test_interactive_prompt_answers_until_empty_line(run):
    result = run("ask", input="What is the capital of Mongolia?\n\n")
    assert result.exit_code == 0
    assert "I don't have information about that in the available documents." in result.stdout


def test_errors_are_one_line_and_non_zero(run, tmp_path):
    missing = run("index", "--source", "kb", str(tmp_path / "nowhere"))
    assert missing.exit_code != 0
    assert missing.stderr.strip().count("\n") == 0 and "nowhere" in missing.stderr
    empty = run("ask", "--json", "   ")
    assert empty.exit_code == 1 and json.loads(empty.stdout)["error"] == "bad question"
    bad = CliRunner(env=CLEAN_ENV).invoke(cli, ["--config", str(tmp_path / "none.toml"), "settings"])
    assert bad.exit_code != 0 and "none.toml" in bad.output


def test_settings_command_redacts_secrets(run):
    result = run("settings", "--json", env={"SLACK_BOT_TOKEN": "xoxb-very-secret"})
    values = json.loads(result.stdout)
    assert values["slack_bot_token"] == "***" and "xoxb-very-secret" not in result.stdout


def test_second_start_loads_the_index_without_re_embedding(run):
    assert run("ask", "--json", "How do I trigger a reindex?").exit_code == 0
    again = json.loads(run("index", "--json").stdout)
    assert again["added"] == again["changed"] == again["removed"] == 0 and again["unchanged"] > 0


def test_a_bad_question_in_text_mode_is_one_line_on_stderr(run):
    result = run("ask", "???")
    assert result.exit_code == 1 and result.stdout == ""
    assert result.stderr.strip() == "Error: That doesn't look like a question; please ask in words."
