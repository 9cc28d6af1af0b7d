"""Where the evaluation data of `../shared/data` is, for the tests: beside the checkout, or, in a
`git clone` made elsewhere (a temporary folder), beside the checkout it was cloned from, or where
`RAVBOT_SHARED_DATA` points."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def shared_data() -> Path:
    """The first of: `RAVBOT_SHARED_DATA`, `../shared/data` beside this checkout, `../shared/data`
    beside the local repository this one was cloned from; the second when none exists."""
    beside = REPO.parent / "shared" / "data"
    candidates = [Path(os.environ["RAVBOT_SHARED_DATA"])] if os.environ.get("RAVBOT_SHARED_DATA") else []
    candidates.append(beside)
    try:
        origin = subprocess.run(["git", "-C", str(REPO), "config", "--get", "remote.origin.url"],
                                capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        origin = ""
    if origin and "://" not in origin and Path(origin).is_dir():
        candidates.append(Path(origin).resolve().parent / "shared" / "data")
    return next((c for c in candidates if c.is_dir()), beside)
