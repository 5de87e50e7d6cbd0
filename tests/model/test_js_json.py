"""``JSON.stringify``/``JSON.parse`` equivalence, checked against Node itself when available."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sessiond.model.js import UNDEFINED
from sessiond.model.js_json import JSONParseError, dumps, parse, stringify


def test_compact_separators_and_unescaped_non_ascii() -> None:
    assert stringify({"a": [1, "é😀中"], "b": None}) == '{"a":[1,"é😀中"],"b":null}'


def test_integer_like_keys_come_first_like_js_objects() -> None:
    assert stringify({"b": 1, "10": 2, "2": 3, "01": 4, "-1": 5}) == '{"2":3,"10":2,"b":1,"01":4,"-1":5}'


def test_integral_floats_print_as_integers() -> None:
    assert stringify({"x": 1.0, "y": -0.0, "z": 1e21}) == '{"x":1,"y":0,"z":1e+21}'


def test_lone_surrogates_are_escaped() -> None:
    assert stringify("a\ud800b") == '"a\\ud800b"'
    assert dumps(["\udc00"]) == b'["\\udc00"]'


def test_undefined_members() -> None:
    assert stringify({"a": UNDEFINED, "b": [UNDEFINED]}) == '{"b":[null]}'


def test_control_characters() -> None:
    assert stringify("\b\f\n\r\t\x00\x1f\x7f\u2028") == '"\\b\\f\\n\\r\\t\\u0000\\u001f\x7f\u2028"'


def test_pretty_printing_matches_js_layout() -> None:
    assert stringify({"a": [], "b": {}, "c": [1, {"d": 2}]}, indent=2) == (
        '{\n  "a": [],\n  "b": {},\n  "c": [\n    1,\n    {\n      "d": 2\n    }\n  ]\n}'
    )


def test_parse_accepts_what_json_parse_accepts() -> None:
    assert parse(b'"\\ud800"') == "\ud800"
    assert parse(b"1e400") == float("inf")
    assert parse(b"123456789012345678901234567890") == 1.2345678901234568e29
    assert parse(b'{"a":1,"a":2}') == {"a": 2}
    assert parse(b' {"a":1} \r') == {"a": 1}
    assert parse(b'"\xff"') == "\ufffd"  # Node decodes invalid UTF-8 to U+FFFD


@pytest.mark.parametrize("raw", [b"NaN", b"Infinity", b"{'a':1}", b"[1,]", b"", b"\xef\xbb\xbf{}", b"{} x"])
def test_parse_rejects_what_json_parse_rejects(raw: bytes) -> None:
    with pytest.raises(JSONParseError):
        parse(raw)


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**60), max_value=2**60)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(alphabet=st.characters(codec=None, exclude_categories=())),
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(
            st.sampled_from(["a", "b", "0", "1", "10", "01", "-1", "4294967294", "4294967295", "é", "😀"])
            | st.text(max_size=3),
            children,
            max_size=4,
        )
    ),
    max_leaves=12,
)


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
@settings(max_examples=1, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(json_values, min_size=300, max_size=300))
def test_stringify_equals_node(values: list[object]) -> None:
    """300 random values per run, encoded by Node and by us, compact and indented."""
    payload = json.dumps(values, ensure_ascii=True)
    script = (
        "let s='';process.stdin.on('data',d=>s+=d).on('end',()=>{const v=JSON.parse(s);"
        "process.stdout.write(JSON.stringify(v.map(x=>[JSON.stringify(x),JSON.stringify(x,null,2)])))})"
    )
    out = subprocess.run(
        ["node", "-e", script], input=payload, capture_output=True, text=True, check=True
    ).stdout
    expected = json.loads(out)
    for value, (compact, pretty) in zip(values, expected, strict=True):
        assert stringify(value) == compact
        assert stringify(value, indent=2) == pretty
