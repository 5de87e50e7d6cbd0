"""A session's title when it has no name: the first prompt a person typed, never what an agent
or a tool injected into the conversation around it.

Agents put context into user messages: Codex its ``# AGENTS.md instructions`` and
``<environment_context>``, Claude Code its ``<local-command-caveat>`` and ``<command-name>``
wrappers, and prompt templates (Spec Kit's ``/speckit.*`` commands, used with several agents)
wrap the user's words in ``## User Input`` and a fenced block. A list showing "## User Input…"
or "# AGENTS.md…" for every session says nothing; so each format's listing asks
:func:`prompt_title` what, of a user message, is the person's own prompt.
"""

from __future__ import annotations

import re
from typing import Final

INJECTED_PREFIXES: Final = (
    "# AGENTS.md instructions",
    "<environment_context>",
    "<user_instructions>",
    "<INSTRUCTIONS>",
    "<turn_aborted>",
    "<user_shell_command>",
    "<local-command-",
    "<command-name>",
    "<command-message>",
    "<system-reminder>",
    "[Request interrupted",
    "Caveat: The messages below were generated",
)
"""How context an agent injects as a user message begins (after leading whitespace)."""

_USER_INPUT: Final = re.compile(
    r"\A\s*#{1,3} User Input\s*\n\s*```[^\n]*\n(?P<input>.*?)\n?```[ \t]*\n?(?P<rest>.*)\Z", re.S
)
_CONSIDER: Final = re.compile(r"\A\s*You \*\*MUST\*\* consider the user input[^\n]*\n?", re.S)


def prompt_title(text: str) -> str | None:
    """The person's own words in a user message, stripped; ``None`` when it holds none (only
    injected context). A ``## User Input`` template gives its fenced input, or — the input
    left empty — the template's text after its instructions about that input."""
    head = text.lstrip()
    if not head or head.startswith(INJECTED_PREFIXES):
        return None
    wrapped = _USER_INPUT.match(head)
    if wrapped is not None:
        given = wrapped.group("input").strip()
        if given:
            return given
        rest = _CONSIDER.sub("", wrapped.group("rest"), count=1).strip()
        return rest or None
    return head.rstrip()


__all__ = ["INJECTED_PREFIXES", "prompt_title"]
