"""Compaction settings: layering, per-model resolution, validation with the field at fault."""

from __future__ import annotations

from pathlib import Path

import pytest

from sessiond.errors import InvalidArgumentError
from sessiond.service import compaction_settings as cs
from sessiond.service.config import ConfigError, load_config


def test_defaults_are_pis() -> None:
    s = cs.Settings()
    assert (s.enabled, s.reserve_tokens, s.keep_recent_tokens) == (True, 16384, 20000)
    assert s.microcompact.keep_recent == 3 and not s.microcompact.enabled


def test_model_overrides_resolve_each_value_on_its_own() -> None:
    s = cs.apply(cs.Settings(), {"modelOverrides": {"anthropic/claude-x": {"reserveTokens": 30000}}})
    resolved = s.for_model({"provider": "anthropic", "modelId": "claude-x"})
    assert (resolved.reserve_tokens, resolved.keep_recent_tokens) == (30000, 20000)
    other = s.for_model({"provider": "openai", "modelId": "claude-x"})  # exact key, provider included
    assert other.reserve_tokens == 16384


def test_null_resets_and_snake_case_is_accepted() -> None:
    s = cs.apply(cs.Settings(), {"reserve_tokens": 1000, "microcompact": {"keep_recent": 7}})
    assert s.reserve_tokens == 1000 and s.microcompact.keep_recent == 7
    assert cs.apply(s, {"reserveTokens": None}).reserve_tokens == 16384
    assert cs.stored(s, cs.Settings()) == {"reserveTokens": 1000, "microcompact": {"keepRecent": 7}}


@pytest.mark.parametrize(
    ("values", "field"),
    [
        ({"reserveTokens": 1.5}, "set.reserveTokens"),
        ({"keepRecentTokens": True}, "set.keepRecentTokens"),
        ({"contextWindow": 0}, "set.contextWindow"),
        ({"modelOverrides": []}, "set.modelOverrides"),
        ({"modelOverrides": {"a/b": 5}}, "set.modelOverrides.a/b"),
        ({"microcompact": {"gapMinutes": -1}}, "set.microcompact.gapMinutes"),
        ({"microcompact": {"tools": "read"}}, "set.microcompact.tools"),
        ({"nope": 1}, "set.nope"),
    ],
)
def test_bad_values_name_their_field(values: dict[str, object], field: str) -> None:
    with pytest.raises(InvalidArgumentError) as exc:
        cs.apply(cs.Settings(), values, "set")
    assert exc.value.field == field


def test_config_file_sections(tmp_path: Path) -> None:
    config = tmp_path / "c.toml"
    config.write_text(
        '[compaction]\nreserve_tokens = 9000\nsummarizer = "extractive"\n'
        "[compaction.microcompact]\nenabled = true\n"
        "[summarizer]\ntimeout = 12\n"
        '[summarizer.command]\nargv = ["summarize", "--fast"]\n'
        '[summarizer.http]\nbase_url = "http://127.0.0.1:9/v1"\nmodel = "m"\n'
    )
    loaded = load_config({"SESSIOND_CONFIG": str(config)}, root=tmp_path / "store")
    assert loaded.compaction.reserve_tokens == 9000 and loaded.compaction.microcompact.enabled
    assert loaded.summarizer.timeout == 12.0
    assert loaded.summarizer.command is not None and loaded.summarizer.command.argv == ("summarize", "--fast")
    assert loaded.summarizer.http is not None and loaded.summarizer.http.model == "m"


@pytest.mark.parametrize(
    ("text", "field"),
    [
        ("[compaction]\nreserve_tokens = -1\n", "compaction.reserve_tokens"),
        ("[summarizer.command]\nargv = []\n", "summarizer.command.argv"),
        ('[summarizer.http]\nbase_url = "ftp://x"\nmodel = "m"\n', "summarizer.http.base_url"),
        ("[summarizer]\ntimeout = 0\n", "summarizer.timeout"),
        ("[summarizer]\nretries = 3\n", "summarizer"),
    ],
)
def test_bad_config_names_the_key(tmp_path: Path, text: str, field: str) -> None:
    config = tmp_path / "c.toml"
    config.write_text(text)
    with pytest.raises(ConfigError) as exc:
        load_config({"SESSIOND_CONFIG": str(config)}, root=tmp_path / "store")
    assert exc.value.data["field"] == field
