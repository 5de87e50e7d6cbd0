"""sessiond's wire contract: every JSON-RPC method, notification and error code, as pydantic models.

The server validates requests with these models and the Python client types its calls with
them; ``sessiond.schema.json`` (generated from them) types the TypeScript client, and
``SPEC.md`` (generated too) documents them. One source of truth, like lsprotocol for LSP.

The method and notification models load on first use (PEP 562): the daemon's exception types
and the command line need only ``ErrorCode`` and ``PROTOCOL_VERSION``, and building every model
at import costs a command ~0.3 s before it does anything.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from .errors import ERRORS, ErrorCode
from .version import PROTOCOL_VERSION

if TYPE_CHECKING:
    from .methods import METHODS, MethodSpec
    from .notifications import NOTIFICATIONS

__all__ = ["ERRORS", "METHODS", "NOTIFICATIONS", "PROTOCOL_VERSION", "ErrorCode", "MethodSpec"]

_LAZY = {"METHODS": "methods", "MethodSpec": "methods", "NOTIFICATIONS": "notifications"}
_SUBMODULES = frozenset({"errors", "methods", "models", "notifications", "version"})


def __getattr__(name: str) -> Any:
    if name in _SUBMODULES:
        return importlib.import_module(f"{__name__}.{name}")
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value
