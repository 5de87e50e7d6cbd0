"""The texts a summarizer is given. The structure is Pi's — the conversation in
``<conversation>`` tags, an earlier summary in ``<previous-summary>`` tags, a checkpoint with
Pi's headings — so a summary made for sessiond reads like one made by Pi and the next
compaction can update it; the instructions are sessiond's own words.
"""

from __future__ import annotations

from typing import Final

HEADINGS: Final = (
    "## Goal",
    "## Constraints & Preferences",
    "## Progress",
    "## Key Decisions",
    "## Next Steps",
    "## Critical Context",
)

SYSTEM_PROMPT: Final = (
    "You write context checkpoints. You are given a transcript of a conversation between a user and "
    "a coding assistant, and you condense it into a structured summary that another model will rely on "
    "to carry on the work.\n\n"
    "Never continue the conversation, answer its questions or call tools. Output only the summary."
)

_FORMAT: Final = """## Goal
[What the user wants to achieve; several items if the work spans several tasks.]

## Constraints & Preferences
- [Requirements, constraints and preferences the user stated, or "(none)"]

## Progress
### Done
- [x] [Finished work and changes]

### In Progress
- [ ] [Work under way]

### Blocked
- [What stops progress, if anything]

## Key Decisions
- **[Decision]**: [Why]

## Next Steps
1. [What should happen next, in order]

## Critical Context
- [Data, examples, references needed to continue, or "(none)"]

Be brief in every section. Keep file paths, function names and error messages exactly as written."""

INITIAL_INSTRUCTIONS: Final = (
    "Summarise the conversation above as a checkpoint another model can continue from. "
    "Use exactly this structure:\n\n" + _FORMAT
)

UPDATE_INSTRUCTIONS: Final = (
    "The conversation above is new: fold it into the existing checkpoint given in <previous-summary> tags.\n"
    "- Keep everything the previous checkpoint says unless the new messages make it obsolete.\n"
    "- Add new progress, decisions and context.\n"
    "- Move items from In Progress to Done when they were finished; update Next Steps.\n\n"
    "Use exactly this structure:\n\n" + _FORMAT
)

TURN_PREFIX_INSTRUCTIONS: Final = """The messages above are the beginning of a turn whose later part
is kept verbatim after this checkpoint. Summarise only this beginning, so the kept part can
be understood.

## Original Request
[What the user asked for in this turn]

## Progress So Far
- [Decisions made and work done in these messages]

## Context Needed to Continue
- [What the later messages depend on]

Only use what the messages above say; do not guess at what came later."""

SPLIT_TURN_SEPARATOR: Final = "\n\n---\n\n**Turn Context (split turn):**\n\n"
"""Joins the history summary and the turn-prefix summary (Pi's layout)."""

NO_PRIOR_HISTORY: Final = "No prior history."


def history_prompt(conversation: str, previous_summary: str | None, custom_instructions: str | None) -> str:
    """The user message of a history summary request."""
    text = f"<conversation>\n{conversation}\n</conversation>\n\n"
    if previous_summary:
        text += f"<previous-summary>\n{previous_summary}\n</previous-summary>\n\n"
    text += UPDATE_INSTRUCTIONS if previous_summary else INITIAL_INSTRUCTIONS
    if custom_instructions:
        text += f"\n\nAdditional focus: {custom_instructions}"
    return text


def turn_prefix_prompt(conversation: str, custom_instructions: str | None) -> str:
    """The user message of a split turn's prefix summary request."""
    text = f"# Conversation\n{conversation}\n\n# Instructions\n{TURN_PREFIX_INSTRUCTIONS}"
    if custom_instructions:
        text += f"\n\nAdditional focus: {custom_instructions}"
    return text
