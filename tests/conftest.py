"""Shared fixtures: real models loaded once per test session, settings in a temp data dir."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

REPO = Path(__file__).resolve().parent.parent
SHARED_DATA = REPO.parent / "shared" / "data"


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
