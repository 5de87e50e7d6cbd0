"""What a tolerant JSON Lines reader skipped, counted the same way for every dialect.

Each agent's files are read line by line and a bad line is skipped, never fatal (a crash
mid-write, a tool that appended junk). The Pi, Claude Code and Codex readers each report
more about their own records, but the line-level counts mean the same everywhere, so they
are kept by one type: a client reading ``unparsableLineNumbers`` of any session gets the
same cap and the same 1-based numbering.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Final

MAX_REPORTED_LINES: Final = 100
"""How many skipped line numbers a diagnostics report lists (the counts are always exact)."""


class OversizedLine(bytes):
    """A line too long to be read (over ``[limits] max_line_bytes``), as the reader hands it on:
    a short placeholder record of its own (one JSON line, newline-terminated) standing where the
    real line is. :attr:`offset` and :attr:`size` are the real line's; a reader advances its
    file offset by :attr:`span`, not by the placeholder's length."""

    offset: int
    size: int
    """Bytes of the real line, without its newline."""

    @classmethod
    def of(cls, placeholder: bytes, offset: int, size: int) -> OversizedLine:
        line = cls(placeholder if placeholder.endswith(b"\n") else placeholder + b"\n")
        line.offset = offset
        line.size = size
        return line

    @property
    def span(self) -> int:
        """Bytes of the file this stands for: the line and its newline."""
        return self.size + 1


def span_of(piece: bytes) -> int:
    """Bytes of the file a piece a reader handed on stands for."""
    return piece.span if type(piece) is OversizedLine else len(piece)


@dataclass(slots=True)
class LineDiagnostics:
    """The lines a reader skipped. Nothing here stops a file from loading."""

    blank_lines: int = 0
    unparsable_lines: int = 0
    unparsable_line_numbers: list[int] = field(default_factory=list)
    """1-based numbers of the first :data:`MAX_REPORTED_LINES` unparsable lines."""
    torn_tail: bool = False
    """The data ends without ``\\n``: a crash mid-write, or a writer still appending."""
    oversized_lines: int = 0
    """Lines over the line limit, stood in for by placeholders (never read into memory)."""

    def skip_unparsable(self, number: int) -> None:
        """Count line ``number`` as unparsable (listed while under the cap)."""
        self.unparsable_lines += 1
        if len(self.unparsable_line_numbers) < MAX_REPORTED_LINES:
            self.unparsable_line_numbers.append(number)

    def skipped_json(self) -> dict[str, Any]:
        """The shared counts under the protocol's names (each dialect adds its own);
        ``oversizedLines`` only when there were any."""
        skipped: dict[str, Any] = {
            "blankLines": self.blank_lines,
            "unparsableLines": self.unparsable_lines,
            "unparsableLineNumbers": list(self.unparsable_line_numbers),
        }
        if self.oversized_lines:
            skipped["oversizedLines"] = self.oversized_lines
        return skipped

    def as_json(self) -> dict[str, Any]:
        """The report a client reads (each dialect's type reports more)."""
        return {**self.skipped_json(), "tornTail": self.torn_tail}


__all__ = ["MAX_REPORTED_LINES", "LineDiagnostics", "OversizedLine", "span_of"]
