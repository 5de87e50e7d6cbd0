"""The rpc package's imports, read from the source: no circle, each module below the ones using it,
pygls behind one module, and nothing below the protocol layer importing it."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.conftest import REPO

SESSIOND = REPO / "sessiond"
RPC = SESSIOND / "rpc"

# Each rpc module and the rpc modules it may import (directly): a strict order, bottom first.
ALLOWED = {
    "framing": set(),
    "stream": {"framing"},
    "errors": set(),
    "auth": set(),
    "dispatch": {"errors"},
    "engine": {"dispatch", "errors"},
    "status": {"dispatch"},
    "methods": {"dispatch", "status"},
    "connection": {"auth", "dispatch", "engine", "errors", "framing", "stream"},
    "server": {"auth", "connection", "methods", "stream"},
    "bridge": {"framing"},
}


def _imports(path: Path, package: str) -> set[str]:
    """Absolute names of the sessiond modules (and third-party top-level names) ``path`` imports."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                module = ".".join([*base, node.module] if node.module else base)
            else:
                module = node.module or ""
            names.add(module)
            names.update(f"{module}.{alias.name}" for alias in node.names)
    return names


def _module(path: Path) -> str:
    return ".".join(path.relative_to(REPO).with_suffix("").parts)


RPC_MODULES = sorted(p for p in RPC.glob("*.py") if p.name != "__init__.py")


def test_every_rpc_module_is_in_the_order() -> None:
    assert {p.stem for p in RPC_MODULES} == set(ALLOWED)


@pytest.mark.parametrize("path", RPC_MODULES, ids=lambda p: p.stem)
def test_rpc_modules_import_only_below_them(path: Path) -> None:
    imported = _imports(path, "sessiond.rpc")
    rpc = {name.split(".")[2] for name in imported if name.startswith("sessiond.rpc.")}
    rpc &= set(ALLOWED)
    assert rpc <= ALLOWED[path.stem], f"{path.stem} imports {sorted(rpc - ALLOWED[path.stem])}"


@pytest.mark.parametrize("path", RPC_MODULES, ids=lambda p: p.stem)
def test_pygls_is_behind_one_module(path: Path) -> None:
    imported = _imports(path, "sessiond.rpc")
    uses = any(n == "pygls" or n.startswith(("pygls.", "lsprotocol")) for n in imported)
    assert uses == (path.stem == "engine"), f"{path.stem} imports pygls"


def test_nothing_below_imports_the_rpc_layer() -> None:
    """Only the top layer starts servers and bridges: the command line and the faces that are
    clients of the daemon beside it (``mcp_server/``, ``acp/``: they reach it the way ``sessiond
    connect`` does); the viewer's WebSocket transport (``web/``, a transport beside ``server.py``)
    uses the framing's enum, nothing else."""
    top = {"cli_commands", "mcp_server", "acp"}
    offenders = []
    for path in SESSIOND.rglob("*.py"):
        if path.is_relative_to(RPC) or path.name == "cli.py" or top & set(path.parts):
            continue
        package = _module(path) if path.name == "__init__.py" else _module(path.parent)
        used = {name for name in _imports(path, package) if name.startswith("sessiond.rpc")}
        if "web" in path.relative_to(SESSIOND).parts:
            used -= {"sessiond.rpc.framing", "sessiond.rpc.framing.Framing"}
        if used:
            offenders.append(f"{path.relative_to(REPO)}: {sorted(used)}")
    assert not offenders


def test_the_method_table_and_the_connection_do_not_know_each_other() -> None:
    """The daemon joins them (server.py); connection.py runs any table, methods.py any caller."""

    def knows(path: Path, module: str) -> bool:
        target = f"sessiond.rpc.{module}"
        return any(n == target or n.startswith(target + ".") for n in _imports(path, "sessiond.rpc"))

    assert not knows(RPC / "methods.py", "connection")
    assert not knows(RPC / "connection.py", "methods")


def test_the_private_pygls_api_used_is_the_measured_one() -> None:
    """engine.py's docstring accounts for two private names of pygls (measured); no others."""
    from pygls.protocol import JsonRPCProtocol  # noqa: PLC0415
    from pygls.server import JsonRPCServer  # noqa: PLC0415

    server = JsonRPCServer(JsonRPCProtocol, lambda: None)  # type: ignore[arg-type,return-value]
    names = [*dir(JsonRPCProtocol), *dir(JsonRPCServer), *vars(server), *vars(server.protocol)]
    private = {name for name in names if name.startswith("_") and not name.startswith("__")}
    tree = ast.parse((RPC / "engine.py").read_text(encoding="utf-8"))
    pygls_objects = {"self._protocol", "self._server", "protocol"}
    used = {
        node.attr
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute)
        and node.attr in private
        and ast.unparse(node.value) in pygls_objects
    }
    overridden = {
        item.name
        for node in ast.walk(tree)
        if isinstance(node, ast.ClassDef) and node.name in ("_Protocol", "_Server")
        for item in node.body
        if isinstance(item, ast.FunctionDef)
    }
    assert used | (overridden & private) == {"_handle_request", "_send_data"}
