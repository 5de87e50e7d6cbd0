"""Comparing ``sessiond inspect`` output with pi-oracle's output for the same file."""

from __future__ import annotations

import json
from typing import Any

from sessiond.inspection import InspectOptions
from sessiond.model.js_json import stringify

# Keys only sessiond prints; everything else must equal what Pi derives.
SESSIOND_ONLY = {"file", "piVersion", "format", "sessiondVersion", "estimator", "diagnostics"}

VARIANTS: dict[str, InspectOptions] = {
    "plain": InspectOptions(full=True),
    "keep2000": InspectOptions(full=True, compaction=True, keep=2000, window=60000),
    "keep8000": InspectOptions(full=True, compaction=True, keep=8000, reserve=4000, window=30000),
}
"""Golden variants: sessiond's options for each (see tests/golden/oracle/README.md)."""

VARIANT_ARGS: dict[str, list[str]] = {
    "plain": ["--full"],
    "keep2000": ["--full", "--compaction", "--keep", "2000", "--window", "60000"],
    "keep8000": ["--full", "--compaction", "--keep", "8000", "--reserve", "4000", "--window", "30000"],
}
"""The same variants as ``tests/oracle/harness.mjs`` options."""


def _normalise(value: Any) -> Any:
    """The JSON the CLI would print for ``value`` (undefined omitted, NaN as null), parsed back."""
    return json.loads(stringify(value))


def differences(ours: dict[str, Any], pi: dict[str, Any], limit: int = 10) -> list[str]:
    """Human-readable differences on the keys Pi prints (empty when equal)."""
    a = {k: v for k, v in ours.items() if k not in SESSIOND_ONLY}
    b = {k: v for k, v in pi.items() if k not in SESSIOND_ONLY}
    if "compaction" in a:
        a["compaction"] = {k: v for k, v in a["compaction"].items() if k != "reason"}
    out: list[str] = []
    _diff(_normalise(a), _normalise(b), "", out, limit)
    return out


def _diff(a: Any, b: Any, path: str, out: list[str], limit: int) -> None:
    if len(out) >= limit:
        return
    if isinstance(a, dict) and isinstance(b, dict):
        for k in list(dict.fromkeys([*a, *b])):
            if k not in a:
                out.append(f"{path}/{k}: missing in sessiond (pi: {_short(b[k])})")
            elif k not in b:
                out.append(f"{path}/{k}: only in sessiond ({_short(a[k])})")
            else:
                _diff(a[k], b[k], f"{path}/{k}", out, limit)
        return
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            out.append(f"{path}: length {len(a)} != pi {len(b)}")
        for i, (x, y) in enumerate(zip(a, b, strict=False)):
            _diff(x, y, f"{path}[{i}]", out, limit)
        return
    if a != b or isinstance(a, bool) != isinstance(b, bool):
        out.append(f"{path}: sessiond {_short(a)} != pi {_short(b)}")


def _short(v: Any) -> str:
    s = repr(v)
    return s if len(s) <= 160 else s[:157] + "..."
