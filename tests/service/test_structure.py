"""The service's modules import each other without a circle, and the helpers not ``Service``.

Read from the source (every import: module level, inside functions, under ``TYPE_CHECKING``),
because a deferred import or a type-only one is still a dependency: it is how the helpers
reached back into ``Service`` before the registry existed.
"""

from __future__ import annotations

from tests.imports import PACKAGE, cycles, import_graph


def test_the_cycle_finder_finds_a_cycle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(graph) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_circle_in_the_service() -> None:
    graph = import_graph(PACKAGE)
    service = {m: {t for t in ts if t.startswith("sessiond.service")} for m, ts in graph.items()}
    service = {m: ts for m, ts in service.items() if m.startswith("sessiond.service")}
    assert cycles(service) == []


def test_only_the_transport_and_nothing_in_the_service_depends_on_service_itself() -> None:
    """The daemon builds it (server) and the connection and its handlers' ``Caller`` name its type."""
    graph = import_graph(PACKAGE)
    users = sorted(m for m, targets in graph.items() if "sessiond.service.service" in targets)
    assert users == ["sessiond.rpc.connection", "sessiond.rpc.dispatch", "sessiond.rpc.server"]


def test_the_service_never_imports_the_transport_or_the_command_line() -> None:
    graph = import_graph(PACKAGE)
    for module, targets in graph.items():
        if module.startswith("sessiond.service"):
            above = {t for t in targets if t.startswith(("sessiond.rpc", "sessiond.cli"))}
            assert not above, (module, above)
