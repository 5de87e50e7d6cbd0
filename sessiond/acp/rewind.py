"""``_sessiond/rewind``: the editor restores the files an ACP session changed since a prompt.

An ACP extension method (the ``_`` prefix is the protocol's room for them), answered by the
proxy, never forwarded. Params: ``sessionId`` (the ACP session), ``prompt`` (the 0-based
index of the prompt to go back to; default the latest) or ``messageId`` (a checkpoint, or the
``undoId`` of an earlier rewind), ``dryRun`` (default **true**: say what would change; the
editor asks again with ``false`` to do it) and ``force``. The result is the daemon's
``fileHistory/rewind`` answer with the checkpoint's ``messageId``: files someone else changed
since (a shell command the proxy could not see, the user's own edits) are conflicts, left
alone unless ``force``.

The recorder checkpoints a prompt only when its turn writes a file through the editor
(:mod:`.recorder`), so prompt N's checkpoint is the first one at or after it: no write the
proxy saw came in between, so the files were then as they were at prompt N. When no
checkpoint follows, nothing the proxy saw changed since, and the answer lists no file.
"""

from __future__ import annotations

from typing import Any, Final

from .answers import recorded_entries
from .link import DaemonLink
from .recorder import store_id

REWIND_COMMAND: Final = {
    "name": "rewind",
    "description": "sessiond: restore the files changed since prompt N (shows first; add `apply` to do it)",
    "input": {"hint": "[prompt number] [apply]"},
}
"""The slash command the proxy adds to the agent's ``available_commands_update``."""


def rewind_command(prompt: Any) -> tuple[int | None, bool] | None:
    """``/rewind [N] [apply]`` as (N, apply); None when the prompt is not that command."""
    if not isinstance(prompt, list) or len(prompt) != 1 or not isinstance(prompt[0], dict):
        return None
    text = prompt[0].get("text")
    if prompt[0].get("type") != "text" or not isinstance(text, str):
        return None
    words = text.split()
    if not words or words[0] != "/rewind":
        return None
    number = next((int(w) for w in words[1:] if w.isdigit()), None)
    return number, "apply" in words[1:]


def describe(result: dict[str, Any]) -> str:
    """A rewind's answer as text for the editor's transcript."""
    verb = "would" if result.get("dryRun") else "did"
    lines = [f"sessiond rewind ({'dry run' if result.get('dryRun') else 'applied'}):"]
    for f in result.get("files") or []:
        reason = f" ({f['reason']})" if f.get("reason") else ""
        lines.append(f"- {f.get('path')}: {verb} {f.get('action')} [{f.get('status')}]{reason}")
    if len(lines) == 1:
        lines.append("nothing to restore")
    if result.get("dryRun"):
        lines.append("Run `/rewind N apply` to restore.")
    elif result.get("undoId"):
        lines.append(f"Undo with _sessiond/rewind messageId {result['undoId']}.")
    return "\n".join(lines)


NOTHING: Final = {"files": [], "written": 0, "deleted": 0, "conflicts": 0, "refused": 0, "undoId": None}
"""A rewind's answer when nothing the proxy saw changed since the prompt."""


class BadParams(Exception):
    """Invalid params (-32602), naming the field."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field
        self.message = message


async def rewind(link: DaemonLink, params: dict[str, Any]) -> dict[str, Any]:
    sid = params.get("sessionId")
    if not isinstance(sid, str) or not sid:
        raise BadParams("sessionId", "sessionId must be a non-empty string")
    dry_run = params.get("dryRun", True)
    force = params.get("force", False)
    if not isinstance(dry_run, bool):
        raise BadParams("dryRun", "dryRun must be a boolean")
    if not isinstance(force, bool):
        raise BadParams("force", "force must be a boolean")
    message_id = params.get("messageId")
    if message_id is None:
        prompts = [
            e["id"]
            for e in await recorded_entries(link, store_id(sid))
            if e.get("type") == "message" and (e.get("message") or {}).get("role") == "user"
        ]
        prompt = params.get("prompt", len(prompts) - 1)
        if not isinstance(prompt, int) or isinstance(prompt, bool) or not 0 <= prompt < len(prompts):
            raise BadParams("prompt", f"prompt must be an index of the session's {len(prompts)} prompts")
        listed = await link.call("fileHistory/list", {"sessionId": store_id(sid)})
        checkpoints = {
            c["messageId"] for c in listed.get("checkpoints") or [] if c.get("kind") == "checkpoint"
        }
        later = [m for m in prompts[prompt:] if m in checkpoints]
        if not later:
            return {**NOTHING, "files": [], "dryRun": dry_run, "messageId": prompts[prompt]}
        message_id = later[0]
    elif not isinstance(message_id, str):
        raise BadParams("messageId", "messageId must be a string")
    result: dict[str, Any] = await link.call(
        "fileHistory/rewind",
        {"sessionId": store_id(sid), "messageId": message_id, "dryRun": dry_run, "force": force},
    )
    return {**result, "messageId": message_id}
