"""sessiond's wire contract: every JSON-RPC method, notification and error code, as pydantic models.

The server validates requests with these models and the Python client types its calls with
them; ``sessiond.schema.json`` (generated from them) types the TypeScript client, and
``SPEC.md`` (generated too) documents them. One source of truth, like lsprotocol for LSP.
"""

from .errors import ERRORS, ErrorCode
from .methods import METHODS, MethodSpec
from .notifications import NOTIFICATIONS
from .version import PROTOCOL_VERSION

__all__ = ["ERRORS", "METHODS", "NOTIFICATIONS", "PROTOCOL_VERSION", "ErrorCode", "MethodSpec"]
