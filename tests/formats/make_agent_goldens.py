"""Write the committed expectations for the Codex and OpenCode readers.

``tests/golden/codex/<fixture>.json`` and ``tests/golden/opencode/<fixture>.json`` hold what
``sessiond inspect`` derives from every fixture (``tests/fixtures/codex``, ``tests/fixtures/
opencode``): the tree size and roots, the leaf and branch, the context messages (roles, clipped
texts, tool-call pairing), the usage and the reader's diagnostics. ``test_agent_goldens.py``
recomputes and compares; the facts that matter are also asserted literally there.

Run after a deliberate change of behaviour, then review the diff::

    .venv/bin/python -m tests.formats.make_agent_goldens
"""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from sessiond.inspection import InspectOptions, describe_foreign, open_agent_session
from sessiond.store.opencode import OpenCodeDatabase, OpenCodeJsonStore, db_session_path
from tests.conftest import GOLDEN, REPO

FIXTURES = REPO / "tests" / "fixtures"
CODEX = FIXTURES / "codex"
OPENCODE = FIXTURES / "opencode"


def codex_cases() -> Iterator[tuple[str, Path]]:
    for path in sorted(CODEX.rglob("*.jsonl")):
        if path.name == "session_index.jsonl":
            continue
        rel = path.relative_to(CODEX)
        yield f"{rel.parts[0]}--{path.stem[-12:]}", path


def opencode_cases(workdir: Path) -> Iterator[tuple[str, Path]]:
    """Database sessions (read from a copy: SQLite creates files next to a WAL database) and
    JSON-store session files."""
    for db in sorted(OPENCODE.glob("*/opencode.db")):
        copy = workdir / db.parent.name
        copy.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(db, copy / "opencode.db")
        for row in sorted(OpenCodeDatabase(copy / "opencode.db").session_rows(), key=lambda r: r["id"]):
            yield f"{db.parent.name}--{row['id']}", db_session_path(copy, row["id"])
    for file in OpenCodeJsonStore(OPENCODE / "json-store").session_files():
        yield f"json-store--{file.stem}", file


def summary(path: Path) -> dict[str, Any]:
    session = open_agent_session(path)
    assert session is not None, path
    out = describe_foreign(session, InspectOptions(compaction=True, window=200_000))
    for volatile in ("file", "sessiondVersion"):
        out.pop(volatile)
    base = out.get("agent", {}).get("historyBase")
    if base and base.get("path"):  # a fork's parent rollout: where the checkout is varies
        base["path"] = Path(base["path"]).resolve().relative_to(REPO).as_posix()
    return out


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        for kind, cases in (("codex", codex_cases()), ("opencode", opencode_cases(Path(tmp)))):
            for name, path in cases:
                target = GOLDEN / kind / f"{name}.json"
                target.write_text(
                    json.dumps(summary(path), indent=1, ensure_ascii=False, sort_keys=True) + "\n"
                )
                print("wrote", target.relative_to(REPO))


if __name__ == "__main__":
    main()
