"""Daemon configuration: where things are, limits, defaults. Read once at start.

Sources, later ones winning: built-in defaults, the TOML file (``$SESSIOND_CONFIG``, else
``$XDG_CONFIG_HOME/sessiond/config.toml``, else ``<store>/config.toml``), environment
(``SESSIOND_HOME``), command-line options. Every key is optional::

    durability = "buffered"          # or "fsync"
    estimator = "pi"                 # or "tiktoken"
    [context_windows]                # model -> tokens; "provider/model", "model" or "prefix*"
    "my-local-model" = 32768
    [limits]
    max_message_bytes = 16777216
    max_entries_per_append = 1000
    max_connections = 256
    max_in_flight = 64
    notification_queue = 4096
    header_timeout = 30.0
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import SessiondError
from ..store.journal import Durability
from ..store.layout import StoreLayout, default_root


class ConfigError(SessiondError):
    """The configuration file is unreadable or has a wrong value."""


@dataclass(frozen=True)
class Limits:
    max_message_bytes: int = 16 * 1024 * 1024
    """Largest JSON-RPC message accepted (one frame or one NDJSON line)."""
    max_header_bytes: int = 8192
    max_entries_per_append: int = 1000
    max_connections: int = 256
    max_in_flight: int = 64
    """Requests one connection may have running at once; more get -32001 overloaded."""
    notification_queue: int = 4096
    """Outgoing messages queued for one connection before updates are dropped (resync)."""
    max_queued_bytes: int = 64 * 1024 * 1024
    """Outgoing bytes queued for one connection before it is disconnected."""
    header_timeout: float = 30.0
    """Seconds a connection may take to send a complete message header once it started one."""


@dataclass(frozen=True)
class Config:
    layout: StoreLayout
    durability: Durability = Durability.BUFFERED
    estimator: str = "pi"
    context_windows: Mapping[str, int] = field(default_factory=dict)
    limits: Limits = field(default_factory=Limits)
    socket_path: Path | None = None
    config_file: Path | None = None

    @property
    def root(self) -> Path:
        return self.layout.root

    @property
    def run_dir(self) -> Path:
        """Directory of the socket (0700): ``$XDG_RUNTIME_DIR/sessiond`` or ``<store>/run``."""
        if self.socket_path is not None:
            return self.socket_path.parent
        xdg = os.environ.get("XDG_RUNTIME_DIR")
        if xdg and os.path.isabs(xdg) and os.path.isdir(xdg) and _is_default_store(self.layout.root):
            return Path(xdg) / "sessiond"
        return self.layout.root / "run"

    @property
    def socket(self) -> Path:
        return self.socket_path if self.socket_path is not None else self.run_dir / "sessiond.sock"

    @property
    def lock_path(self) -> Path:
        return self.layout.root / "daemon.lock"

    @property
    def token_path(self) -> Path:
        return self.layout.root / "tcp.token"


def _is_default_store(root: Path) -> bool:
    """Only the default store uses the shared runtime dir, so two stores never share a socket."""
    try:
        return (
            root.resolve()
            == default_root({k: v for k, v in os.environ.items() if k != "SESSIOND_HOME"}).resolve()
        )
    except OSError:
        return False


def config_file(env: Mapping[str, str], root: Path) -> Path | None:
    if env.get("SESSIOND_CONFIG"):
        return Path(env["SESSIOND_CONFIG"]).expanduser()
    xdg = env.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    candidate = Path(xdg) / "sessiond" / "config.toml"
    if candidate.is_file():
        return candidate
    candidate = root / "config.toml"
    return candidate if candidate.is_file() else None


def load_config(
    env: Mapping[str, str] | None = None, *, root: Path | None = None, socket: Path | None = None
) -> Config:
    env = os.environ if env is None else env
    root = Path(root) if root is not None else default_root(env)
    path = config_file(env, root)
    data: dict[str, Any] = {}
    if path is not None:
        try:
            with open(path, "rb") as f:
                data = tomllib.load(f)
        except FileNotFoundError:
            if env.get("SESSIOND_CONFIG"):
                raise ConfigError(f"Config file {path} does not exist", path=str(path)) from None
        except (OSError, tomllib.TOMLDecodeError) as exc:
            raise ConfigError(f"Cannot read config file {path}: {exc}", path=str(path)) from exc
    try:
        durability = Durability(data.get("durability", "buffered"))
    except ValueError:
        raise ConfigError("durability must be 'buffered' or 'fsync'", field="durability") from None
    estimator = data.get("estimator", "pi")
    if estimator not in ("pi", "tiktoken"):
        raise ConfigError("estimator must be 'pi' or 'tiktoken'", field="estimator")
    windows = data.get("context_windows", {})
    if not isinstance(windows, dict) or not all(
        isinstance(k, str) and type(v) is int and v > 0 for k, v in windows.items()
    ):
        raise ConfigError(
            "context_windows must map model names to positive integers", field="context_windows"
        )
    limits_data = data.get("limits", {})
    defaults = Limits()
    known = {f: getattr(defaults, f) for f in defaults.__dataclass_fields__}
    unknown = set(limits_data) - set(known)
    if unknown:
        raise ConfigError(f"unknown limits: {', '.join(sorted(unknown))}", field="limits")
    for name, value in limits_data.items():
        if type(value) is not type(known[name]) or value <= 0:
            raise ConfigError(
                f"limits.{name} must be a positive {type(known[name]).__name__}", field=f"limits.{name}"
            )
    return Config(
        layout=StoreLayout(root),
        durability=durability,
        estimator=estimator,
        context_windows=windows,
        limits=Limits(**{**known, **limits_data}),
        socket_path=socket,
        config_file=path,
    )
