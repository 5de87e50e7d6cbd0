"""Moving a Pi session's leaf: in memory (Pi's ``branch``/``resetLeaf``) or persisted.

Pi never persists a leaf move: reopening a file puts the leaf on its last line again. A
persisted move (:meth:`LeafMoves.move_leaf`) appends a ``custom`` entry whose parent is the
new leaf, so the last line leads back to it, in sessiond and in Pi alike.
"""

from __future__ import annotations

from typing import Any, Final

from ...errors import ClusterUnavailableError, EntryNotFoundError
from ...model import entries as E
from ...model.js import key, nullish
from ..journal import Durability
from ..remote import RemoteMoved
from .writes import REMOTE_ATTEMPTS, PendingAppend, WritableSession

LEAF_MARKER: Final = E.LEAF_MARKER
"""``customType`` of the entry that persists a leaf move (its ``parentId`` is the new leaf)."""


class LeafMoves(WritableSession):
    """The leaf moves of a writable Pi session."""

    def set_leaf(self, entry_id: Any) -> None:
        """Pi's ``branch(id)``: move the leaf in memory (the next entry becomes its child)."""
        with self._lock:
            try:
                self._index.tree.set_leaf(entry_id)
            except KeyError:
                raise EntryNotFoundError(entry_id) from None

    def reset_leaf(self) -> None:
        """Pi's ``resetLeaf()``: the next entry starts a new root."""
        with self._lock:
            self._index.tree.reset_leaf()

    def move_leaf(self, entry_id: Any, *, durability: Durability | None = None) -> str | None:
        """Move the leaf and persist the move, so a reopen (in sessiond or Pi) restores it.

        Appends a ``custom`` entry (``customType: "sessiond.leaf"``) whose parent is the new
        leaf: the last line of the file then leads back to it, which is how Pi picks its leaf.
        The marker contributes nothing to context. ``None`` means "before the first entry".
        Returns the marker's id, or ``None`` when the leaf is already there.
        """
        pending = self.begin_move_leaf(entry_id, durability=durability)
        return None if pending is None else pending.wait()[0]

    def begin_move_leaf(self, entry_id: Any, *, durability: Durability | None = None) -> PendingAppend | None:
        """:meth:`move_leaf` without waiting for durability (``None``: already there)."""
        with self._lock:
            for _ in range(REMOTE_ATTEMPTS):
                self._before_write()
                if entry_id is not None and entry_id not in self._index.tree:
                    raise EntryNotFoundError(entry_id)
                old = self._index.tree.leaf_id
                if key(old) == key(entry_id):
                    return None
                marker = {
                    "type": E.CUSTOM,
                    "customType": LEAF_MARKER,
                    "data": {"from": None if nullish(old) else old},
                }
                try:
                    return self._stage_and_write([marker], entry_id, durability)
                except RemoteMoved:
                    self._pull_remote(fetch=True, after_conflict=True)  # another daemon appended first
            raise ClusterUnavailableError(self.id, f"the log kept moving for {REMOTE_ATTEMPTS} attempts")
