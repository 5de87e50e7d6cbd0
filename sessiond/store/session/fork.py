"""What a fork or clone of a Pi session holds (Pi's ``createBranchedSession`` and ``/fork``).

These read the source only; writing the new session is the caller's
(:class:`~sessiond.store.session.Session`), so a read-only source (another agent's Pi file)
can be forked into sessiond's store.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any, Literal

from ...errors import EntryNotFoundError, InvalidArgumentError, SessionNotSavedError
from ...model import entries as E
from ...model.entries import Entry
from ...model.js import UNDEFINED, get, key, truthy
from ..ids import short_id
from .ingest import FollowedSession


def branched_entries(source: FollowedSession, leaf_id: Any) -> list[Any]:
    """The entries of a new session holding only the path to ``leaf_id`` (Pi's ``createBranchedSession``).

    Labels are dropped from the path and re-created after it (with their original
    timestamps); entries that hung below a label are re-chained to the previous kept entry,
    and a compaction keeping from a label keeps from the entry after it (#5669).
    :class:`~sessiond.errors.EntryNotFoundError` for an unknown ``leaf_id``.
    """
    path = source.branch(leaf_id)
    if not path:
        raise EntryNotFoundError(leaf_id)
    kept: list[Any] = []
    replacement_for_label: dict[Hashable, Any] = {}
    pending_labels: list[Any] = []
    parent: Any = None
    for entry in path:
        if get(entry, "type") == E.LABEL:
            pending_labels.append(get(entry, "id"))
            continue
        for label_id in pending_labels:
            replacement_for_label[key(label_id)] = get(entry, "id")
        pending_labels.clear()
        copy = dict(entry) if type(entry) is dict else entry
        if type(copy) is dict:
            copy["parentId"] = parent
            if copy.get("type") == E.COMPACTION:
                fk = copy.get("firstKeptEntryId", UNDEFINED)
                if key(fk) != key(copy.get("id", UNDEFINED)):
                    new_fk = replacement_for_label.get(key(fk), fk)
                    if new_fk is UNDEFINED:
                        copy.pop("firstKeptEntryId", None)
                    else:
                        copy["firstKeptEntryId"] = new_fk
        kept.append(copy)
        parent = get(entry, "id")
    kept_ids = {key(get(e, "id")) for e in kept}
    labels = [(k, v) for k, v in source.tree.labels().items() if k in kept_ids]
    last_id = get(kept[-1], "id") if kept else None
    label_parent: Any = last_id if truthy(last_id) else None
    taken = set(kept_ids)
    label_entries: list[Entry] = []
    for target_key, (label, label_ts) in labels:
        target = next(get(e, "id") for e in kept if key(get(e, "id")) == target_key)
        lid = short_id(lambda c: c in taken)
        taken.add(lid)
        label_entries.append(E.new_label(lid, label_parent, label_ts, target, label))
        label_parent = lid
    return [*kept, *label_entries]


def fork_point(source: FollowedSession, entry_id: Any, position: Literal["before", "at"]) -> Any:
    """Where ``/fork`` (``before`` a user message: its parent) or ``/clone`` (``at`` an entry) cuts.

    A falsy answer means "before the first entry": the fork is a new, empty session.
    """
    selected = source.get(entry_id)
    if selected is None:
        raise InvalidArgumentError("Invalid entry ID for forking", field="entryId")
    if not source.flushed:
        raise SessionNotSavedError(
            "This session has not been saved yet. Send a message before cloning or forking it."
        )
    if position == "at":
        target = get(selected, "id")
    elif position == "before":
        if get(selected, "type") != E.MESSAGE or get(get(selected, "message"), "role") != "user":
            raise InvalidArgumentError("Invalid entry ID for forking", field="entryId")
        target = get(selected, "parentId")
    else:
        raise InvalidArgumentError("position must be 'before' or 'at'", field="position")
    return target
