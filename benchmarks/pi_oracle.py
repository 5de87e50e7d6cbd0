"""Locating pi-oracle (Pi's own code) for the benchmarks that compare against it."""

from __future__ import annotations

import json
import os
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PI_PKG_REL = Path("node_modules/@earendil-works/pi-coding-agent")


def find_oracle(explicit: str | None) -> tuple[Path | None, str]:
    """(Pi package dir, note). Order: --oracle, $PI_ORACLE_DIR, <repo>/.cache/pi-oracle, /tmp/pi-oracle."""
    if explicit:
        candidates = [Path(explicit)]
    else:
        candidates = [Path(p) for p in (os.environ.get("PI_ORACLE_DIR"),) if p]
        candidates += [REPO / ".cache" / "pi-oracle", Path("/tmp/pi-oracle")]
    for c in candidates:
        pkg = c / PI_PKG_REL
        if (pkg / "dist/core/session-manager.js").is_file():
            try:
                version = json.loads((pkg / "package.json").read_text())["version"]
            except (OSError, ValueError, KeyError):
                version = "?"
            return pkg, f"Pi {version} from {c}"
    tried = ", ".join(str(c) for c in candidates)
    return None, f"no pi-oracle found (tried {tried}); run scripts/setup-oracle or pass --oracle DIR"
