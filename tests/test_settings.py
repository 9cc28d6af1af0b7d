"""Settings: precedence, coercion, clear errors, and every setting documented in the README."""

from __future__ import annotations

import re

import pytest

from config.settings import PROJECT_ROOT, SETTINGS, load_settings, markdown_table


def test_readme_settings_table_is_the_generated_one():
    readme = (PROJECT_ROOT / "README.md").read_text()
    section = readme.split("\n## Settings\n", 1)[1].split("\n## ", 1)[0]  # other tables document other things
    start = section.index("| setting | environment |")
    table = section[start:].split("\n\n", 1)[0].strip()
    assert table == markdown_table(), "README's settings table is stale: paste `ravbot settings --markdown` over it"
    documented = set(re.findall(r"^\| `([a-z_0-9]+)` \| `RAVBOT_", table, flags=re.M))
    assert documented == {s.name for s in SETTINGS}


def test_settings_markdown_command_prints_the_table():
    from click.testing import CliRunner

    from bot.__main__ import cli

    result = CliRunner().invoke(cli, ["settings", "--markdown"], catch_exceptions=False)
    assert result.exit_code == 0 and result.output == markdown_table() + "\n"
    assert "| `top_k` | `RAVBOT_TOP_K` | `5` | Chunks passed to generation. |" in result.output


def test_every_secret_is_in_env_example():
    example = (PROJECT_ROOT / "config" / ".env.example").read_text()
    for s in SETTINGS:
        if s.secret:
            assert f"{s.env}=" in example, f"{s.env} missing from config/.env.example"


def test_precedence_default_file_env(tmp_path):
    toml = tmp_path / "ravbot.toml"
    toml.write_text('top_k = 7\nrelevance_floor = 0.4\n[sources.handbook]\nlocations = ["/srv/h"]\ncron = "0 3 * * *"\n')
    s = load_settings(env={"RAVBOT_TOP_K": "9", "SLACK_BOT_TOKEN": "xoxb-1"}, config_file=toml)
    assert s.top_k == 9  # env beats file
    assert s.relevance_floor == 0.4  # file beats default
    assert s.chunk_size == 800  # default
    assert s.slack_bot_token == "xoxb-1"  # conventional name
    assert s.source_specs()["handbook"] == {"locations": ["/srv/h"], "cron": "0 3 * * *", "interval_minutes": 60}
    assert s.as_dict()["slack_bot_token"] == "***"


def test_sources_setting_parses_and_names_bad_entries():
    s = load_settings(env={"RAVBOT_SOURCES": "docs=docs;web=https://a.example/x|https://a.example/sitemap.xml"})
    assert s.source_specs()["web"]["locations"] == ["https://a.example/x", "https://a.example/sitemap.xml"]
    with pytest.raises(ValueError, match="nameless"):
        load_settings(env={"RAVBOT_SOURCES": "nameless"}).source_specs()


def test_bad_values_are_named(tmp_path):
    with pytest.raises(ValueError, match="top_k.*'many'"):
        load_settings(env={"RAVBOT_TOP_K": "many"})
    with pytest.raises(ValueError, match="bogus"):
        (tmp_path / "c.toml").write_text("bogus = 1\n")
        load_settings(env={}, config_file=tmp_path / "c.toml")
    with pytest.raises(ValueError, match="does not exist"):
        load_settings(env={}, config_file=tmp_path / "missing.toml")
    with pytest.raises(ValueError, match="verify"):
        load_settings(env={"RAVBOT_VERIFY": "perhaps"})
