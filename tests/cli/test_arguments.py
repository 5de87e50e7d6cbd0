"""Argument errors name the unknown option, at the command it was given to (issue 24, item 12).

Plain argparse said ``the following arguments are required: COMMAND`` for ``sessiond --bogus``,
``... required: SESSION`` for ``tree --bogus``, and printed the top-level usage for
``tree X --bogus``: each hid the one thing that was wrong.
"""

from __future__ import annotations

import json

import pytest

from sessiond.cli import main


@pytest.mark.parametrize(
    ("argv", "command", "unknown"),
    [
        (["--bogus"], "sessiond", "--bogus"),
        (["tree", "--bogus"], "sessiond tree", "--bogus"),
        (["tree", "X", "--bogus"], "sessiond tree", "--bogus"),
        (["tree", "X", "--width=3", "--bogus=1"], "sessiond tree", "--bogus=1"),
        (["store", "--bogus"], "sessiond store", "--bogus"),
        (["export", "--frobnicate"], "sessiond export", "--frobnicate"),
    ],
)
def test_an_unknown_option_is_named_by_its_command(
    capsys: pytest.CaptureFixture[str], argv: list[str], command: str, unknown: str
) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert f"{command}: unrecognized arguments: {unknown}" in err, err
    assert "required" not in err
    assert err.startswith(f"usage: {command} "), err


def test_a_missing_argument_is_still_reported(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["tree", "--width", "3"])
    assert "the following arguments are required: SESSION" in capsys.readouterr().err


def test_the_json_document_names_it_too(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["tree", "--json", "--bogus"])
    out = json.loads(capsys.readouterr().out)
    assert out == {"error": {"message": "unrecognized arguments: --bogus", "exitCode": 2}}
