"""Small pieces every benchmark needs: percentiles, a latency summary, scratch directories."""

from __future__ import annotations

import shutil
from pathlib import Path


def pct(samples: list[float], q: float) -> float:
    """The ``q`` quantile (nearest rank) of ``samples``; NaN for none."""
    s = sorted(samples)
    if not s:
        return float("nan")
    return s[min(len(s) - 1, int(q * len(s)))]


def summary(samples_s: list[float], wall_s: float) -> dict[str, float]:
    """p50/p99/max in microseconds and the rate, for latencies given in seconds."""
    return {
        "p50Us": pct(samples_s, 0.50) * 1e6,
        "p99Us": pct(samples_s, 0.99) * 1e6,
        "maxUs": max(samples_s) * 1e6 if samples_s else float("nan"),
        "perSec": len(samples_s) / wall_s if wall_s > 0 else float("nan"),
        "n": len(samples_s),
    }


class Scratch:
    """Numbered scratch directories under one root on the repo's disk, removed at the end."""

    def __init__(self, root: Path) -> None:
        self.root = root
        shutil.rmtree(root, ignore_errors=True)
        root.mkdir(parents=True)
        self._n = 0

    def new_dir(self, name: str) -> Path:
        self._n += 1
        d = self.root / f"{self._n:03d}-{name}"
        d.mkdir()
        return d

    def cleanup(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)
