"""Directories for what only the owner may read: made ``0700``, and made private again when a
sessiond directory was left open — but never a directory others share.

The index and the socket are put in a directory of their own (``<store>/search``, the run
directory), which sessiond makes ``0700`` and tightens if an older version or a person left it
open. Their paths can be given, though (``--socket /tmp/sessiond.sock``, a benchmark's index in
``/tmp``), and ``chmod 700`` of such a parent took ``/tmp`` away from every other user of the
machine (seen here: every test running as another uid then failed). A directory with the sticky
bit (``/tmp``, ``/var/tmp``: shared by design) or owned by someone else is left as it is; what
sessiond puts there is private by its own mode (the socket ``0600`` and its peers' uid checked,
the index ``0600``).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path


def private_dir(directory: Path) -> None:
    """Make ``directory`` (and missing parents, ``0700``) and give it mode ``0700`` if it is
    ours and not shared (see the module's docstring)."""
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    st = os.stat(directory)
    if st.st_mode & stat.S_ISVTX or st.st_uid != os.geteuid():
        return
    if stat.S_IMODE(st.st_mode) != 0o700:
        os.chmod(directory, 0o700)
