"""Daemon configuration: where things are, limits, defaults. Read once at start.

Sources, later ones winning: built-in defaults, the TOML file (``$SESSIOND_CONFIG``, else
``$XDG_CONFIG_HOME/sessiond/config.toml``, else ``<store>/config.toml``), environment
(``SESSIOND_HOME``), command-line options. Every key is optional::

    durability = "buffered"          # or "fsync"
    estimator = "pi"                 # or "tiktoken"
    [context_windows]                # model -> tokens; "provider/model", "model" or "prefix*"
    "my-local-model" = 32768         # (else the agent's record, then the genai-prices registry)
    [prices."my-local-model"]        # USD per million tokens; "model" or "prefix*" (docs/usage.md)
    input = 0.5
    output = 1.5
    cache_read = 0.05                # also cache_write (5 min), cache_write_1h
    [limits]
    max_message_bytes = 16777216
    max_entries_per_append = 1000
    max_connections = 256
    max_in_flight = 64
    notification_queue = 4096
    header_timeout = 30.0
    max_anonymous_connections = 32
    initialize_timeout = 10.0
    max_viewer_connections = 128
    max_line_bytes = 8388608         # longer lines of other agents' files: "oversized" entries
    [compaction]                     # defaults for every session (compaction/settings overrides)
    enabled = true                   # automatic threshold and overflow compaction
    reserve_tokens = 16384
    keep_recent_tokens = 20000
    summarizer = "auto"              # auto | client | command | http | extractive
    [compaction.model_overrides."anthropic/claude-sonnet-4"]
    reserve_tokens = 32000
    [compaction.microcompact]
    enabled = false
    keep_recent = 3
    [summarizer]
    timeout = 300.0                  # seconds a client summarizer may take
    [summarizer.command]             # the prompt on stdin, the summary on stdout
    argv = ["llm", "-m", "my-model"]
    timeout = 120.0
    [roots.pi]                       # Pi's own sessions (default $PI_CODING_AGENT_DIR/sessions)
    path = "~/.pi/agent/sessions"
    writable = false
    [roots.claude]                   # Claude Code transcripts, always read-only
    path = "~/.claude/projects"      # default $CLAUDE_CONFIG_DIR/projects
    enabled = true
    [file_history]
    roots = ["/srv/shared"]          # besides a session's cwd, where rewinds may write
    [watch]
    enabled = true                   # follow external appends/rewrites of open and listed sessions
    poll_interval = 0.0              # > 0: stat-poll other agents' roots instead of inotify (NFS)
    own_poll_interval = 0.0          # the store sessiond writes: > 0 stat-polls it instead of inotify
    [memory]                         # parsed session content kept across open sessions
    budget_mb = 64                   # MiB of session lines (bodies, materialised contexts)
    idle_seconds = 60.0              # unused that long: dropped, rebuilt from the file on demand
    [ui]                             # the web session viewer (docs/ui.md)
    enabled = true                   # served by `sessiond serve` (not --stdio)
    listen = "127.0.0.1:0"           # loopback only; port 0: any free port (see <run dir>/ui.json)
    [search]                         # full-text search across sessions (docs/search.md)
    enabled = true
    exclude = ["~/clients/*"]        # root names, or globs over cwds and session file paths
    [summarizer.http]                # an OpenAI-compatible /chat/completions endpoint
    base_url = "http://127.0.0.1:8080/v1"
    model = "my-model"
    api_key_env = "OPENAI_API_KEY"   # the variable holding the key (never the key itself)
    timeout = 120.0
    [store]
    backend = "local"                # or "jetstream": sessions shared by daemons (docs/scale-out.md)
    [store.jetstream]                # needs `pip install 'sessiond[nats]'`
    servers = ["nats://127.0.0.1:4222"]
    stream = "SESSIOND"
    subject_prefix = "sessiond.sessions"
    kv_bucket = "sessiond-sessions"
    object_bucket = "sessiond-blobs" # file-history blobs, one object per content hash
    replicas = 3                     # copies of each entry; acknowledged once a majority has it
    ack_wait = 15.0                  # seconds a write may wait for the cluster, from its request
    connect_timeout = 5.0
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sessiond_protocol.errors import ErrorCode

from ..errors import InvalidArgumentError, SessiondError
from ..store.jetstream.settings import JetStreamSettings
from ..store.journal import Durability
from ..store.layout import StoreLayout, default_root
from ..store.memory import DEFAULT_IDLE, DEFAULT_LIMIT
from .compaction_settings import Settings as CompactionDefaults
from .compaction_settings import apply as apply_compaction
from .roots import Root, build_roots


class ConfigError(SessiondError):
    """The configuration file is unreadable or has a wrong value (or a request's settings do)."""

    error_code = ErrorCode.INVALID_PARAMS


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
    max_anonymous_connections: int = 32
    """TCP and viewer WebSocket connections open at once that have not authenticated yet (a
    budget apart from ``max_connections``: they cannot lock the owner out)."""
    initialize_timeout: float = 10.0
    """Seconds a new connection (not stdio) has to complete ``initialize``; then it is closed."""
    max_viewer_connections: int = 128
    """The viewer's HTTP and WebSocket connections at once (half-open requests included); never
    more than a quarter of the open-file limit."""
    max_line_bytes: int = 8 * 1024 * 1024
    """Longest line read from another agent's file (Claude Code, Codex); a longer one becomes an
    ``oversized`` placeholder entry, never read into memory."""


@dataclass(frozen=True)
class CommandConfig:
    argv: tuple[str, ...]
    timeout: float = 120.0
    env: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class HttpConfig:
    base_url: str
    model: str
    api_key_env: str | None = None
    timeout: float = 120.0


@dataclass(frozen=True)
class SummarizerConfig:
    timeout: float = 300.0
    """Seconds a client summarizer may take for one summary."""
    command: CommandConfig | None = None
    http: HttpConfig | None = None


@dataclass(frozen=True)
class WatchConfig:
    enabled: bool = True
    poll_interval: float = 0.0
    """Roots other agents write: seconds between stat polls; 0 uses inotify (falling back to
    polling if it fails)."""
    own_poll_interval: float = 0.0
    """Roots sessiond writes (its store): seconds between stat polls; 0 uses inotify like the
    other roots (each own append then costs one look at the file, read on the event loop)."""


@dataclass(frozen=True)
class MemoryConfig:
    budget_mb: int = DEFAULT_LIMIT >> 20
    """MiB of session lines the daemon keeps parsed in memory across every open session (body
    caches and materialised contexts; RSS is a few times that). Over it, the least recently
    used go first."""
    idle_seconds: float = DEFAULT_IDLE
    """What an open session keeps parsed and has not used for this long is dropped (rebuilt
    from its file when needed again)."""


@dataclass(frozen=True)
class SearchConfig:
    enabled: bool = True
    """Keep the full-text search index (docs/search.md)."""
    exclude: tuple[str, ...] = ()
    """Never index these: a root's name (``claude``), or globs matched against a session's cwd
    and its file's path (``~/clients/*``)."""


@dataclass(frozen=True)
class UiConfig:
    enabled: bool = True
    listen: str = "127.0.0.1:0"
    """A loopback ``HOST:PORT``; checked when the daemon starts the viewer."""


@dataclass(frozen=True)
class Config:
    layout: StoreLayout
    durability: Durability = Durability.BUFFERED
    estimator: str = "pi"
    context_windows: Mapping[str, int] = field(default_factory=dict)
    prices: Mapping[str, Mapping[str, float]] = field(default_factory=dict)
    """``[prices]``: USD per million tokens by model (or ``prefix*``), over the registry's."""
    limits: Limits = field(default_factory=Limits)
    compaction: CompactionDefaults = field(default_factory=CompactionDefaults)
    summarizer: SummarizerConfig = field(default_factory=SummarizerConfig)
    roots_data: Mapping[str, Any] = field(default_factory=dict)
    env: Mapping[str, str] = field(default_factory=dict)
    watch: WatchConfig = field(default_factory=WatchConfig)
    ui: UiConfig = field(default_factory=UiConfig)
    search: SearchConfig = field(default_factory=SearchConfig)
    memory: MemoryConfig = field(default_factory=MemoryConfig)
    file_history_roots: tuple[Path, ...] = ()
    """Directories besides a session's cwd whose files rewinds may touch."""
    socket_path: Path | None = None
    config_file: Path | None = None
    store_backend: str = "local"
    """``local`` (the JSONL files are the store) or ``jetstream`` (docs/scale-out.md)."""
    jetstream: JetStreamSettings = field(default_factory=JetStreamSettings)

    @property
    def root(self) -> Path:
        return self.layout.root

    @property
    def roots(self) -> list[Root]:
        """Where sessions are served from: the store, Pi's directory, Claude Code's projects."""
        return build_roots(self.layout.sessions_dir, self.roots_data, self.env)

    @property
    def claude_file_history(self) -> Path:
        """Claude Code's file backups (``<CLAUDE_CONFIG_DIR or ~/.claude>/file-history``)."""
        table = self.roots_data.get("claude", {})
        configured = table.get("file_history") if isinstance(table, Mapping) else None
        if configured:
            return Path(str(configured)).expanduser()
        base = self.env.get("CLAUDE_CONFIG_DIR")
        return (Path(base).expanduser() if base else Path.home() / ".claude") / "file-history"

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
    prices = _prices(data.get("prices", {}))
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
    compaction_data = data.get("compaction", {})
    if not isinstance(compaction_data, dict):
        raise ConfigError("compaction must be a table", field="compaction")
    try:
        compaction = apply_compaction(CompactionDefaults(), compaction_data, "compaction")
    except InvalidArgumentError as exc:
        raise ConfigError(exc.message, field=exc.field) from None
    return Config(
        layout=StoreLayout(root),
        compaction=compaction,
        summarizer=_summarizer(data.get("summarizer", {})),
        roots_data=_roots(data.get("roots", {})),
        env=dict(env),
        watch=_watch(data.get("watch", {})),
        ui=_ui(data.get("ui", {})),
        search=_search(data.get("search", {})),
        memory=_memory(data.get("memory", {})),
        file_history_roots=_file_history(data.get("file_history", {})),
        durability=durability,
        estimator=estimator,
        context_windows=windows,
        prices=prices,
        limits=Limits(**{**known, **limits_data}),
        socket_path=socket,
        config_file=path,
        **_store(data.get("store", {})),
    )


def _prices(data: Any) -> dict[str, dict[str, float]]:
    """``[prices."model"]`` tables: known keys, non-negative numbers (USD per million tokens)."""
    if isinstance(data, dict) and not data:
        return {}
    from ..usage.prices import PRICE_KEYS  # noqa: PLC0415 (only with a [prices] table: every command reads the config)

    if not isinstance(data, dict):
        raise ConfigError("prices must be a table of models", field="prices")
    out: dict[str, dict[str, float]] = {}
    for model, table in data.items():
        where = f"prices.{model}"
        if not isinstance(table, dict):
            raise ConfigError(f"{where} must be a table ({', '.join(PRICE_KEYS)})", field=where)
        unknown = set(table) - set(PRICE_KEYS)
        if unknown:
            raise ConfigError(f"{where}: unknown keys {', '.join(sorted(unknown))}", field=where)
        for key, value in table.items():
            if type(value) not in (int, float) or not 0 <= value < float("inf"):
                raise ConfigError(f"{where}.{key} must be a non-negative number", field=f"{where}.{key}")
        if "input" not in table or "output" not in table:
            raise ConfigError(f"{where} needs input and output", field=where)
        out[model] = {k: float(v) for k, v in table.items()}
    return out


def _positive(table: dict[str, Any], name: str, default: float, where: str) -> float:
    value = table.get(name, default)
    if type(value) not in (int, float) or not value > 0:
        raise ConfigError(f"{where}.{name} must be a positive number of seconds", field=f"{where}.{name}")
    return float(value)


def _only(table: dict[str, Any], known: set[str], where: str) -> None:
    unknown = set(table) - known
    if unknown:
        raise ConfigError(f"unknown keys in [{where}]: {', '.join(sorted(unknown))}", field=where)


def _store(data: Any) -> dict[str, Any]:
    if not isinstance(data, dict):
        raise ConfigError("store must be a table", field="store")
    _only(data, {"backend", "jetstream"}, "store")
    backend = data.get("backend", "local")
    if backend not in ("local", "jetstream"):
        raise ConfigError("store.backend must be 'local' or 'jetstream'", field="store.backend")
    table = data.get("jetstream", {})
    if not isinstance(table, dict):
        raise ConfigError("store.jetstream must be a table", field="store.jetstream")
    defaults = JetStreamSettings()
    _only(table, set(defaults.__dataclass_fields__), "store.jetstream")
    servers = table.get("servers", list(defaults.servers))
    if isinstance(servers, str):
        servers = [servers]
    if (
        not isinstance(servers, list)
        or not servers
        or not all(isinstance(u, str) and u.startswith(("nats://", "tls://")) for u in servers)
    ):
        raise ConfigError(
            "store.jetstream.servers must be a non-empty list of nats:// or tls:// URLs",
            field="store.jetstream.servers",
        )
    names: dict[str, str] = {}
    for name in ("stream", "subject_prefix", "kv_bucket", "object_bucket"):
        value = table.get(name, getattr(defaults, name))
        allowed = "-_" + ("." if name == "subject_prefix" else "")
        if not isinstance(value, str) or not value or not all(c.isalnum() or c in allowed for c in value):
            raise ConfigError(
                f"store.jetstream.{name} must be a non-empty name of letters, digits and {allowed!r}",
                field=f"store.jetstream.{name}",
            )
        names[name] = value
    replicas = table.get("replicas", defaults.replicas)
    if type(replicas) is not int or not 1 <= replicas <= 5:
        raise ConfigError(
            "store.jetstream.replicas must be an integer from 1 to 5", field="store.jetstream.replicas"
        )
    settings = JetStreamSettings(
        servers=tuple(servers),
        replicas=replicas,
        ack_wait=_positive(table, "ack_wait", defaults.ack_wait, "store.jetstream"),
        connect_timeout=_positive(table, "connect_timeout", defaults.connect_timeout, "store.jetstream"),
        **names,
    )
    return {"store_backend": backend, "jetstream": settings}


def _summarizer(data: Any) -> SummarizerConfig:
    if not isinstance(data, dict):
        raise ConfigError("summarizer must be a table", field="summarizer")
    _only(data, {"timeout", "command", "http"}, "summarizer")
    command: CommandConfig | None = None
    http: HttpConfig | None = None
    if "command" in data:
        table = data["command"]
        where = "summarizer.command"
        if not isinstance(table, dict):
            raise ConfigError(f"{where} must be a table", field=where)
        _only(table, {"argv", "timeout", "env"}, where)
        argv = table.get("argv")
        if not isinstance(argv, list) or not argv or not all(isinstance(a, str) and a for a in argv):
            raise ConfigError(f"{where}.argv must be a non-empty list of strings", field=f"{where}.argv")
        env = table.get("env", {})
        if not isinstance(env, dict) or not all(isinstance(v, str) for v in env.values()):
            raise ConfigError(f"{where}.env must map names to strings", field=f"{where}.env")
        command = CommandConfig(tuple(argv), _positive(table, "timeout", 120.0, where), env)
    if "http" in data:
        table = data["http"]
        where = "summarizer.http"
        if not isinstance(table, dict):
            raise ConfigError(f"{where} must be a table", field=where)
        _only(table, {"base_url", "model", "api_key_env", "timeout"}, where)
        for name in ("base_url", "model"):
            if not isinstance(table.get(name), str) or not table[name]:
                raise ConfigError(f"{where}.{name} must be a non-empty string", field=f"{where}.{name}")
        if not str(table["base_url"]).startswith(("http://", "https://")):
            raise ConfigError(f"{where}.base_url must be an http(s) URL", field=f"{where}.base_url")
        key_env = table.get("api_key_env")
        if key_env is not None and (not isinstance(key_env, str) or not key_env):
            raise ConfigError(f"{where}.api_key_env must be a variable name", field=f"{where}.api_key_env")
        http = HttpConfig(
            table["base_url"], table["model"], key_env, _positive(table, "timeout", 120.0, where)
        )
    return SummarizerConfig(_positive(data, "timeout", 300.0, "summarizer"), command, http)


def _roots(data: Any) -> dict[str, Any]:
    if not isinstance(data, dict):
        raise ConfigError("roots must be a table", field="roots")
    _only(data, {"pi", "claude", "codex", "opencode"}, "roots")
    for name, table in data.items():
        where = f"roots.{name}"
        if not isinstance(table, dict):
            raise ConfigError(f"{where} must be a table", field=where)
        _only(
            table,
            {"path", "enabled", "writable"}
            if name == "pi"
            else {"path", "enabled", "file_history"}
            if name == "claude"
            else {"path", "enabled"},
            where,
        )
        for name_ in ("path", "file_history"):
            if name_ in table and (not isinstance(table[name_], str) or not table[name_]):
                raise ConfigError(f"{where}.{name_} must be a directory path", field=f"{where}.{name_}")
        for flag in ("enabled", "writable"):
            if flag in table and type(table[flag]) is not bool:
                raise ConfigError(f"{where}.{flag} must be true or false", field=f"{where}.{flag}")
    return data


def _watch(data: Any) -> WatchConfig:
    if not isinstance(data, dict):
        raise ConfigError("watch must be a table", field="watch")
    _only(data, {"enabled", "poll_interval", "own_poll_interval"}, "watch")
    enabled = data.get("enabled", True)
    if type(enabled) is not bool:
        raise ConfigError("watch.enabled must be true or false", field="watch.enabled")
    interval = data.get("poll_interval", 0.0)
    if type(interval) not in (int, float) or interval < 0:
        raise ConfigError("watch.poll_interval must be >= 0 seconds", field="watch.poll_interval")
    own = data.get("own_poll_interval", 0.0)
    if type(own) not in (int, float) or own < 0:
        raise ConfigError(
            "watch.own_poll_interval must be >= 0 seconds (0: kernel watches)",
            field="watch.own_poll_interval",
        )
    return WatchConfig(enabled, float(interval), float(own))


def _memory(data: Any) -> MemoryConfig:
    if not isinstance(data, dict):
        raise ConfigError("memory must be a table", field="memory")
    _only(data, {"budget_mb", "idle_seconds"}, "memory")
    budget = data.get("budget_mb", MemoryConfig.budget_mb)
    if type(budget) is not int or budget <= 0:
        raise ConfigError("memory.budget_mb must be a positive integer (MiB)", field="memory.budget_mb")
    return MemoryConfig(budget, _positive(data, "idle_seconds", DEFAULT_IDLE, "memory"))


def _ui(data: Any) -> UiConfig:
    if not isinstance(data, dict):
        raise ConfigError("ui must be a table", field="ui")
    _only(data, {"enabled", "listen"}, "ui")
    enabled = data.get("enabled", True)
    if type(enabled) is not bool:
        raise ConfigError("ui.enabled must be true or false", field="ui.enabled")
    listen = data.get("listen", "127.0.0.1:0")
    if not isinstance(listen, str) or not listen:
        raise ConfigError('ui.listen must be "HOST:PORT" (a loopback address)', field="ui.listen")
    return UiConfig(enabled, listen)


def _search(data: Any) -> SearchConfig:
    if not isinstance(data, dict):
        raise ConfigError("search must be a table", field="search")
    _only(data, {"enabled", "exclude"}, "search")
    enabled = data.get("enabled", True)
    if type(enabled) is not bool:
        raise ConfigError("search.enabled must be true or false", field="search.enabled")
    exclude = data.get("exclude", [])
    if not isinstance(exclude, list) or not all(isinstance(p, str) and p for p in exclude):
        raise ConfigError(
            "search.exclude must be a list of root names or globs (cwds, paths)", field="search.exclude"
        )
    return SearchConfig(enabled, tuple(exclude))


def _file_history(data: Any) -> tuple[Path, ...]:
    if not isinstance(data, dict):
        raise ConfigError("file_history must be a table", field="file_history")
    _only(data, {"roots"}, "file_history")
    roots = data.get("roots", [])
    if not isinstance(roots, list) or not all(
        isinstance(r, str) and os.path.isabs(os.path.expanduser(r)) for r in roots
    ):
        raise ConfigError(
            "file_history.roots must be a list of absolute directories", field="file_history.roots"
        )
    return tuple(Path(os.path.expanduser(r)) for r in roots)
