"""A list of short strings stored as one UTF-8 buffer: the previews of a session's entries.

An open session keeps a one-line preview per entry so ``tree/get`` reads no bodies. As
``str`` objects they cost about 50 bytes of object header each on top of the text (plus a
list slot), which for a session of short messages was a third of its light index. Packed,
an item costs its UTF-8 bytes and one 8-byte offset; reading it decodes it again, which is
cheap next to everything a read of the tree does per entry.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Iterator


class PackedStrings:
    """An append-mostly sequence of strings (index, iterate, append, replace).

    Replacing the last item rewrites it in place (a reader that converts its newest record
    anew); replacing an earlier one keeps the new text aside, which stays rare.
    """

    __slots__ = ("_data", "_ends", "_replaced")

    def __init__(self, items: Iterable[str] = ()) -> None:
        self._data = bytearray()
        self._ends = array("q")
        self._replaced: dict[int, str] = {}
        for item in items:
            self.append(item)

    def __len__(self) -> int:
        return len(self._ends)

    def append(self, item: str) -> None:
        self._data += item.encode("utf-8", "surrogatepass")
        self._ends.append(len(self._data))

    def __getitem__(self, pos: int) -> str:
        ends = self._ends
        n = len(ends)
        if pos < 0:
            pos += n
        if not 0 <= pos < n:
            raise IndexError(pos)
        if self._replaced:
            text = self._replaced.get(pos)
            if text is not None:
                return text
        start = ends[pos - 1] if pos else 0
        return self._data[start : ends[pos]].decode("utf-8", "surrogatepass")

    def __setitem__(self, pos: int, item: str) -> None:
        n = len(self._ends)
        if pos < 0:
            pos += n
        if not 0 <= pos < n:
            raise IndexError(pos)
        if pos == n - 1:
            self._replaced.pop(pos, None)
            del self._data[self._ends[pos - 1] if pos else 0 :]
            self._data += item.encode("utf-8", "surrogatepass")
            self._ends[pos] = len(self._data)
        else:
            self._replaced[pos] = item

    def __iter__(self) -> Iterator[str]:
        """Every item in order: the whole buffer decoded once (a tree view reads them all)."""
        text = self._data.decode("utf-8", "surrogatepass")
        ends, replaced = self._ends, self._replaced
        if len(text) == len(self._data):  # ASCII: character offsets are the byte offsets
            start = 0
            for pos, end in enumerate(ends):
                yield replaced[pos] if replaced and pos in replaced else text[start:end]
                start = end
            return
        data = self._data
        start = 0
        for pos, end in enumerate(ends):
            if replaced and pos in replaced:
                yield replaced[pos]
            else:
                yield data[start:end].decode("utf-8", "surrogatepass")
            start = end

    @property
    def nbytes(self) -> int:
        """What the packed text and offsets take (for memory figures)."""
        return len(self._data) + self._ends.itemsize * len(self._ends)
