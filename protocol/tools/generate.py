"""Generate ``sessiond.schema.json`` and ``SPEC.md`` from the models of ``sessiond_protocol``.

``.venv/bin/python protocol/tools/generate.py`` writes both files (in ``protocol/``); ``--check``
writes nothing and exits 1, naming each stale file with a short diff, when the files on disk
differ from what would be generated. The output depends on the models only: no timestamps,
``\\n`` line endings, a trailing newline. A tool of the repository, not of the shipped package
(the daemon and the clients never need it).

Every method's example params and result are validated against their models first; an example
that does not validate (or carries a top-level field its model does not declare) stops the
generator with :class:`ExampleError`.
"""

from __future__ import annotations

import argparse
import difflib
import json
import re
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import python_client
from pydantic import BaseModel, TypeAdapter, ValidationError
from pydantic.json_schema import GenerateJsonSchema, JsonSchemaMode, models_json_schema

from sessiond_protocol.errors import ERRORS, ErrorCode
from sessiond_protocol.methods import METHODS, AppendParams, EntriesParams, ListParams, MethodSpec, SessionRef
from sessiond_protocol.notifications import NOTIFICATIONS, SERVER_REQUESTS
from sessiond_protocol.version import PROTOCOL_VERSION

__all__ = [
    "REGENERATE_COMMAND",
    "SCHEMA_PATH",
    "SPEC_PATH",
    "ExampleError",
    "build_schema",
    "main",
    "render_all",
    "render_schema",
    "render_spec",
    "stale_files",
    "validate_examples",
    "write_all",
]

JSON = dict[str, Any]

PROTOCOL_DIR: Final = Path(__file__).resolve().parent.parent
SCHEMA_PATH: Final = PROTOCOL_DIR / "sessiond.schema.json"
SPEC_PATH: Final = PROTOCOL_DIR / "SPEC.md"
REGENERATE_COMMAND: Final = ".venv/bin/python protocol/tools/generate.py"

DIALECT: Final = "https://json-schema.org/draft/2020-12/schema"
REF_TEMPLATE: Final = "#/$defs/{model}"
REF_PREFIX: Final = "#/$defs/"
SCHEMA_TITLE: Final = "sessiond protocol"
SCHEMA_DESCRIPTION: Final = (
    "The JSON-RPC 2.0 wire contract of sessiond: params and results of every method, every "
    "notification and every error code. Generated from the sessiond_protocol package; do not edit."
)
DIFF_LINES: Final = 40

GENERAL_ERRORS: Final = (
    ErrorCode.PARSE_ERROR,
    ErrorCode.INVALID_REQUEST,
    ErrorCode.METHOD_NOT_FOUND,
    ErrorCode.INTERNAL_ERROR,
    ErrorCode.SERVER_NOT_INITIALIZED,
    ErrorCode.REQUEST_CANCELLED,
    ErrorCode.OVERLOADED,
    ErrorCode.MESSAGE_TOO_LARGE,
)
"""Errors of the connection or the JSON-RPC layer, which any request can get (methods do not list them)."""


class ExampleError(ValueError):
    """A method's example params or result does not match its model."""


class _SchemaGenerator(GenerateJsonSchema):
    """pydantic's generator without the per-field titles it derives from field names.

    A field title (``"Sessionid"``) carries nothing the property name does not, and
    json-schema-to-typescript turns each one into its own type alias (``Sessionid``,
    ``Sessionid1``, ...). Model titles (the class names) stay: they name the ``$defs``.
    """

    def field_title_should_be_set(self, schema: Any) -> bool:
        return False


# --------------------------------------------------------------------------- examples


def _declared_fields(model: type[BaseModel]) -> set[str]:
    names = set(model.model_fields)
    names.update(f.alias for f in model.model_fields.values() if f.alias)
    return names


def _check_example(method: str, what: str, model: type[BaseModel], example: Any) -> None:
    try:
        model.model_validate(example)
    except ValidationError as exc:
        raise ExampleError(
            f"{method}: example {what} does not validate against {model.__name__}:\n{exc}"
        ) from exc
    if isinstance(example, dict):
        unknown = sorted(set(example) - _declared_fields(model))
        if unknown:
            raise ExampleError(
                f"{method}: example {what} has fields {model.__name__} does not declare: {', '.join(unknown)}"
            )


def validate_examples(methods: Iterable[MethodSpec] | None = None) -> None:
    """Validate every method's example params and result; raise :class:`ExampleError` on the first bad one."""
    for spec in METHODS.values() if methods is None else methods:
        _check_example(spec.name, "params", spec.params, spec.example)
        if spec.example_result is None:
            continue
        if spec.result is None:
            raise ExampleError(f"{spec.name}: has an example result but no result model")
        _check_example(spec.name, "result", spec.result, spec.example_result)


# --------------------------------------------------------------------------- JSON Schema


def _schema_inputs() -> list[tuple[type[BaseModel], JsonSchemaMode]]:
    inputs: list[tuple[type[BaseModel], JsonSchemaMode]] = []

    def add(model: type[BaseModel], mode: JsonSchemaMode) -> None:
        if (model, mode) not in inputs:
            inputs.append((model, mode))

    for spec in METHODS.values():
        add(spec.params, "validation")
        if spec.result is not None:
            add(spec.result, "serialization")
    for model in NOTIFICATIONS.values():
        add(model, "serialization")
    for params, result in SERVER_REQUESTS.values():
        add(params, "serialization")
        add(result, "validation")
    return inputs


def _canonical(value: Any, *, keep_order: bool = False) -> Any:
    """Sort the keys of every object except a ``properties`` map (field order is meaningful)."""
    if isinstance(value, dict):
        keys = list(value) if keep_order else sorted(value)
        return {k: _canonical(value[k], keep_order=not keep_order and k == "properties") for k in keys}
    if isinstance(value, list):
        return [_canonical(v) for v in value]
    return value


def build_schema() -> JSON:
    """The JSON Schema document (draft 2020-12) as a dict, with its ``x-sessiond`` metadata."""
    validate_examples()
    missing = [code.name for code in ErrorCode if code not in ERRORS]
    if missing:
        raise ValueError(f"error codes without a description in ERRORS: {', '.join(missing)}")

    keymap, document = models_json_schema(
        _schema_inputs(), ref_template=REF_TEMPLATE, schema_generator=_SchemaGenerator
    )
    defs: JSON = document["$defs"]
    if "ErrorCode" in defs:
        raise ValueError("a model is named ErrorCode; the name is taken by the error code enum")
    defs["ErrorCode"] = TypeAdapter(ErrorCode).json_schema(schema_generator=_SchemaGenerator)

    def ref(model: type[BaseModel], mode: JsonSchemaMode) -> JSON:
        target = str(keymap[(model, mode)]["$ref"])
        name = target.removeprefix(REF_PREFIX)
        if name != model.__name__ or defs.get(name, {}).get("title") != model.__name__:
            raise ValueError(f"{model.__name__} ({mode}) got the unstable $defs name {name!r}")
        return {"$ref": target}

    methods = {
        spec.name: _canonical(
            {
                "summary": spec.summary,
                "params": ref(spec.params, "validation"),
                "result": None if spec.result is None else ref(spec.result, "serialization"),
                "errors": [int(code) for code in spec.errors],
                "longRunning": spec.long_running,
            }
        )
        for spec in METHODS.values()
    }
    notifications = {name: ref(model, "serialization") for name, model in NOTIFICATIONS.items()}
    server_requests = {
        name: {"params": ref(params, "serialization"), "result": ref(result, "validation")}
        for name, (params, result) in SERVER_REQUESTS.items()
    }
    errors = {str(int(code)): {"description": ERRORS[code], "name": code.name} for code in ErrorCode}
    return {
        "$schema": DIALECT,
        "title": SCHEMA_TITLE,
        "description": SCHEMA_DESCRIPTION,
        "x-sessiond": {
            "protocolVersion": PROTOCOL_VERSION,
            "methods": methods,
            "notifications": notifications,
            "serverRequests": server_requests,
            "errors": errors,
        },
        "$defs": _canonical(defs),
    }


def render_schema(schema: JSON | None = None) -> str:
    """``sessiond.schema.json``'s text."""
    return json.dumps(build_schema() if schema is None else schema, indent=2, ensure_ascii=False) + "\n"


# --------------------------------------------------------------------------- Markdown helpers


def _code(text: str) -> str:
    fence = "``" if "`" in text else "`"
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def _json_inline(value: Any) -> str:
    return _code(json.dumps(value, ensure_ascii=False))


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def _table(header: Sequence[str], rows: Iterable[Sequence[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows]
    return lines


def _slug(heading: str) -> str:
    """The anchor GitHub gives a heading."""
    text = heading.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def _json_block(value: Any) -> list[str]:
    return ["```json", *json.dumps(value, indent=2, ensure_ascii=False).splitlines(), "```"]


def _range(low: Any, high: Any, unit: str = "") -> str | None:
    suffix = f" {unit}" if unit else ""
    if low is not None and high is not None:
        return f"{low}–{high}{suffix}"
    if low is not None:
        return f"≥ {low}{suffix}"
    if high is not None:
        return f"≤ {high}{suffix}"
    return None


@dataclass
class _Row:
    name: str
    type: str
    required: bool
    default: str
    description: str


@dataclass
class _Block:
    """A table of fields with a caption; a discriminated union yields one per variant."""

    caption: str | None
    rows: list[_Row] = field(default_factory=list)


class _Renderer:
    """Renders the parts of SPEC.md from the generated JSON Schema."""

    def __init__(self, schema: JSON) -> None:
        self.schema = schema
        self.defs: JSON = schema["$defs"]
        self.meta: JSON = schema["x-sessiond"]

    # ---------------------------------------------------------------- schema access

    def resolve(self, ref: str) -> JSON:
        target: JSON = self.defs[ref.removeprefix(REF_PREFIX)]
        return target

    def is_record(self, schema: JSON) -> bool:
        """A ``$ref`` to a model with declared fields (worth expanding)."""
        return "$ref" in schema and bool(self.resolve(schema["$ref"]).get("properties"))

    def prop(self, model: type[BaseModel], name: str) -> JSON:
        found: JSON = self.defs[model.__name__]["properties"][name]
        return found

    # ---------------------------------------------------------------- types

    def type_of(self, schema: JSON) -> str:
        text = self._base_type(schema)
        notes = self._constraints(schema)
        if not notes or schema.get("type") == "array":
            return text
        if notes[0] == "non-empty":
            return " ".join(["non-empty", text, *(f"({n})" for n in notes[1:])])
        return f"{text} ({'; '.join(notes)})"

    def _base_type(self, schema: JSON) -> str:
        if "$ref" in schema:
            target = self.resolve(schema["$ref"])
            return str(target["title"]) if target.get("properties") else "object"
        if "const" in schema:
            return _json_inline(schema["const"])
        if "enum" in schema:
            return " | ".join(_json_inline(v) for v in schema["enum"])
        if "oneOf" in schema:
            disc = schema.get("discriminator", {}).get("propertyName")
            kinds = len(schema["oneOf"])
            return (
                f"object: one of {kinds} kinds by {_code(disc)}, below"
                if disc
                else self._union(schema["oneOf"])
            )
        if "anyOf" in schema:
            return self._union(schema["anyOf"])
        kind = schema.get("type")
        if kind == "array":
            items = schema.get("items")
            inner = self.type_of(items) if isinstance(items, dict) else "any"
            notes = self._constraints(schema)
            head = f"array ({'; '.join(notes)})" if notes else "array"
            return f"{head} of ({inner})" if " | " in inner else f"{head} of {inner}"
        if isinstance(kind, list):
            return " | ".join(str(k) for k in kind)
        if isinstance(kind, str):
            return kind
        return "any"

    def _union(self, members: list[JSON]) -> str:
        seen: list[str] = []
        for member in members:
            text = self.type_of(member)
            if text not in seen:
                seen.append(text)
        return " | ".join(seen)

    @staticmethod
    def _constraints(schema: JSON) -> list[str]:
        length: str | None = "non-empty"
        if schema.get("minLength") != 1 or "maxLength" in schema:
            length = _range(schema.get("minLength"), schema.get("maxLength"), "chars")
        notes = [
            length,
            _range(
                schema.get("minimum", schema.get("exclusiveMinimum")),
                schema.get("maximum", schema.get("exclusiveMaximum")),
            ),
            _range(schema.get("minItems"), schema.get("maxItems"), "items"),
        ]
        out = [n for n in notes if n]
        if "exclusiveMinimum" in schema or "exclusiveMaximum" in schema:
            out.append("bounds exclusive")
        if "pattern" in schema:
            out.append(f"pattern {_code(schema['pattern'])}")
        return out

    # ---------------------------------------------------------------- field tables

    def blocks(self, model_schema: JSON) -> list[_Block]:
        main = _Block(None)
        extra: list[_Block] = []
        self._collect(model_schema, "", main.rows, extra, ())
        return [main, *extra]

    def _collect(
        self, obj: JSON, prefix: str, rows: list[_Row], extra: list[_Block], stack: tuple[str, ...]
    ) -> None:
        required = set(obj.get("required", []))
        for name, prop in obj.get("properties", {}).items():
            path = prefix + name
            description = prop.get("description", "")
            core, _ = self._core(prop)
            if not description and self.is_record(core):
                description = self.resolve(core["$ref"]).get("description", "")
            default = _json_inline(prop["default"]) if "default" in prop else ""
            rows.append(_Row(path, self.type_of(prop), name in required, default, description))
            self._expand(prop, path, rows, extra, stack)

    def _core(self, schema: JSON) -> tuple[JSON, str]:
        """Strip ``| null`` and arrays: the schema of the value inside, and ``[]`` per array level."""
        suffix = ""
        while True:
            if "anyOf" in schema:
                members = [m for m in schema["anyOf"] if m.get("type") != "null"]
                if len(members) != 1:
                    return {"anyOf": members}, suffix
                schema = members[0]
            elif schema.get("type") == "array" and isinstance(schema.get("items"), dict):
                schema = schema["items"]
                suffix += "[]"
            else:
                return schema, suffix

    def _expand(
        self, prop: JSON, path: str, rows: list[_Row], extra: list[_Block], stack: tuple[str, ...]
    ) -> None:
        core, suffix = self._core(prop)
        where = path + suffix
        if "$ref" in core:
            name = core["$ref"].removeprefix(REF_PREFIX)
            if name not in stack and self.is_record(core):
                self._collect(self.resolve(core["$ref"]), where + ".", rows, extra, (*stack, name))
            return
        variants: list[JSON] = core.get("oneOf") or core.get("anyOf") or []
        if not variants or not all(self.is_record(v) for v in variants):
            return
        disc = core.get("discriminator", {}).get("propertyName")
        for variant in variants:
            name = variant["$ref"].removeprefix(REF_PREFIX)
            target = self.resolve(variant["$ref"])
            tag = target["properties"].get(disc, {}) if disc else {}
            label = f"{disc} = {json.dumps(tag['const'])}" if "const" in tag else name
            caption = f"{_code(where)} — {_code(label)} ({name})"
            if target.get("description"):
                caption += f": {target['description']}"
            block = _Block(caption)
            extra.append(block)
            if name not in stack:
                self._collect(target, "", block.rows, extra, (*stack, name))

    def field_tables(self, model_schema: JSON) -> list[str]:
        lines: list[str] = []
        for block in self.blocks(model_schema):
            if block.caption is not None:
                lines += ["", block.caption + ":"]
            lines.append("")
            if not block.rows:
                lines.append("No fields.")
                continue
            lines += _table(
                ["Field", "Type", "Required", "Default", "Description"],
                (
                    [_code(r.name), r.type, "yes" if r.required else "no", r.default, r.description]
                    for r in block.rows
                ),
            )
        return lines

    def model_section(self, title: str, ref: JSON | None, empty: str) -> list[str]:
        if ref is None:
            return [f"**{title}**: `null`."]
        name = ref["$ref"].removeprefix(REF_PREFIX)
        target = self.resolve(ref["$ref"])
        lines = [f"**{title}** ({_code(name)})"]
        if target.get("description"):
            lines += ["", target["description"]]
        if not target.get("properties"):
            return [*lines, "", empty]
        return lines + self.field_tables(target)

    # ---------------------------------------------------------------- sections

    def method(self, spec: MethodSpec) -> list[str]:
        meta = self.meta["methods"][spec.name]
        lines = [f"### {_code(spec.name)}", "", spec.summary]
        if spec.long_running:
            lines += [
                "",
                "*Long-running*: accepts a `workDoneToken` in its params and then reports `$/progress`.",
            ]
        lines += ["", *self.model_section("Params", meta["params"], "No params: send `{}` or omit `params`.")]
        lines += ["", *self.model_section("Result", meta["result"], "An empty object: `{}`.")]
        lines += ["", "**Errors**", ""]
        if spec.errors:
            lines += _table(
                ["Code", "Name", "Description"],
                ([str(int(c)), _code(c.name), ERRORS[c]] for c in spec.errors),
            )
            lines.append("")
        lines.append("Besides the [general errors](#general-errors) any request can get.")
        lines += ["", "**Example**", "", "Request:", ""]
        request: JSON = {"jsonrpc": "2.0", "id": 1, "method": spec.name}
        if spec.example or spec.params.model_fields:
            request["params"] = spec.example
        lines += _json_block(request)
        lines += ["", "Response:", ""]
        if spec.result is None:
            lines += _json_block({"jsonrpc": "2.0", "id": 1, "result": None})
        elif spec.example_result is None:
            lines.append("(see result fields)")
        else:
            lines += _json_block({"jsonrpc": "2.0", "id": 1, "result": spec.example_result})
        return lines

    def notification(self, name: str) -> list[str]:
        ref = self.meta["notifications"][name]
        model = ref["$ref"].removeprefix(REF_PREFIX)
        target = self.resolve(ref["$ref"])
        lines = [f"### {_code(name)}", "", f"Params: {_code(model)}."]
        if target.get("description"):
            lines += ["", target["description"]]
        return lines + self.field_tables(target)

    def server_request(self, name: str) -> list[str]:
        lines = [f"### {_code(name)}", ""]
        for what in ("params", "result"):
            ref = self.meta["serverRequests"][name][what]
            model = ref["$ref"].removeprefix(REF_PREFIX)
            target = self.resolve(ref["$ref"])
            lines += [f"{what.title()}: {_code(model)}."]
            if target.get("description"):
                lines += ["", target["description"]]
            lines += [*self.field_tables(target), ""]
        return lines[:-1]

    def errors_table(self) -> list[str]:
        raisers: dict[int, list[str]] = {int(c): [] for c in ErrorCode}
        for spec in METHODS.values():
            for code in spec.errors:
                raisers[int(code)].append(spec.name)
        with_params = [s.name for s in METHODS.values() if s.params.model_fields]
        rows = []
        for code in ErrorCode:
            names = raisers[int(code)]
            if code in GENERAL_ERRORS:
                listed = "any request"
            elif names == with_params:
                listed = "every method with params"
            elif names:
                listed = ", ".join(_code(n) for n in names)
            else:
                listed = "(no method lists it)"
            rows.append([str(int(code)), _code(code.name), ERRORS[code], listed])
        return _table(["Code", "Name", "Description", "Raised by"], rows)


# --------------------------------------------------------------------------- SPEC.md


def _methods_by_area() -> dict[str, list[str]]:
    areas: dict[str, list[str]] = {}
    for name in METHODS:
        area = name.split("/", 1)[0] if "/" in name else "lifecycle"
        areas.setdefault(area, []).append(name)
    return areas


def _intro(r: _Renderer) -> list[str]:
    entries = r.prop(AppendParams, "entries")
    list_limit = r.prop(ListParams, "limit")
    page_limit = r.prop(EntriesParams, "limit")
    session_id = r.prop(SessionRef, "sessionId")
    entry_id = r.prop(AppendParams, "parentId")
    long_running = ", ".join(_code(s.name) for s in METHODS.values() if s.long_running)
    general = ", ".join(f"{int(c)} {_code(c.name)}" for c in GENERAL_ERRORS)
    least = entries.get("minItems")
    list_range = _range(list_limit.get("minimum"), list_limit.get("maximum"))
    page_range = _range(page_limit.get("minimum"), page_limit.get("maximum"))
    id_range = _range(session_id.get("minLength"), session_id.get("maxLength"), "characters")
    entry_id = next((a for a in entry_id.get("anyOf", [entry_id]) if a.get("type") == "string"), entry_id)
    entry_range = _range(entry_id.get("minLength"), entry_id.get("maxLength"), "characters")
    id_pattern = _code(session_id.get("pattern", ""))
    return f"""\
# sessiond protocol reference

<!-- Generated by `protocol/tools/generate.py` from the models in protocol/sessiond_protocol/.
Do not edit; change the models and regenerate. -->

Protocol version **{PROTOCOL_VERSION}**. The machine-readable form of everything below is
[`sessiond.schema.json`](sessiond.schema.json) (JSON Schema draft 2020-12; its `x-sessiond`
object maps each method and notification to its `$defs`).

## Overview

sessiond speaks JSON-RPC 2.0 (UTF-8). Methods are named `area/verb` and fields are camelCase;
where ACP (the Agent Client Protocol) already names a concept sessiond uses its name and shape
(`session/new|load|list|close|delete`, the `session/update` notification with a `sessionUpdate`
discriminator, `usage_update`, `session_info_update`, `$/cancel_request`).

### Transport

* **Unix socket** (the default): `$XDG_RUNTIME_DIR/sessiond/sessiond.sock`, else under the
  store; the directory is 0700, the socket 0600, and the peer's uid is checked. One daemon
  serves every client of a store.
* **TCP**, on loopback only and only when enabled, guarded by a token read from a 0600 file.
* **stdio**: `sessiond serve --stdio` serves one client; `sessiond connect` (what an editor
  spawns) bridges stdio to the socket and starts the daemon if none runs.
* **WebSocket**: the session viewer's, on loopback; TCP's token rule plus browser checks
  (below).

### WebSocket

The daemon's viewer listens on a loopback IP address, `ui.listen` in the configuration
(default `127.0.0.1:0`, any free port; `sessiond serve --ui HOST:PORT` or `--ui off`). Where it
listens is written to `ui.json` beside the socket: `{{"url", "pid", "tokenPath", "rpcPath"}}`.

* `GET /rpc` upgrades to a WebSocket (RFC 6455) that carries this protocol: **one JSON-RPC
  message per WebSocket message**, both ways, with no `Content-Length` header and no newline
  delimiter. The server sends text messages and reads text or binary ones. Other paths serve
  the viewer's page or answer HTTP 404.
* **Token**: as on TCP, `initialize` must carry `authToken`, the content of the 0600 token file
  (`tokenPath`). A request before `initialize` fails with -32002 `SERVER_NOT_INITIALIZED`. A
  missing or wrong token is answered -32600 (`Authentication failed`) and the connection closes.
* **Host**: the `Host` header of every HTTP request must name the listener itself (its address
  and port; also `localhost:PORT` when that address is `127.0.0.1` or `::1`). Any other host
  gets HTTP 421 before any upgrade, which stops DNS rebinding.
* **Origin**: a handshake that sends `Origin` must come from the viewer's own origin,
  `http://` + the `Host`; another origin gets HTTP 403. A client that sends no `Origin` (not a
  browser) is let through to the token check.
* **Refusals after the upgrade**: a message over the maximum message size closes the WebSocket
  with close code 1009 (message too big) unread; a message that is not JSON is answered -32700
  and the connection goes on; when the daemon's connection limit is reached, the server sends
  one error message (`"id": null`, -32001 `OVERLOADED`) and closes. The server pings every 20 s
  and drops a peer that does not answer within 20 s.

### Framing

Two framings are accepted on every byte-stream transport (a WebSocket needs none) and sniffed
from the first byte of a connection:

* the LSP base protocol, `Content-Length: N\\r\\n\\r\\n` followed by N bytes of JSON (the default);
  N is ASCII digits only, in one `Content-Length` header (a sign, `_` or a second header is a
  broken header: -32700 with `data.closing`);
* newline-delimited JSON, one message per line (what ACP clients speak), when the first byte is `{{`.

The server answers in the framing the client used.

### Lifecycle

1. The client sends the `initialize` request (protocol version, client info, capabilities);
   any other request before it fails with -32002 `SERVER_NOT_INITIALIZED`.
2. The client sends the `initialized` notification; then any requests and notifications, in
   both directions, with several requests in flight at once.
3. The client sends the `shutdown` request (no further requests are accepted), then the `exit`
   notification, and closes the connection. The server answers every request received before
   `exit` (also those still running) before it closes its side; so it does when the client
   half-closes the connection instead (`printf '...' | sessiond connect`).

### Cancellation

Either `$/cancelRequest {{"id": <request id>}}` (LSP) or `$/cancel_request {{"requestId": <request
id>}}` (ACP) cancels a request in flight: it then fails with -32800 `REQUEST_CANCELLED`. A
request that already finished is not affected. An id that is neither a string nor an integer
(an object, an array, a fraction, null) is answered -32602 with `"id": null` and `data.field`
(`id` or `requestId`); the connection goes on.

### Progress reporting

Long-running requests accept a `workDoneToken` (string or integer) in their params:
{long_running}. The server then sends `$/progress` notifications,
`{{"token": <token>, "value": {{"kind": "begin" | "report" | "end", ...}}}}`, while it works
(see [`$/progress`](#progress)).

### Errors

Errors are JSON-RPC error objects, and they always carry `data`, an object with the details a
client needs to react without parsing `message`: `field` (the offending parameter, for -32602
`INVALID_PARAMS`), `currentLeafId` (for -32012 `LEAF_MISMATCH`), `errno` (for -32018
`STORAGE_ERROR`), `entryId` or `sessionId` (for what was not found). No Python traceback is ever
sent, and a request that fails changes no file.

```json
{{"jsonrpc": "2.0", "id": 7, "error": {{"code": -32602, "message": "entries: at least 1 item",
  "data": {{"field": "entries"}}}}}}
```

An error answering a message that could not be read has `id: null`. When its `data.closing` is
`true` (the byte stream cannot be read on: a broken header, a `Content-Length` body over the
limit) the server closes the connection after it — having answered the requests it received
before.

<a id="general-errors"></a>Each method below lists the errors specific to it. Any request can also
get the general ones, which no method lists:
{general}. See [Error codes](#error-codes) for the full table.

### Notifications and opt-out

The server sends the notifications listed under [Notifications](#notifications): `session/update`
only for sessions this connection subscribed to (`session/new` or `session/load` with
`subscribe`, or `session/subscribe`). A client lists the notification methods, or the
`session/update` kinds (e.g. `usage_update`), it does not want in
`initialize.capabilities.notifications.optOut`.

### Compatibility and versions

Unknown fields in params are ignored, and results and notifications may carry fields not
listed here: clients must ignore what they do not know.

`protocolVersion` is the protocol's major version: compatible additions (a method, an optional
field, a notification, an update kind, an error code) keep it; an incompatible change bumps it.
Client and server must speak the same one. The server answers an `initialize` for another
version with -32030 `PROTOCOL_VERSION_MISMATCH`, naming both versions in the message and in
`data` (`clientVersion`, `serverVersion`); the connection stays open and uninitialized. A client
checks the `protocolVersion` of the `initialize` answer and refuses a server that answers
another one (the Python and TypeScript clients do).

### Limits

* `session/append`: at least {least} entry and at most the server's `limits.max_entries_per_append`
  (default 1000) per batch, written at once or not at all; a longer batch is refused whole.
  With the shared JetStream store a batch is also at most the cluster's `max_payload` (1 MB by
  default) as Pi lines; a bigger one is refused whole with -32602 (`data.field` = `entries`,
  `data.size`, `data.limit`), never split (docs/scale-out.md).
* Page sizes: `session/list` takes a `limit` of {list_range} (default {list_limit.get("default")}),
  `session/entries` one of {page_range} (default {page_limit.get("default")}).
* Session ids: {id_range} (a store file is named after the id, and a file name has at most 255
  bytes); a session id matches {id_pattern}. Entry ids: {entry_range}.
* A message larger than the server's maximum message size fails with -32022
  `MESSAGE_TOO_LARGE` (`data.limit`), in both framings: an NDJSON line is skipped unread and the
  connection goes on; a `Content-Length` body is never read, so the connection closes
  (`data.closing`). Too many requests in flight on one connection fail with -32001
  `OVERLOADED` (retry later); a subscriber that reads too slowly gets a `resync_required`
  update instead of the updates it missed.
""".splitlines()


def render_spec(schema: JSON | None = None) -> str:
    """``SPEC.md``'s text."""
    r = _Renderer(build_schema() if schema is None else schema)
    lines = _intro(r)
    lines += ["", "## Contents", ""]
    for area, names in _methods_by_area().items():
        links = ", ".join(f"[{_code(n)}](#{_slug(n)})" for n in names)
        lines.append(f"* **{area}**: {links}")
    links = ", ".join(f"[{_code(n)}](#{_slug(n)})" for n in NOTIFICATIONS)
    lines += [f"* [Notifications](#notifications): {links}"]
    links = ", ".join(f"[{_code(n)}](#{_slug(n)})" for n in SERVER_REQUESTS)
    lines += [f"* [Server requests](#server-requests): {links}", "* [Error codes](#error-codes)"]
    lines += ["", "## Methods"]
    for spec in METHODS.values():
        lines += ["", *r.method(spec)]
    lines += ["", "## Notifications", "", "Sent by the server; they get no response."]
    for name in NOTIFICATIONS:
        lines += ["", *r.notification(name)]
    lines += [
        "",
        "## Server requests",
        "",
        "Sent by the server to a client that declared the matching capability; answer them like any "
        "JSON-RPC request. A `$/cancelRequest` from the server means the answer is no longer needed.",
    ]
    for name in SERVER_REQUESTS:
        lines += ["", *r.server_request(name)]
    lines += ["", "## Error codes", "", *r.errors_table()]
    return "\n".join(line.rstrip() for line in lines) + "\n"


def _check_anchors(text: str) -> None:
    """Every ``](#anchor)`` link points at a heading or an explicit anchor of the document."""
    anchors: dict[str, int] = {}
    known = set(re.findall(r'<a id="([^"]+)">', text))
    for heading in re.findall(r"^#+ (.+)$", text, flags=re.MULTILINE):
        slug = _slug(heading)
        count = anchors.get(slug, 0)
        anchors[slug] = count + 1
        known.add(slug if count == 0 else f"{slug}-{count}")
    broken = sorted(set(re.findall(r"\]\(#([^)]+)\)", text)) - known)
    if broken:
        raise ValueError(f"SPEC.md links to missing anchors: {', '.join(broken)}")


# --------------------------------------------------------------------------- files and CLI


def render_all() -> dict[Path, str]:
    """What each generated file must contain."""
    schema = build_schema()
    spec = render_spec(schema)
    _check_anchors(spec)
    return {
        SCHEMA_PATH: render_schema(schema),
        SPEC_PATH: spec,
        python_client.CLIENT_METHODS_PATH: python_client.render_formatted(),
    }


def _on_disk(path: Path) -> str | None:
    try:
        return path.read_bytes().decode("utf-8")
    except FileNotFoundError:
        return None


def stale_files(outputs: dict[Path, str] | None = None) -> dict[Path, str]:
    """The generated files whose content on disk differs, each with a short diff (or 'missing')."""
    stale: dict[Path, str] = {}
    for path, expected in (render_all() if outputs is None else outputs).items():
        actual = _on_disk(path)
        if actual == expected:
            continue
        if actual is None:
            stale[path] = "(missing)"
            continue
        diff = list(
            difflib.unified_diff(
                actual.splitlines(keepends=True),
                expected.splitlines(keepends=True),
                fromfile=f"{path.name} (on disk)",
                tofile=f"{path.name} (generated)",
                n=1,
            )
        )
        shown = "".join(line if line.endswith("\n") else line + "\n" for line in diff[:DIFF_LINES])
        if len(diff) > DIFF_LINES:
            shown += f"... ({len(diff) - DIFF_LINES} more diff lines)\n"
        if not diff:
            shown = "(line endings or encoding differ)\n"
        stale[path] = shown
    return stale


def write_all(outputs: dict[Path, str] | None = None) -> list[Path]:
    """Write the generated files whose content changed; return them."""
    written = []
    for path, text in (render_all() if outputs is None else outputs).items():
        if _on_disk(path) == text:
            continue
        with path.open("w", encoding="utf-8", newline="\n") as f:
            f.write(text)
        written.append(path)
    return written


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="protocol/tools/generate.py",
        description="Generate protocol/sessiond.schema.json and protocol/SPEC.md from the models.",
    )
    parser.add_argument(
        "--check", action="store_true", help="write nothing; exit 1 if a generated file is stale"
    )
    args = parser.parse_args(argv)
    try:
        outputs = render_all()
    except ExampleError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.check:
        stale = stale_files(outputs)
        for path, diff in stale.items():
            print(f"stale: {path}", file=sys.stderr)
            print(diff, end="" if diff.endswith("\n") else "\n", file=sys.stderr)
        if stale:
            print(f"run `{REGENERATE_COMMAND}` to regenerate", file=sys.stderr)
            return 1
        print("generated files are up to date")
        return 0
    written = write_all(outputs)
    for path in outputs:
        state = "wrote" if path in written else "unchanged"
        print(f"{state}: {path} ({len(outputs[path].encode())} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
