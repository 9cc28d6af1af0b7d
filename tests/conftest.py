"""Shared fixtures: the real embedding model (loaded once per session) and its fake, settings in a
temp data dir, the evaluation data; and the `slow` mark for every test that uses the real model or data.

A test whose assertions depend on the real model's semantics (retrieval quality, verification
labels, the relevance floor, evaluation figures) asks for `embedder`; flow and adapter scenarios ask
for `fake_embedder` and pass it to `bot.app.build(settings, embedder=...)`. Every test that asks for
`embedder` or `shared_data`, directly or through its fixtures, is marked `slow` here, and a plain
`pytest` leaves the slow tests out (it never loads the model); `pytest --slow` runs every test.
Tests that load a real model another way carry the mark themselves."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.shared_data import shared_data

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

REPO = Path(__file__).resolve().parent.parent
SHARED_DATA = shared_data()


REAL_MODEL_OR_DATA = ("embedder", "shared_data")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--slow", action="store_true",
                     help="also run the tests marked slow (the real embedding model, the evaluation data); "
                          "the README's test command and CI pass it")


def pytest_report_header(config: pytest.Config) -> str:
    if config.getoption("--slow") or config.getoption("markexpr"):
        return "slow tests: run"
    return "slow tests: left out (pass --slow to run every test, as CI does)"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark `slow` every test that uses the real embedding model or the evaluation data, and leave
    those out unless `--slow` is given (or `-m` chooses by marks itself)."""
    for item in items:
        if any(name in getattr(item, "fixturenames", ()) for name in REAL_MODEL_OR_DATA):
            item.add_marker(pytest.mark.slow)
    if config.getoption("--slow") or config.getoption("markexpr"):
        return
    slow = [item for item in items if item.get_closest_marker("slow")]
    if slow:
        config.hook.pytest_deselected(items=slow)
        items[:] = [item for item in items if not item.get_closest_marker("slow")]


@pytest.fixture(scope="session")
def fake_embedder():
    """The deterministic stand-in for the model (tests/fakes/embedder.py), for flow and adapter tests."""
    from tests.fakes.embedder import FakeEmbedder

    return FakeEmbedder()


@pytest.fixture(scope="session")
def embedder():
    """The real all-MiniLM-L6-v2 embedder, shared by every test."""
    from pipeline.embed import load_embedder

    e = load_embedder("")
    e.encode(["warm up"])
    return e


@pytest.fixture
def settings(tmp_path):
    """Default settings with a private data dir; no environment is read."""
    from config.settings import load_settings

    return load_settings(env={}, data_dir=str(tmp_path / "data"))


@pytest.fixture(scope="session")
def shared_data() -> Path:
    if not SHARED_DATA.is_dir():
        pytest.fail(f"evaluation data not found at {SHARED_DATA}")
    return SHARED_DATA
