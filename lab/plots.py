"""Plots: PNG figures of evaluation records (verifier confidence by gold label, latency per series)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any


def plot_scores(records: Sequence[Mapping[str, Any]], path: str | Path, title: str = "") -> Path:
    """Histogram of verifier confidence for gold-supported vs other claims, one panel per method."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    methods = list(dict.fromkeys(r["method"] for r in records))
    fig, axes = plt.subplots(1, max(1, len(methods)), figsize=(5 * max(1, len(methods)), 3.5), squeeze=False)
    for ax, method in zip(axes[0], methods, strict=False):
        for gold, colour in (("supported", "tab:green"), ("refuted", "tab:red"), ("nei", "tab:grey"), ("partial", "tab:orange")):
            values = [r["confidence"] for r in records if r["method"] == method and r["gold"] == gold]
            if values:
                ax.hist(values, bins=20, range=(0, 1), alpha=0.55, color=colour, label=f"{gold} ({len(values)})")
        ax.set_title(f"{method}")
        ax.set_xlabel("confidence")
        ax.legend(fontsize=8)
    fig.suptitle(title or "verifier confidence by gold label")
    return _save(fig, path)


def plot_latency(series: Mapping[str, Sequence[float]], path: str | Path, title: str = "latency") -> Path:
    """Box plot of latencies (ms) per named series (retrieval variant, verifier method, stage)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = [n for n, v in series.items() if len(v)]
    fig, ax = plt.subplots(figsize=(1.6 * max(3, len(names)) + 2, 3.5))
    ax.boxplot([list(series[n]) for n in names], showfliers=False)
    ax.set_xticks(range(1, len(names) + 1), names, rotation=20)
    ax.set_ylabel("ms")
    ax.set_title(title)
    return _save(fig, path)


def _save(fig, path: str | Path) -> Path:
    """Write the figure as a PNG at `path` (folders made) and free it."""
    import matplotlib.pyplot as plt

    fig.tight_layout()
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out
