"""Compaction, the pure part: where to cut, what to summarise, how to serialise it.

No I/O and no model calls here: the daemon decides *when* to compact and who summarises;
these functions decide *what*, with Pi's exact rules (docs/pi-format.md §7).
"""

from .cut_points import CutPoint, find_cut_point, find_projected_cut_point
from .file_ops import FileOps, compute_file_lists, extract_file_ops, format_file_operations
from .prepare import CompactionPreparation, CompactionSettings, prepare_compaction
from .serialize import serialize_conversation

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
