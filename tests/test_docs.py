"""The docs stay true: the configuration reference loads, and its defaults are the defaults."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from sessiond.service.config import load_config
from tests.conftest import REPO


def toml_block(doc: str) -> str:
    match = re.search(r"```toml\n(.*?)```", doc, re.S)
    assert match is not None
    return match.group(1)


def test_the_configuration_reference_loads_and_matches_the_defaults(tmp_path: Path) -> None:
    text = toml_block((REPO / "docs" / "configuration.md").read_text())
    config_file = tmp_path / "config.toml"
    config_file.write_text(text)
    loaded = load_config({"SESSIOND_CONFIG": str(config_file)}, root=tmp_path / "store")
    defaults = load_config({}, root=tmp_path / "store")
    data = tomllib.loads(text)
    assert loaded.limits == defaults.limits
    assert loaded.watch == defaults.watch and loaded.durability == defaults.durability
    assert loaded.memory == defaults.memory
    assert loaded.search == defaults.search
    assert set(data["search"]) == set(defaults.search.__dataclass_fields__)
    assert set(data["memory"]) == set(defaults.memory.__dataclass_fields__)  # every key documented
    assert loaded.compaction.reserve_tokens == defaults.compaction.reserve_tokens
    assert loaded.compaction.microcompact == defaults.compaction.microcompact
    assert loaded.summarizer.timeout == defaults.summarizer.timeout
    assert set(data["limits"]) == set(defaults.limits.__dataclass_fields__)  # every limit documented


LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


def test_relative_links_in_the_readme_and_docs_resolve() -> None:
    """A newcomer following a link from the README or a doc page never lands on nothing."""
    pages = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md")), REPO / "benchmarks" / "README.md"]
    broken = []
    for page in pages:
        for target in LINK.findall(page.read_text(encoding="utf-8")):
            if "://" in target or target.startswith("mailto:"):
                continue
            if not (page.parent / target).exists():
                broken.append(f"{page.relative_to(REPO)} -> {target}")
    assert broken == []
