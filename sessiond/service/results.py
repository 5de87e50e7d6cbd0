"""A typed result as the JSON object sent for it.

The service answers with the protocol's result models, built with ``model_construct`` (no
validation, no copy: see :mod:`sessiond.service.views`). Sending one must not cost more than
building the dict did, so this is not ``model_dump``: that walks every nested value (a
100,000-node tree, every entry of a branch) and would meet values pydantic does not know
(JavaScript's ``undefined`` in an odd file's entry). Instead the top level is read as it was
set: the fields the service set, in declaration order, then any extra ones; a field it left
unset is omitted, as the protocol documents for optional fields (``editorText`` only when
the target was a prompt, ``entries`` only when asked). Nested values are sent as they are.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel


def wire(result: Any) -> Any:
    """The JSON value of a result: a model's set fields; anything else as it is."""
    if not isinstance(result, BaseModel):
        return result
    fields = result.__dict__
    chosen = result.model_fields_set
    out = fields.copy() if len(chosen) == len(fields) else {k: v for k, v in fields.items() if k in chosen}
    extra = result.__pydantic_extra__
    if extra:
        out.update(extra)
    return out
