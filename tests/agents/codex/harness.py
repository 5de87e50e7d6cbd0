"""Running the real Codex CLI offline: its home, its config, and one ``codex exec`` at a time.

``scripts/setup-codex`` installs npm ``@openai/codex`` (pinned 0.169.0, with its native
platform package) into ``.cache/agents/codex``; with ``SESSIOND_AGENTS_LATEST=1`` the tests use
the newest published version from ``.cache/agents/codex-latest`` instead
(``scripts/test-agents-latest``). When the binary is not there the tests skip and say why.

Codex is pointed at the stand-in through ``$CODEX_HOME/config.toml``: a custom model provider
whose ``base_url`` is the stand-in, ``wire_api = "responses"``, ``requires_openai_auth = false``
(no key, no login), no retries; ``approval_policy = "never"`` so it runs the scripted commands
without asking, in its own ``workspace-write`` sandbox when that works on this machine (probed
once with ``codex sandbox -- true``: it needs user namespaces, which a CI container may not
grant), else with ``danger-full-access`` (what it runs stays in the test's temporary directory
either way). ``HOME`` is the temporary directory too, so no user file is read or written, and
nothing leaves the loopback interface.
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from .standin import StandIn

ROOT = Path(__file__).resolve().parents[3]
PINNED = "0.169.0"
LATEST = os.environ.get("SESSIOND_AGENTS_LATEST") == "1"
INSTALL = ROOT / ".cache" / "agents" / ("codex-latest" if LATEST else "codex")
BINARY = INSTALL / "node_modules" / ".bin" / "codex"
MODEL = "gpt-5.5"
"""A model Codex 0.169 knows (an unknown one works too, with a warning and fewer tools)."""
RUN_TIMEOUT = 120.0


def codex_binary() -> Path:
    """The installed Codex CLI, or skip the test saying why it is not there."""
    if not BINARY.exists():
        pytest.skip(
            f"Codex CLI not installed in {INSTALL.relative_to(ROOT)}: run scripts/setup-codex "
            "(npm @openai/codex with its native package; needs Node and the npm registry)"
        )
    try:
        version = subprocess.run(
            [str(BINARY), "--version"], capture_output=True, text=True, timeout=60, check=True
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError) as exc:
        pytest.skip(f"the installed Codex CLI does not run here: {exc}")
    if not LATEST and version != f"codex-cli {PINNED}":
        pytest.skip(f"{INSTALL} holds {version!r}, not {PINNED}: run scripts/setup-codex")
    return BINARY


@functools.cache
def sandbox_mode(binary: Path) -> str:
    """``workspace-write`` when Codex's own sandbox runs a command here, else ``danger-full-access``."""
    with tempfile.TemporaryDirectory(prefix="codex-probe-", dir=os.environ.get("TMPDIR", "/var/tmp")) as home:
        env = {"PATH": os.environ.get("PATH", ""), "CODEX_HOME": home, "HOME": home}
        try:
            probe = subprocess.run(
                [str(binary), "sandbox", "--", "true"],
                env=env,
                cwd=home,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                timeout=60,
                check=False,
            )
        except (OSError, subprocess.SubprocessError):
            return "danger-full-access"
    return "workspace-write" if probe.returncode == 0 else "danger-full-access"


def version() -> str:
    out = subprocess.run([str(codex_binary()), "--version"], capture_output=True, text=True, check=True)
    return out.stdout.strip().removeprefix("codex-cli ").strip()


@dataclass
class Run:
    """One ``codex exec``: the thread it ran, its JSONL events and the requests it made."""

    thread_id: str
    events: list[dict[str, Any]]
    requests: list[dict[str, Any]]
    stderr: str


class Codex:
    """A Codex home and a work directory in ``tmp``, talking to ``api``."""

    def __init__(self, tmp: Path, api: StandIn, binary: Path, extra_config: str = "") -> None:
        self.binary = binary
        self.api = api
        self.home = tmp / "codex"
        self.work = tmp / "work"
        self.user_home = tmp / "home"
        for directory in (self.home, self.work, self.user_home):
            directory.mkdir(parents=True, exist_ok=True)
        self.sandbox = sandbox_mode(binary)
        (self.home / "config.toml").write_text(
            f"""model = "{MODEL}"
model_provider = "standin"
approval_policy = "never"
sandbox_mode = "{self.sandbox}"
check_for_update_on_startup = false
{extra_config}
[model_providers.standin]
name = "scripted stand-in"
base_url = "{api.base_url}"
wire_api = "responses"
requires_openai_auth = false
request_max_retries = 0
stream_max_retries = 0
"""
        )

    def env(self) -> dict[str, str]:
        keep = {k: v for k, v in os.environ.items() if k in ("PATH", "LANG", "LC_ALL", "TZ", "TMPDIR")}
        return {**keep, "CODEX_HOME": str(self.home), "HOME": str(self.user_home), "NO_COLOR": "1"}

    def run(self, *args: str, fails: bool = False) -> Run:
        """``codex exec --skip-git-repo-check --json ARGS``; fails the test unless it succeeds
        (with ``fails``: unless the turn fails, as when the model's stream is cut)."""
        before = len(self.api.requests)
        proc = subprocess.run(
            [str(self.binary), "exec", "--skip-git-repo-check", *args],
            cwd=self.work,
            env=self.env(),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=RUN_TIMEOUT,
            check=False,
        )
        assert (proc.returncode != 0) == fails, f"codex exec {args}:\n{proc.stdout}\n{proc.stderr}"
        events = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
        started = [e["thread_id"] for e in events if e.get("type") == "thread.started"]
        assert started, f"no thread.started event:\n{proc.stdout}\n{proc.stderr}"
        errors = [e for e in events if e.get("type") in ("error", "turn.failed")]
        assert bool(errors) == fails, errors
        return Run(started[0], events, self.api.requests[before:], proc.stderr)

    def exec(self, prompt: str, *, fails: bool = False) -> Run:
        return self.run("--json", prompt, fails=fails)

    def resume(self, thread_id: str, prompt: str) -> Run:
        return self.run("resume", "--json", thread_id, prompt)

    def fork(self, thread_id: str, prompt: str) -> Run:
        return self.run("fork", "--json", thread_id, prompt)

    def rollout(self, thread_id: str) -> Path:
        [path] = (self.home / "sessions").rglob(f"rollout-*-{thread_id}.jsonl")
        return path


def user_line(rollout: Path, text: str) -> str:
    """The entry id (``L<line>``) of the user message ``text`` in a rollout."""
    for number, raw in enumerate(rollout.read_bytes().splitlines(), 1):
        record = json.loads(raw)
        payload = record.get("payload") or {}
        if (
            record.get("type") == "response_item"
            and payload.get("type") == "message"
            and payload.get("role") == "user"
            and [c.get("text") for c in payload.get("content", [])] == [text]
        ):
            return f"L{number}"
    raise AssertionError(f"no user message {text!r} in {rollout}")


# --------------------------------------------------------------------------- comparing


def _texts(content: Any) -> list[str]:
    """The parts of a content list: texts, and images as their data URL."""
    if isinstance(content, str):
        return [content]
    out: list[str] = []
    for part in content or []:
        if not isinstance(part, dict):
            continue
        if part.get("type") == "input_image":
            out.append(str(part.get("image_url")))
        elif part.get("type") == "image":
            out.append(f"data:{part.get('mimeType')};base64,{part.get('data')}")
        else:
            out.append(part.get("text", ""))
    return out


def _args(raw: str) -> Any:
    try:
        parsed = json.loads(raw)
    except json.JSONDecodeError:
        return {"input": raw}
    return parsed if isinstance(parsed, dict) else {"input": parsed}


MODEL_ITEMS = frozenset({"reasoning", "function_call", "custom_tool_call", "web_search_call"})


def from_request(items: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    """A Codex request's ``input`` as comparable rows, after docs/codex.md's role mapping:
    developer messages are ``custom`` ``codex.developer`` messages, reasoning is thinking (its
    summary), function and custom tool calls are tool calls (call id, name, arguments; a
    custom tool's raw text is ``{"input": text}``), outputs are tool results by call id (images
    as their data URL), a web search the provider ran is a call with its result."""
    rows: list[tuple[Any, ...]] = []
    provider_results: list[tuple[Any, ...]] = []
    """The results of provider-run calls: after the response's assistant message, as in Pi."""
    for item in items:
        kind = item.get("type")
        model_item = kind in MODEL_ITEMS or (kind == "message" and item.get("role") == "assistant")
        if not model_item:
            rows.extend(provider_results)
            provider_results.clear()
        if kind == "message":
            role = item["role"]
            texts = _texts(item.get("content"))
            if role == "developer":
                rows.append(("custom", "codex.developer", texts))
            elif role == "user":
                rows.append(("user", texts))
            else:
                rows.extend(("text", t) for t in texts)
        elif kind == "reasoning":
            rows.append(("thinking", "\n\n".join(_texts(item.get("summary")))))
        elif kind == "function_call":
            rows.append(("call", item["call_id"], item["name"], _args(item["arguments"])))
        elif kind == "custom_tool_call":
            rows.append(("call", item["call_id"], item["name"], {"input": item["input"]}))
        elif kind == "web_search_call":  # the provider ran it: a call and its result in one
            rows.append(("call", item["id"], "web_search", item.get("action", {})))
            provider_results.append(("result", item["id"], [f"web search {item['status']}"], False))
        elif kind in ("function_call_output", "custom_tool_call_output"):
            output = item.get("output")
            failed = isinstance(output, dict) and output.get("success") is False
            if isinstance(output, dict):
                output = output.get("content")
            rows.append(("result", item["call_id"], _texts(output), failed))
        else:
            rows.append(("unexpected", kind))
    rows.extend(provider_results)
    return rows


def from_context(messages: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    """sessiond's context messages as the same rows."""
    rows: list[tuple[Any, ...]] = []
    for message in messages:
        role = message["role"]
        if role == "custom":
            rows.append(("custom", message["customType"], _texts(message["content"])))
        elif role == "user":
            rows.append(("user", _texts(message["content"])))
        elif role == "assistant":
            for block in message["content"]:
                if block["type"] == "text":
                    rows.append(("text", block["text"]))
                elif block["type"] == "thinking":
                    rows.append(("thinking", block["thinking"]))
                elif block["type"] == "toolCall":
                    rows.append(("call", block["id"], block["name"], block["arguments"]))
                else:
                    rows.append(("unexpected", block["type"]))
        elif role == "toolResult":
            rows.append(("result", message["toolCallId"], _texts(message["content"]), message["isError"]))
        else:
            rows.append(("unexpected", role))
    return rows


def trimmed_from(sent: str, recorded: str) -> bool:
    """Whether ``sent`` is ``recorded`` with whole lines left out (Codex drops the sections on
    tools a run does not offer, e.g. ``update_plan`` under ``codex exec``)."""
    remaining = iter(recorded.splitlines())
    return all(line in remaining for line in sent.splitlines())
