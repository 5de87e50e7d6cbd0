"""What a blob collector keeps: the hashes named by snapshot lines, and only by them."""

from __future__ import annotations

import hashlib

import orjson

from sessiond.filehistory.references import SNAPSHOT, snapshot_blobs


def h(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def line(value: object) -> bytes:
    return orjson.dumps(value) + b"\n"


def test_the_blobs_of_snapshot_lines_and_nothing_else() -> None:
    snapshot = {
        "type": "custom",
        "customType": SNAPSHOT,
        "id": "a1",
        "data": {
            "messageId": "m1",
            "kind": "checkpoint",
            "files": {
                "a.py": {"kind": "file", "blob": h("a"), "mode": 420, "size": 1},
                "gone": {"kind": "missing"},
            },
            "seen": {"a.py": h("a-after")},
        },
    }
    chatter = {"type": "message", "id": "b2", "message": {"role": "user", "content": f"look at {h('talk')}"}}
    other = {"type": "custom", "customType": "other", "id": "c3", "data": {"blob": h("other")}}
    lines = line({"type": "session", "id": "s"}) + line(chatter) + line(snapshot) + line(other)
    # seen's content keys count too: keeping one object too many is the safe mistake
    assert snapshot_blobs(lines) == {h("a"), h("a-after")}
    assert snapshot_blobs(line(chatter) + line(other)) == set()


def test_a_snapshot_line_the_loader_would_skip_still_keeps_its_blobs() -> None:
    torn = b'{"type":"custom","customType":"' + SNAPSHOT.encode() + b'","data":{"files":{"x":{"blob":"'
    torn += h("x").encode() + b'"'  # cut short: not JSON
    assert snapshot_blobs(torn) == {h("x")}
