"""Compaction, the pure part: where to cut, what to summarise, how to serialise it.

No I/O and no model calls here: the daemon decides *when* to compact and who summarises;
these functions decide *what*, with Pi's exact rules (docs/pi-format.md §7).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .cut_points import CutPoint, find_cut_point, find_projected_cut_point
    from .file_ops import FileOps, compute_file_lists, extract_file_ops, format_file_operations
    from .prepare import CompactionPreparation, prepare_compaction
    from .serialize import serialize_conversation
    from .settings import CompactionSettings

# The names load on first use (PEP 562): importing a submodule (the configuration reads
# :mod:`.settings`) must not load the whole compaction and the model with it (issue 30).
_WHERE = {
    "CompactionPreparation": "prepare",
    "CompactionSettings": "settings",
    "CutPoint": "cut_points",
    "FileOps": "file_ops",
    "compute_file_lists": "file_ops",
    "extract_file_ops": "file_ops",
    "find_cut_point": "cut_points",
    "find_projected_cut_point": "cut_points",
    "format_file_operations": "file_ops",
    "prepare_compaction": "prepare",
    "serialize_conversation": "serialize",
}


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


__all__ = [
    "CompactionPreparation",
    "CompactionSettings",
    "CutPoint",
    "FileOps",
    "compute_file_lists",
    "extract_file_ops",
    "find_cut_point",
    "find_projected_cut_point",
    "format_file_operations",
    "prepare_compaction",
    "serialize_conversation",
]
