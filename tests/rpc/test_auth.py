"""The daemon's credentials for TCP and the viewer (issue 24 item 1), on a clock of the test's:
a one-time code is good once and only for a minute; a viewer token lives while a connection
uses it and an hour after; rotation ends everything but the new token. The daemon-level
behaviour is tested in tests/security/test_other_users.py."""

from __future__ import annotations

from pathlib import Path

from sessiond.rpc.auth import CODE_TTL, MAX_CODES, VIEWER_IDLE, Credentials
from sessiond.rpc.server import read_or_create_token


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_code_is_good_once_and_briefly(tmp_path: Path) -> None:
    clock = Clock()
    creds = Credentials(tmp_path / "tcp.token", read_or_create_token, clock)
    code, ttl = creds.issue_code()
    assert ttl == CODE_TTL and code != creds.token
    granted = creds.check(code)
    assert granted is not None and granted.kind == "viewer" and granted.issued is not None
    assert creds.check(code) is None  # spent
    late, _ = creds.issue_code()
    clock.now += CODE_TTL + 0.001
    assert creds.check(late) is None  # expired
    assert creds.check(creds.token) is not None and creds.check("") is None


def test_a_viewer_token_lives_while_used_and_an_hour_after(tmp_path: Path) -> None:
    clock = Clock()
    creds = Credentials(tmp_path / "tcp.token", read_or_create_token, clock)
    code, _ = creds.issue_code()
    granted = creds.check(code)
    assert granted is not None and granted.viewer is not None
    viewer = granted.viewer
    creds.opened(viewer)
    clock.now += 10 * VIEWER_IDLE  # a tab open for a long time: still good
    again = creds.check(viewer)
    assert again is not None and again.issued is None
    creds.closed(viewer)
    clock.now += VIEWER_IDLE - 1
    assert creds.check(viewer) is not None
    clock.now += VIEWER_IDLE + 1
    assert creds.check(viewer) is None


def test_rotation_ends_the_old_token_codes_and_viewer_tokens(tmp_path: Path) -> None:
    path = tmp_path / "tcp.token"
    creds = Credentials(path, read_or_create_token, Clock())
    old = creds.token
    code, _ = creds.issue_code()
    spare, _ = creds.issue_code()
    granted = creds.check(code)
    assert granted is not None and granted.viewer is not None
    creds.rotate()
    assert creds.token != old and path.read_text().strip() == creds.token
    assert path.stat().st_mode & 0o777 == 0o600
    for stale in (old, spare, granted.viewer):
        assert creds.check(stale) is None
    assert creds.generation == 1


def test_codes_outstanding_are_bounded(tmp_path: Path) -> None:
    creds = Credentials(tmp_path / "tcp.token", read_or_create_token, Clock())
    codes = [creds.issue_code()[0] for _ in range(MAX_CODES + 4)]
    assert creds.check(codes[0]) is None  # the oldest were dropped
    assert creds.check(codes[-1]) is not None
