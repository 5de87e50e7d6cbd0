"""OpenCode sessions, read-only: records from either store, Pi-shaped entries and context.

Pure: rows and decoded JSON in, structures out. ``model`` normalises the SQLite rows and the
older JSON files into one shape, ``convert`` builds the tree entries and the context OpenCode
would send next, ``listing`` gives what a session list shows. See ``docs/opencode.md``.
"""

from .convert import Conversion, ConversionDiagnostics, convert, iso, pi_usage
from .listing import first_prompt, listing_fields
from .model import OpenCodeMessage, OpenCodeSession, build_session, session_from_row

__all__ = [
    "Conversion",
    "ConversionDiagnostics",
    "OpenCodeMessage",
    "OpenCodeSession",
    "build_session",
    "convert",
    "first_prompt",
    "iso",
    "listing_fields",
    "pi_usage",
    "session_from_row",
]
