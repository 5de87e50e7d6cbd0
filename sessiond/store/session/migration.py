"""Pi's v1/v2 session files brought to v3, as Pi does when it opens them, but atomically.

Pi rewrites an old file in place on open; a crash in the middle of that loses the session.
sessiond writes the migrated file beside it and renames it over the original (temp file,
fsync, rename, fsync of the directory), so the file is always either the old or the new one.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path
from typing import Any

from ...formats.pi import encode_line, header_version, load_session
from ...model import entries as E


def needs_migration(header: dict[str, Any]) -> bool:
    version = header_version(header)
    return isinstance(version, int | float) and not isinstance(version, bool) and version < E.CURRENT_VERSION


def migrate_file(path: Path) -> Any:
    """Migrate a v1/v2 file to v3 and replace it atomically (temp file, fsync, rename)."""
    loaded = load_session(path)
    data = b"".join(encode_line(line) for line in loaded.file_lines)
    fd, tmp = tempfile.mkstemp(prefix=".migrate-", suffix=".jsonl", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, os.stat(path).st_mode & 0o777)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    dir_fd = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)
    return loaded.diagnostics.source_version
