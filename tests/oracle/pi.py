"""Running Pi's own code: ``tests/oracle/harness.mjs`` on the install ``scripts/setup-oracle`` made.

Every test and script that asks Pi goes through here, so the harness's path and calling
convention live in one place. ``tests/oracle/README.md`` lists what the harness prints.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

HARNESS = Path(__file__).resolve().with_name("harness.mjs")


def harness_command(oracle: Path, *args: str) -> list[str]:
    """The command line running the harness on the Pi installed in ``oracle``."""
    return ["node", str(HARNESS), "--oracle", str(oracle), *args]


def pi_results(
    oracle: Path, files: Sequence[Path | str], *args: str, timeout: float = 600
) -> list[dict[str, Any]]:
    """What Pi derives from each of ``files`` (one dict per file, in order; ``args`` are harness
    options). A file Pi cannot read gives a dict with ``error``; a harness failure raises."""
    proc = subprocess.run(
        harness_command(oracle, *args, "--jsonl", *map(str, files)),
        capture_output=True,
        text=True,
        encoding="utf-8",
        check=False,
        timeout=timeout,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"pi-oracle exited with {proc.returncode}:\n{proc.stderr[-4000:]}")
    results = [json.loads(line) for line in proc.stdout.split("\n") if line]
    if len(results) != len(files):
        raise RuntimeError(
            f"pi-oracle answered for {len(results)} of {len(files)} files:\n{proc.stderr[-4000:]}"
        )
    return results


def pi_result(oracle: Path, file: Path | str, *args: str, timeout: float = 120) -> dict[str, Any]:
    """What Pi derives from one file (see :func:`pi_results`)."""
    return pi_results(oracle, [file], *args, timeout=timeout)[0]
