"""Context windows come from what the agent recorded, the config, then the model registry
(PyPI ``genai-prices``) — never from a stale hand-written table, never guessed (issue 24 item 9)."""

from __future__ import annotations

import shutil
from pathlib import Path

import orjson
import pytest

from sessiond.service.windows import context_window
from sessiond.usage.registry import prices_as_of, registry_window
from tests.conftest import FIXTURES
from tests.service.peers import FakePeer, make_service

pytestmark = pytest.mark.anyio

OPUS_5_SESSION = "29ccd257-68b1-427f-ae5f-6524b7cb6f20"


def test_current_models_get_the_registrys_window_and_an_unknown_model_none() -> None:
    assert context_window("anthropic", "claude-opus-5") == 1_000_000, "not the stale 200,000"
    assert context_window("anthropic", "claude-opus-4-6") == 1_000_000
    assert context_window("anthropic", "claude-sonnet-4-5-20250929") == 200_000
    assert context_window("openai", "gpt-5.3-codex") == 400_000
    assert context_window("anthropic", "anthropic/claude-opus-5") == 1_000_000, "a routed id"
    assert context_window("x", "unheard-of-model") is None, "window unknown, not a guess"
    assert context_window("x", "claude") is None, "no prefix guessing"
    assert registry_window("unheard-of-model") is None


def test_a_1m_suffix_and_the_config_come_before_the_registry() -> None:
    assert context_window("anthropic", "claude-sonnet-4-5[1m]") == 1_000_000
    assert context_window("anthropic", "claude-sonnet-4-5[1M]", {"claude-sonnet-4-5[1M]": 5}) == 1_000_000
    assert context_window("anthropic", "claude-opus-5", {"claude-opus-5": 200_000}) == 200_000
    assert context_window("x", "my-local-model", {"my-*": 32_768}) == 32_768


def test_the_price_data_has_a_date() -> None:
    as_of = prices_as_of()
    assert len(as_of) == 10 and as_of[4] == "-" and as_of >= "2026-01-01"


async def test_a_claude_code_session_on_opus_5_is_measured_against_1m(tmp_path: Path) -> None:
    """The defect: ``554,477 / 200,000 (277.2%)``. The transcript's model is rewritten to
    claude-opus-5 (the registry knows it; the old table said 200,000)."""
    projects = tmp_path / "claude" / "projects"
    shutil.copytree(FIXTURES / "claude-code" / "ccl-2.1.17", projects / "p")
    path = projects / "p" / f"{OPUS_5_SESSION}.jsonl"
    lines = []
    for raw in path.read_bytes().splitlines():
        entry = orjson.loads(raw)
        message = entry.get("message")
        if entry.get("type") == "assistant" and isinstance(message, dict) and message.get("model"):
            message["model"] = "claude-opus-5"
        lines.append(orjson.dumps(entry))
    path.write_bytes(b"\n".join(lines) + b"\n")
    service = make_service(tmp_path, {"HOME": str(tmp_path), "CLAUDE_CONFIG_DIR": str(tmp_path / "claude")})
    try:
        peer = FakePeer()
        await service.load(peer, OPUS_5_SESSION, subscribe=False)
        usage = await service.usage(peer, OPUS_5_SESSION)
        assert usage.model is not None and usage.model["modelId"] == "claude-opus-5"
        assert usage.size == 1_000_000
    finally:
        service.close_all()
