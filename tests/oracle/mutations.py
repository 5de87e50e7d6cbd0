"""Random damage to generated sessions, for differential tests on files no agent would write.

Lines are re-parented, duplicated, deleted, retyped, given odd values (``null``, ``""``, ``0``,
``[]``, non-strings), interleaved with junk and non-object JSON, and given bad timestamps.
Whatever Pi does with such a file (when it does not throw), sessiond must do the same.
"""

from __future__ import annotations

import json
import random
from typing import Any

ODD_VALUES: list[Any] = [None, "", 0, [], {}, "x", 1.5, True]
JUNK_LINES = ["", "junk", "{}", "[]", "1", "true", '""', "null", '{"type":"session"}']
BAD_TIMESTAMPS: list[Any] = [
    "",
    "2026-01-01",
    "garbage",
    12345,
    None,
    "2026-02-30T00:00:00Z",
    "2026-01-01T10:00:00+05:00",
]


def _dumps(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def mutate(text: str, rng: random.Random, max_mutations: int = 6) -> str:
    lines = text.split("\n")
    items: list[Any] = []
    for line in lines[1:]:
        try:
            items.append(json.loads(line))
        except ValueError:
            items.append(line)
    ids = [o["id"] for o in items if isinstance(o, dict) and "id" in o]
    for _ in range(rng.randint(1, max_mutations)):
        if not items:
            break
        i = rng.randrange(len(items))
        o = items[i]
        if not isinstance(o, dict) or not o:
            continue
        r = rng.random()
        message = o.get("message")
        if r < 0.15:
            earlier = [x["id"] for x in items[:i] if isinstance(x, dict) and "id" in x]
            if earlier:
                o["parentId"] = rng.choice(earlier)
        elif r < 0.25:
            o["parentId"] = rng.choice(["nope", None, ""])
        elif r < 0.35:
            items.insert(rng.randrange(len(items) + 1), json.loads(_dumps(o)))
        elif r < 0.45:
            k = rng.choice(list(o))
            if k not in ("id", "parentId"):
                o[k] = rng.choice(ODD_VALUES)
        elif r < 0.55 and isinstance(message, dict) and message:
            k = rng.choice(list(message))
            if k != "role":
                message[k] = rng.choice([None, "", 0, [], "x", 2.5])
        elif r < 0.62:
            del items[i]
        elif r < 0.70:
            o["type"] = rng.choice(
                [
                    "message",
                    "compaction",
                    "label",
                    "context_edit",
                    "branch_summary",
                    "custom_message",
                    "weird",
                ]
            )
        elif r < 0.78 and ids:
            o["firstKeptEntryId" if o.get("type") == "compaction" else "targetId"] = rng.choice([*ids, "zz"])
        elif r < 0.85:
            items.insert(rng.randrange(len(items) + 1), rng.choice(JUNK_LINES))
        elif (
            r < 0.92
            and isinstance(message, dict)
            and isinstance(message.get("content"), list)
            and message["content"]
        ):
            block = rng.choice(message["content"])
            if isinstance(block, dict) and block:
                block[rng.choice(list(block))] = rng.choice([None, "", 0, "zz", {"a": 1}, [1]])
        else:
            o["timestamp"] = rng.choice(BAD_TIMESTAMPS)
    return "\n".join([lines[0], *(x if isinstance(x, str) else _dumps(x) for x in items)])
