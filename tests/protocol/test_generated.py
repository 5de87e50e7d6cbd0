"""The generated protocol files (``protocol/sessiond.schema.json``, ``protocol/SPEC.md``) are
fresh, every method's example matches its models, and the params models reject wrong types."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, ValidationError

from sessiond_protocol import ERRORS, METHODS, NOTIFICATIONS, ErrorCode, MethodSpec
from tests.protocol.tools import generate

SPECS = list(METHODS.values())
WRONG_VALUES: list[tuple[str, Any]] = [
    ("integer", 12345),
    ("string", "not-a-number"),
    ("object", {"unexpected": "object"}),
    ("array", ["unexpected"]),
]


def _load_schema() -> dict[str, Any]:
    schema: dict[str, Any] = json.loads(generate.SCHEMA_PATH.read_text(encoding="utf-8"))
    return schema


def _json_types(schema: dict[str, Any], defs: dict[str, Any]) -> set[str] | None:
    """The JSON types a property schema accepts; None when it accepts anything."""
    if "$ref" in schema:
        return _json_types(defs[schema["$ref"].removeprefix(generate.REF_PREFIX)], defs)
    for key in ("anyOf", "oneOf"):
        if key in schema:
            types: set[str] = set()
            for member in schema[key]:
                inner = _json_types(member, defs)
                if inner is None:
                    return None
                types |= inner
            return types
    if "const" in schema or "enum" in schema:
        values = [schema["const"]] if "const" in schema else schema["enum"]
        return {
            "string" if isinstance(v, str) else "integer" if isinstance(v, int) else "other" for v in values
        }
    kind = schema.get("type")
    if kind is None:
        return None
    types = set(kind) if isinstance(kind, list) else {kind}
    if "number" in types:
        types.add("integer")
    return types


def _wrong_type_case(model: type[BaseModel]) -> tuple[str, Any] | None:
    """The first required field of ``model`` with a value of a JSON type it does not accept."""
    schema = model.model_json_schema(ref_template=generate.REF_TEMPLATE)
    defs = schema.get("$defs", {})
    for name in schema.get("required", []):
        accepted = _json_types(schema["properties"][name], defs)
        if accepted is None:
            continue
        for json_type, value in WRONG_VALUES:
            if json_type not in accepted:
                return name, value
    return None


WRONG_TYPE_CASES = [(spec, case) for spec in SPECS if (case := _wrong_type_case(spec.params)) is not None]


def test_generated_files_are_fresh() -> None:
    stale = generate.stale_files()
    report = "".join(f"\n{path}:\n{diff}" for path, diff in stale.items())
    assert not stale, (
        "the generated protocol files are stale; "
        f"run `{generate.REGENERATE_COMMAND}` in the repository root{report}"
    )


def test_generation_is_deterministic() -> None:
    first, second = generate.render_all(), generate.render_all()
    assert first == second
    for text in first.values():
        assert text.endswith("\n") and not text.endswith("\n\n")
        assert "\r" not in text


@pytest.mark.parametrize("spec", SPECS, ids=[s.name for s in SPECS])
def test_example_validates(spec: MethodSpec) -> None:
    spec.params.model_validate(spec.example)
    if spec.example_result is not None:
        assert spec.result is not None
        spec.result.model_validate(spec.example_result)
    generate.validate_examples([spec])


def test_a_bad_example_fails_loudly() -> None:
    spec = METHODS["session/new"]
    bad = MethodSpec(spec.name, spec.params, spec.result, spec.summary, spec.errors, {"cwd": 42})
    with pytest.raises(generate.ExampleError, match=r"session/new.*NewParams"):
        generate.validate_examples([bad])
    typo = MethodSpec(
        spec.name, spec.params, spec.result, spec.summary, spec.errors, {"cwd": "/x", "subscrib": True}
    )
    with pytest.raises(generate.ExampleError, match="subscrib"):
        generate.validate_examples([typo])


def test_wrong_type_cases_cover_every_params_model_with_a_required_field() -> None:
    covered = {spec.name for spec, _ in WRONG_TYPE_CASES}
    for spec in SPECS:
        if any(f.is_required() for f in spec.params.model_fields.values()):
            assert spec.name in covered, spec.name
    assert covered


@pytest.mark.parametrize(("spec", "case"), WRONG_TYPE_CASES, ids=[s.name for s, _ in WRONG_TYPE_CASES])
def test_params_reject_a_wrong_type(spec: MethodSpec, case: tuple[str, Any]) -> None:
    name, value = case
    params = {**spec.example, name: value}
    with pytest.raises(ValidationError) as info:
        spec.params.model_validate(params)
    locations = [error["loc"] for error in info.value.errors()]
    assert locations, info.value
    assert all(loc[0] == name for loc in locations), locations
    assert name in str(info.value)


def test_schema_references_every_method_and_notification() -> None:
    schema = _load_schema()
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    defs = schema["$defs"]
    meta = schema["x-sessiond"]
    assert meta["protocolVersion"] >= 1
    assert list(meta["methods"]) == list(METHODS)
    for spec in SPECS:
        entry = meta["methods"][spec.name]
        assert entry["params"] == {"$ref": f"#/$defs/{spec.params.__name__}"}
        assert defs[spec.params.__name__]["title"] == spec.params.__name__
        if spec.result is None:
            assert entry["result"] is None
        else:
            assert entry["result"] == {"$ref": f"#/$defs/{spec.result.__name__}"}
            assert defs[spec.result.__name__]["title"] == spec.result.__name__
        assert entry["errors"] == [int(code) for code in spec.errors]
        assert entry["longRunning"] is spec.long_running
    for name, model in NOTIFICATIONS.items():
        assert meta["notifications"][name] == {"$ref": f"#/$defs/{model.__name__}"}
    assert meta["errors"] == {
        str(int(code)): {"name": code.name, "description": ERRORS[code]} for code in ErrorCode
    }


def test_every_ref_resolves() -> None:
    schema = _load_schema()
    refs: list[str] = []

    def walk(value: Any) -> None:
        if isinstance(value, dict):
            if isinstance(value.get("$ref"), str):
                refs.append(value["$ref"])
            for child in value.values():
                walk(child)
        elif isinstance(value, list):
            for child in value:
                walk(child)

    walk(schema)
    assert refs
    missing = {r for r in refs if r.removeprefix(generate.REF_PREFIX) not in schema["$defs"]}
    assert not missing


def test_check_reports_a_stale_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "SPEC.md"
    target.write_text("old line\n", encoding="utf-8")
    stale = generate.stale_files({target: "new line\n", tmp_path / "absent.json": "{}\n"})
    assert "-old line" in stale[target] and "+new line" in stale[target]
    assert stale[tmp_path / "absent.json"] == "(missing)"
    assert generate.stale_files({target: "old line\n"}) == {}


def test_check_exit_codes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "SPEC.md"
    target.write_text("same\n", encoding="utf-8")
    monkeypatch.setattr(generate, "render_all", lambda: {target: "same\n"})
    assert generate.main(["--check"]) == 0
    monkeypatch.setattr(generate, "render_all", lambda: {target: "changed\n"})
    assert generate.main(["--check"]) == 1
    err = capsys.readouterr().err
    assert f"stale: {target}" in err and generate.REGENERATE_COMMAND in err
    assert target.read_text(encoding="utf-8") == "same\n"
    assert generate.main([]) == 0
    assert target.read_bytes() == b"changed\n"


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s.name)
def test_no_method_lists_an_error_twice(spec: MethodSpec) -> None:
    assert len(spec.errors) == len(set(spec.errors)), [c.name for c in spec.errors]


def test_a_new_method_becomes_a_typed_client_method(monkeypatch: pytest.MonkeyPatch) -> None:
    """Adding a method is a spec and a regeneration: the client's method follows from the models."""
    from pydantic import Field  # noqa: PLC0415

    from sessiond_protocol import methods as M  # noqa: PLC0415
    from sessiond_protocol.methods import SessionRef  # noqa: PLC0415
    from sessiond_protocol.models import Result  # noqa: PLC0415
    from tests.protocol.tools import python_client  # noqa: PLC0415

    class ArchiveParams(SessionRef):
        reason: str = Field(description="Why it is archived.")
        keepDays: int = Field(30, ge=1, description="Days before it may be deleted.")

    class ArchiveResult(Result):
        archived: bool

    monkeypatch.setattr(M, "ArchiveResult", ArchiveResult, raising=False)  # as if declared there
    spec = MethodSpec("session/archive", ArchiveParams, ArchiveResult, "Archive a session.")
    text = python_client.render([spec])
    compile(text, "methods.py", "exec")  # valid Python
    assert "async def session_archive(self, session_id: str, reason: str, *, keep_days: int = 30)" in text
    assert "keep_days: Days before it may be deleted." in text
    assert "session_archive = Blocking(Methods.session_archive)" in text
    assert '"session/archive": "session_archive",' in text
    assert "-> M.ArchiveResult:" in text
