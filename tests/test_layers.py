"""The whole ``sessiond`` package's imports: no circle anywhere, and no import up a layer.

The pure layers (``model``, then ``compaction`` and ``formats``) sit at the bottom and do no
I/O; storage above them, the service above storage, the transports above the service, the
command line on top. A package may import its own layer and the ones below, never one above
— also not lazily or for typing only (``tests/imports.py`` reads every import statement).
"""

from __future__ import annotations

import pytest

from tests.imports import PACKAGE, cycles, import_graph

LAYERS: tuple[frozenset[str], ...] = (
    frozenset({"", "errors"}),  # sessiond/__init__ (the version) and the error types
    frozenset({"model"}),
    frozenset({"compaction", "formats"}),
    frozenset({"store", "filehistory"}),
    frozenset({"inspection"}),
    # What the service keeps beside the sessions: the full-text index and the usage records.
    frozenset({"search", "usage"}),
    frozenset({"service"}),
    # Transports. What both need (the framings' names, the loopback rule) is below them; the
    # viewer (web) knows nothing of JSON-RPC; the daemon (rpc.server) starts the viewer.
    frozenset({"net"}),
    frozenset({"web"}),
    frozenset({"rpc"}),
    frozenset({"cli", "cli_commands", "__main__", "mcp_server", "acp"}),
)
"""Bottom first: the top-level parts of ``sessiond`` (a subpackage or a module) by layer."""


@pytest.fixture(scope="module")
def graph() -> dict[str, set[str]]:
    """The import graph, read when the first test here runs (not at collection, in every worker)."""
    return import_graph(PACKAGE)


def part(module: str) -> str:
    """``sessiond.store.session.core`` -> ``store``; ``sessiond`` itself -> ``""``."""
    names = module.split(".")
    return names[1] if len(names) > 1 else ""


def layer(module: str) -> int:
    name = part(module)
    for level, members in enumerate(LAYERS):
        if name in members:
            return level
    raise AssertionError(f"{module}: {name!r} is in no layer (add it to LAYERS)")


def test_every_module_is_in_a_layer(graph: dict[str, set[str]]) -> None:
    for module in graph:
        layer(module)


def test_no_import_circle_anywhere(graph: dict[str, set[str]]) -> None:
    assert cycles(graph) == []


PURE: dict[str, set[str]] = {"model": {"", "errors"}, "compaction": {"", "errors", "model"}}
PURE["formats"] = PURE["compaction"]


@pytest.mark.parametrize("bottom", sorted(PURE))
def test_the_pure_layers_import_only_the_model_and_the_errors(
    bottom: str, graph: dict[str, set[str]]
) -> None:
    """Spelled out apart from the layers: compaction and formats do not use each other either."""
    allowed = PURE[bottom]
    for module, targets in graph.items():
        if part(module) == bottom:
            used = {part(t) for t in targets} - {bottom}
            assert used <= allowed, f"{module} imports {sorted(used - allowed)}"


def test_no_import_goes_up_a_layer(graph: dict[str, set[str]]) -> None:
    upward = sorted(
        f"{module} -> {target}"
        for module, targets in graph.items()
        for target in targets
        if layer(target) > layer(module)
    )
    assert upward == []


def test_the_checks_see_an_upward_import_and_a_circle(graph: dict[str, set[str]]) -> None:
    """The rules are not vacuous: an edge from the model to the service is seen, as is a loop."""
    assert layer("sessiond.service.service") > layer("sessiond.model.tree")
    edited = {m: set(ts) for m, ts in graph.items()}
    edited["sessiond.model.tree"].add("sessiond.service.service")
    edited["sessiond.service.service"].add("sessiond.model.tree")
    assert any("sessiond.model.tree" in c for c in cycles(edited))


def test_the_transports_depend_one_way(graph: dict[str, set[str]]) -> None:
    """``rpc`` may use ``web`` (the daemon starts the viewer), never the reverse: an import of
    the JSON-RPC framing from the viewer's transport would be an upward edge."""
    assert layer("sessiond.net.framing") < layer("sessiond.web.transport") < layer("sessiond.rpc.server")
    assert any(t.startswith("sessiond.web.") for t in graph["sessiond.rpc.server"])
    edited = {m: set(ts) for m, ts in graph.items()}
    edited["sessiond.web.transport"].add("sessiond.rpc.framing")
    upward = [(m, t) for m, ts in edited.items() for t in ts if layer(t) > layer(m)]
    assert upward == [("sessiond.web.transport", "sessiond.rpc.framing")]
