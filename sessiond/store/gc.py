"""``sessiond gc``: find what the store no longer needs — and only remove it when told to.

Two kinds of leftovers:

* the file history (backed-up file contents) of sessions that no longer exist in any root
  (deleted through ``session/delete``, removed by hand, or expired by another agent's
  retention) — moved to the store's trash, where it stays recoverable;
* trash older than ``keep_days`` — deleted for good.

Nothing is touched without ``apply``: the default is a report of exactly what would happen.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from .layout import StoreLayout


@dataclass(slots=True)
class GcItem:
    action: str
    """``trash`` (moved to the trash) or ``delete`` (removed for good)."""
    path: Path
    bytes: int
    reason: str

    def as_json(self) -> dict[str, Any]:
        return {"action": self.action, "path": str(self.path), "bytes": self.bytes, "reason": self.reason}


@dataclass(slots=True)
class GcReport:
    items: list[GcItem] = field(default_factory=list)
    applied: bool = False
    errors: list[str] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        return {
            "applied": self.applied,
            "items": [i.as_json() for i in self.items],
            "bytes": sum(i.bytes for i in self.items),
            "errors": self.errors,
        }


def _size(path: Path) -> int:
    if path.is_file() or path.is_symlink():
        try:
            return path.lstat().st_size
        except OSError:
            return 0
    total = 0
    for dirpath, _dirs, files in os.walk(path):
        for name in files:
            with contextlib.suppress(OSError):
                total += os.lstat(os.path.join(dirpath, name)).st_size
    return total


def plan(
    layout: StoreLayout, session_exists: Callable[[str], bool], keep_days: float, now: float | None = None
) -> GcReport:
    report = GcReport()
    history = layout.root / "file-history"
    if history.is_dir():
        for directory in sorted(p for p in history.iterdir() if p.is_dir()):
            if not session_exists(directory.name):
                report.items.append(
                    GcItem("trash", directory, _size(directory), f"session {directory.name} no longer exists")
                )
    trash = layout.trash_dir
    cutoff = (time.time() if now is None else now) - keep_days * 86400
    if trash.is_dir():
        for item in sorted(trash.iterdir()):
            try:
                mtime = item.lstat().st_mtime
            except OSError:
                continue
            if mtime < cutoff:
                age = (time.time() - mtime) / 86400
                report.items.append(GcItem("delete", item, _size(item), f"in the trash for {age:.0f} days"))
    return report


def apply(layout: StoreLayout, report: GcReport) -> GcReport:
    """Carry out a :func:`plan` (items that vanished meanwhile are skipped)."""
    trash = layout.trash_dir
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ")
    for item in report.items:
        try:
            if item.action == "trash":
                trash.mkdir(mode=0o700, parents=True, exist_ok=True)
                shutil.move(str(item.path), str(trash / f"{stamp}_file-history_{item.path.name}"))
            elif item.path.is_dir() and not item.path.is_symlink():
                shutil.rmtree(item.path)
            else:
                item.path.unlink()
        except FileNotFoundError:
            continue
        except OSError as exc:
            report.errors.append(f"{item.path}: {exc.strerror or exc}")
    report.applied = True
    return report
