"""sessiond gc: a report by default, the trash for file history, old trash deleted only with --apply."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from sessiond.cli import main
from sessiond.store import gc
from sessiond.store.layout import StoreLayout


def store(tmp_path: Path) -> StoreLayout:
    layout = StoreLayout(tmp_path / "store")
    layout.ensure_dirs()
    for sid in ("alive", "gone"):
        blobs = layout.root / "file-history" / sid / "blobs" / "ab"
        blobs.mkdir(parents=True)
        (blobs / ("ab" + "0" * 62)).write_bytes(b"x" * 1000)
    layout.trash_dir.mkdir(parents=True, exist_ok=True)
    old = layout.trash_dir / "old-session.jsonl"
    old.write_text("{}\n")
    past = time.time() - 40 * 86400
    os.utime(old, (past, past))
    (layout.trash_dir / "recent-session.jsonl").write_text("{}\n")
    return layout


def test_plan_reports_without_touching_anything(tmp_path: Path) -> None:
    layout = store(tmp_path)
    report = gc.plan(layout, lambda sid: sid == "alive", keep_days=30)
    assert [(i.action, i.path.name) for i in report.items] == [
        ("trash", "gone"),
        ("delete", "old-session.jsonl"),
    ]
    assert report.items[0].bytes == 1000
    assert (layout.root / "file-history" / "gone").exists() and (
        layout.trash_dir / "old-session.jsonl"
    ).exists()
    gc.apply(layout, report)
    assert not (layout.root / "file-history" / "gone").exists()
    assert (layout.root / "file-history" / "alive").exists()
    assert not (layout.trash_dir / "old-session.jsonl").exists()
    assert (layout.trash_dir / "recent-session.jsonl").exists()
    moved = [p for p in layout.trash_dir.iterdir() if p.name.endswith("_file-history_gone")]
    assert len(moved) == 1 and (moved[0] / "blobs").is_dir()  # recoverable from the trash


def test_the_command_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    layout = store(tmp_path)
    assert main(["gc", "--store", str(layout.root), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["applied"] is False and {i["action"] for i in report["items"]} == {"trash", "delete"}
    assert (layout.root / "file-history" / "gone").exists()
    assert main(["gc", "--store", str(layout.root), "--apply"]) == 0
    out = capsys.readouterr().out
    assert "collected" in out and not (layout.root / "file-history" / "gone").exists()
    assert main(["gc", "--store", str(layout.root)]) == 0
    assert "nothing to collect" in capsys.readouterr().out
