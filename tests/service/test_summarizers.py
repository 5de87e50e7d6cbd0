"""The command and HTTP summarizers: what they report for each outcome, and that a timeout or a
cancellation leaves no process and no connection behind."""

from __future__ import annotations

import os
import shutil
import socket
import ssl
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import orjson
import pytest

from sessiond.compaction.summary import SummaryRequest, SummaryResponse, failure
from sessiond.service.summarizers import SummarizerUnavailableError
from sessiond.service.summarizers.command import MAX_OUTPUT, CommandSummarizer
from sessiond.service.summarizers.http import HttpSummarizer, parse_completion
from tests.service.fake_model import FakeModel, Reply, completion

pytestmark = pytest.mark.anyio


def make_request(prompt: str = "PROMPT", kind: Any = "history", max_tokens: int = 1234) -> SummaryRequest:
    return SummaryRequest(
        kind=kind,
        system_prompt="SYSTEM",
        prompt=prompt,
        conversation="",
        previous_summary=None,
        custom_instructions=None,
        max_tokens=max_tokens,
    )


def alive(pid: int) -> bool:
    """Whether a process runs (a zombie does not count)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except FileNotFoundError:
        return False
    except OSError:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        return True


def wait_dead(*pids: int, within: float = 3.0) -> None:
    deadline = time.monotonic() + within
    while any(alive(p) for p in pids):
        assert time.monotonic() < deadline, f"still running: {[p for p in pids if alive(p)]}"
        time.sleep(0.01)


async def wait_for(predicate: Any, within: float = 5.0) -> None:
    with anyio.fail_after(within):
        while not predicate():
            await anyio.sleep(0.01)


# --- command -------------------------------------------------------------------------------


def script(tmp_path: Path, body: str) -> list[str]:
    path = tmp_path / "summarize.py"
    path.write_text(textwrap.dedent(body))
    return [sys.executable, str(path)]


SPAWN_HELPER = textwrap.dedent("""
    import os, subprocess, sys, time
    helper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    with open(sys.argv[1] + ".tmp", "w") as f:
        f.write(f"{os.getpid()} {helper.pid}")
    os.replace(sys.argv[1] + ".tmp", sys.argv[1])
""")


def read_pids(path: Path) -> list[int]:
    return [int(p) for p in path.read_text().split()]


async def test_command_summary_from_stdout(tmp_path: Path) -> None:
    argv = script(
        tmp_path,
        """
        import os, sys
        data = sys.stdin.buffer.read().decode("utf-8")
        kind, budget = os.environ["SESSIOND_SUMMARY_KIND"], os.environ["SESSIOND_MAX_TOKENS"]
        extra = os.environ["EXTRA"]
        sys.stdout.write(f"  {kind} {budget} {extra} {data!r} {len(data)}\\n\\n")
        """,
    )
    summarizer = CommandSummarizer(argv, timeout=10, env={"EXTRA": "x"})
    assert summarizer.name == "command"
    response = await summarizer.summarize(make_request("héllo", kind="turn_prefix", max_tokens=77))
    expected = "SYSTEM\n\nhéllo"
    assert response == SummaryResponse(f"turn_prefix 77 x {expected!r} {len(expected)}", "stop")
    assert failure(response, "Summarization") is None


async def test_command_large_prompt_no_deadlock(tmp_path: Path) -> None:
    # The program answers while it reads: stdin and stdout must flow at the same time.
    argv = script(
        tmp_path,
        """
        import sys
        total = 0
        while chunk := sys.stdin.buffer.read1(65536):
            total += len(chunk)
            sys.stdout.write("x" * len(chunk))
        sys.stdout.write(f" {total}")
        """,
    )
    prompt = "p" * (3 * 1024 * 1024 // 4)
    response = await CommandSummarizer(argv, timeout=10).summarize(make_request(prompt))
    size = len("SYSTEM\n\n") + len(prompt)
    assert response.stop_reason == "stop"
    assert response.text == "x" * size + f" {size}"


async def test_command_that_ignores_stdin(tmp_path: Path) -> None:
    argv = script(tmp_path, "print('done without reading')")
    response = await CommandSummarizer(argv, timeout=10).summarize(make_request("p" * 1_000_000))
    assert response == SummaryResponse("done without reading", "stop")


async def test_command_nonzero_exit(tmp_path: Path) -> None:
    argv = script(
        tmp_path,
        """
        import sys
        print("partial output")
        sys.stderr.write("noise\\n" * 2000 + "model overloaded\\n")
        sys.exit(3)
        """,
    )
    response = await CommandSummarizer(argv, timeout=10).summarize(make_request())
    assert response.stop_reason == "error"
    assert response.text == ""
    assert response.error_message is not None
    assert response.error_message.startswith("summary command exited with code 3: ")
    assert response.error_message.endswith("noise\nmodel overloaded")
    assert len(response.error_message) < 4200  # the stderr tail only
    assert failure(response, "Summarization") == f"Summarization failed: {response.error_message}"


async def test_command_nonzero_exit_without_stderr(tmp_path: Path) -> None:
    argv = script(tmp_path, "raise SystemExit(1)")
    response = await CommandSummarizer(argv, timeout=10).summarize(make_request())
    assert response == SummaryResponse("", "error", "summary command exited with code 1")


async def test_command_killed_by_signal(tmp_path: Path) -> None:
    argv = script(tmp_path, "import os, signal; os.kill(os.getpid(), signal.SIGTERM)")
    response = await CommandSummarizer(argv, timeout=10).summarize(make_request())
    assert response == SummaryResponse("", "error", "summary command was killed by signal 15")


async def test_command_empty_output(tmp_path: Path) -> None:
    argv = script(tmp_path, "import sys; sys.stdin.read(); print('  \\n\\t')")
    response = await CommandSummarizer(argv, timeout=10).summarize(make_request())
    assert response == SummaryResponse("", "stop")
    assert failure(response, "Summarization") == "Summarization failed: the summarizer returned no text"


async def test_command_output_too_large(tmp_path: Path) -> None:
    argv = script(tmp_path, f"import sys; sys.stdout.write('y' * {MAX_OUTPUT + 10})")
    response = await CommandSummarizer(argv, timeout=10).summarize(make_request())
    assert response.stop_reason == "error"
    assert response.error_message == f"summary command printed more than {MAX_OUTPUT} bytes"


async def test_command_invalid_utf8_is_replaced(tmp_path: Path) -> None:
    argv = script(tmp_path, "import sys; sys.stdout.buffer.write(b'ok \\xff end')")
    response = await CommandSummarizer(argv, timeout=10).summarize(make_request())
    assert response == SummaryResponse("ok \ufffd end", "stop")


async def test_command_timeout_kills_the_process_group(tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    argv = [*script(tmp_path, SPAWN_HELPER + "time.sleep(60)\n"), str(pids)]
    started = time.monotonic()
    response = await CommandSummarizer(argv, timeout=0.5).summarize(make_request())
    assert time.monotonic() - started < 3
    assert response == SummaryResponse("", "error", "summary command timed out after 0.5 s")
    wait_dead(*read_pids(pids))


async def test_command_timeout_when_a_helper_keeps_stdout_open(tmp_path: Path) -> None:
    # The program itself exits at once, but a helper it started holds the pipe: the output never
    # ends, so this is a timeout, and the helper is killed with the group.
    pids = tmp_path / "pids"
    argv = [*script(tmp_path, SPAWN_HELPER + "print('summary')\n"), str(pids)]
    response = await CommandSummarizer(argv, timeout=0.5).summarize(make_request())
    assert response.stop_reason == "error"
    assert response.error_message == "summary command timed out after 0.5 s"
    wait_dead(*read_pids(pids))


async def test_command_cancellation_kills_the_process(tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    argv = [*script(tmp_path, SPAWN_HELPER + "time.sleep(60)\n"), str(pids)]
    summarizer = CommandSummarizer(argv, timeout=30)
    results: list[SummaryResponse] = []

    async def run() -> None:
        results.append(await summarizer.summarize(make_request()))

    started = time.monotonic()
    async with anyio.create_task_group() as tg:
        tg.start_soon(run)
        await wait_for(pids.exists)
        tg.cancel_scope.cancel()
    assert time.monotonic() - started < 5
    assert results == []
    wait_dead(*read_pids(pids))


async def test_command_cancellation_propagates(tmp_path: Path) -> None:
    argv = script(tmp_path, "import time; time.sleep(60)")
    with anyio.move_on_after(0.3) as scope:
        await CommandSummarizer(argv, timeout=30).summarize(make_request())
    assert scope.cancelled_caught


async def test_command_missing_program(tmp_path: Path) -> None:
    summarizer = CommandSummarizer([str(tmp_path / "no-such-program"), "--flag"])
    with pytest.raises(SummarizerUnavailableError, match="no-such-program"):
        await summarizer.summarize(make_request())
    with pytest.raises(SummarizerUnavailableError, match="sessiond-no-such-command"):
        await CommandSummarizer(["sessiond-no-such-command"]).summarize(make_request())


async def test_command_not_executable(tmp_path: Path) -> None:
    path = tmp_path / "not-executable"
    path.write_text("#!/bin/sh\necho hi\n")
    path.chmod(0o644)
    with pytest.raises(SummarizerUnavailableError, match="not-executable"):
        await CommandSummarizer([str(path)]).summarize(make_request())


def test_command_bad_configuration() -> None:
    with pytest.raises(SummarizerUnavailableError):
        CommandSummarizer([])
    with pytest.raises(SummarizerUnavailableError):
        CommandSummarizer("summarize --fast")  # a string, not an argv
    with pytest.raises(SummarizerUnavailableError):
        CommandSummarizer(["x"], timeout=0)


# --- http ----------------------------------------------------------------------------------


@pytest.fixture
def fake() -> Iterator[FakeModel]:
    with FakeModel() as server:
        yield server


USAGE = {"prompt_tokens": 120, "completion_tokens": 30, "total_tokens": 150}


async def test_http_summary(fake: FakeModel, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_MODEL_KEY", "sk-test-123")
    fake.reply = lambda _: Reply(body=completion("## Goal\nsummary", usage=USAGE))
    summarizer = HttpSummarizer(
        fake.url + "/", "tiny-model", api_key_env="FAKE_MODEL_KEY", timeout=5,
        extra_headers={"X-Extra": "1"},
    )  # fmt: skip
    assert summarizer.name == "http"
    response = await summarizer.summarize(make_request("the prompt", max_tokens=999))
    assert response == SummaryResponse(
        "## Goal\nsummary",
        "stop",
        usage={
            "input": 120,
            "output": 30,
            "cacheRead": 0,
            "cacheWrite": 0,
            "totalTokens": 150,
            "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0},
        },
    )
    [sent] = fake.requests
    assert sent.path == "/v1/chat/completions"
    assert sent.headers["Authorization"] == "Bearer sk-test-123"
    assert sent.headers["Content-Type"] == "application/json"
    assert sent.headers["Host"] == f"127.0.0.1:{fake.port}"
    assert sent.headers["X-Extra"] == "1"
    assert sent.json() == {
        "model": "tiny-model",
        "messages": [
            {"role": "system", "content": "SYSTEM"},
            {"role": "user", "content": "the prompt"},
        ],
        "max_tokens": 999,
        "temperature": 0,
    }


async def test_http_lone_surrogate_in_prompt(fake: FakeModel) -> None:
    response = await HttpSummarizer(fake.url, "m", timeout=5).summarize(make_request("a\ud800b"))
    assert response.stop_reason == "stop"
    assert fake.requests[0].json()["messages"][1]["content"] == "a?b"


async def test_http_without_key(fake: FakeModel) -> None:
    response = await HttpSummarizer(fake.url, "m", timeout=5).summarize(make_request())
    assert response == SummaryResponse("A summary.", "stop")
    assert "Authorization" not in fake.requests[0].headers


async def test_http_missing_key_variable(fake: FakeModel, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("FAKE_MODEL_KEY", raising=False)
    summarizer = HttpSummarizer(fake.url, "m", api_key_env="FAKE_MODEL_KEY", timeout=5)
    with pytest.raises(SummarizerUnavailableError, match="FAKE_MODEL_KEY"):
        await summarizer.summarize(make_request())
    assert fake.requests == []


@pytest.mark.parametrize("mode", ["chunked", "no_length"])
async def test_http_body_framings(fake: FakeModel, mode: str) -> None:
    body = completion("framed " * 20)
    fake.reply = lambda _: Reply(body=body, chunked=mode == "chunked", no_length=mode == "no_length")
    response = await HttpSummarizer(fake.url, "m", timeout=5).summarize(make_request())
    assert response == SummaryResponse("framed " * 20, "stop")


async def test_http_finish_length(fake: FakeModel) -> None:
    fake.reply = lambda _: Reply(body=completion("cut o", "length", usage=USAGE))
    response = await HttpSummarizer(fake.url, "m", timeout=5).summarize(make_request())
    assert (response.text, response.stop_reason, response.tool_call) == ("cut o", "length", False)
    assert response.usage is not None
    assert failure(response, "Summarization") == (
        "Summarization failed: generation hit the token cap and the summary is incomplete"
    )


async def test_http_tool_call(fake: FakeModel) -> None:
    call = {"id": "c1", "type": "function", "function": {"name": "read", "arguments": "{}"}}
    fake.reply = lambda _: Reply(body=completion(None, "tool_calls", tool_calls=[call]))
    response = await HttpSummarizer(fake.url, "m", timeout=5).summarize(make_request())
    assert response.tool_call
    assert response.text == ""
    assert failure(response, "Summarization") == "Summarization attempted to call a tool"


async def test_http_server_error(fake: FakeModel) -> None:
    fake.reply = lambda _: Reply(500, b"Internal <b>trouble</b>\n" + b"x" * 5000)
    response = await HttpSummarizer(fake.url, "m", timeout=5).summarize(make_request())
    assert response.stop_reason == "error"
    assert response.text == ""
    assert response.error_message is not None
    assert response.error_message.startswith("HTTP 500: Internal <b>trouble</b> xxx")
    assert len(response.error_message) < 600


async def test_http_error_json_message(fake: FakeModel) -> None:
    error = {"error": {"message": "Rate limit reached", "type": "rate_limit"}}
    fake.reply = lambda _: Reply(429, error)
    response = await HttpSummarizer(fake.url, "m", timeout=5).summarize(make_request())
    assert response == SummaryResponse("", "error", "HTTP 429: Rate limit reached")


@pytest.mark.parametrize(
    ("body", "fragment"),
    [
        (b"{not json", "malformed JSON"),
        (b"[1, 2]", "unexpected JSON"),
        (b'{"choices": []}', "no choices[0].message"),
        (b'{"error": {"message": "busy"}}', "an error: busy"),
    ],
)
async def test_http_malformed_body(fake: FakeModel, body: bytes, fragment: str) -> None:
    fake.reply = lambda _: Reply(200, body)
    response = await HttpSummarizer(fake.url, "m", timeout=5).summarize(make_request())
    assert response.stop_reason == "error"
    assert response.error_message is not None
    assert fragment in response.error_message


async def test_http_no_answer_times_out(fake: FakeModel) -> None:
    fake.reply = lambda _: Reply(hang=True)
    started = time.monotonic()
    response = await HttpSummarizer(fake.url, "m", timeout=0.3).summarize(make_request())
    assert time.monotonic() - started < 3
    assert response == SummaryResponse(
        "", "error", f"the summary endpoint {fake.url}/chat/completions did not answer within 0.3 s"
    )
    assert fake.client_closed.wait(3)


async def test_http_connection_refused() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    response = await HttpSummarizer(f"http://127.0.0.1:{port}", "m", timeout=5).summarize(make_request())
    assert response.stop_reason == "error"
    assert response.error_message is not None
    assert response.error_message.startswith(f"cannot reach the summary endpoint http://127.0.0.1:{port}")


async def test_http_cancellation_closes_the_connection(fake: FakeModel) -> None:
    fake.reply = lambda _: Reply(hang=True)
    summarizer = HttpSummarizer(fake.url, "m", timeout=30)
    results: list[SummaryResponse] = []

    async def run() -> None:
        results.append(await summarizer.summarize(make_request()))

    started = time.monotonic()
    async with anyio.create_task_group() as tg:
        tg.start_soon(run)
        await wait_for(fake.received.is_set)
        tg.cancel_scope.cancel()
    assert time.monotonic() - started < 3
    assert results == []
    assert fake.client_closed.wait(3)


def test_http_bad_configuration() -> None:
    for url in ("ftp://host/v1", "localhost:8080", "http://", "http://user:pw@host/v1"):
        with pytest.raises(SummarizerUnavailableError):
            HttpSummarizer(url, "m")
    with pytest.raises(SummarizerUnavailableError):
        HttpSummarizer("http://host", "m", extra_headers={"X": "a\r\nInjected: 1"})
    with pytest.raises(SummarizerUnavailableError):
        HttpSummarizer("http://host", "m", timeout=-1)


def test_parse_completion_content_parts_and_cached_usage() -> None:
    body = completion(
        [{"type": "text", "text": "one"}, {"type": "image_url", "image_url": {}}, {"text": "two"}],
        None,
        usage={**USAGE, "prompt_tokens_details": {"cached_tokens": 100}},
    )
    response = parse_completion(orjson.dumps(body))
    assert response.text == "one\ntwo"
    assert response.stop_reason == "stop"
    assert response.usage is not None
    assert (response.usage["input"], response.usage["cacheRead"], response.usage["totalTokens"]) == (
        20,
        100,
        150,
    )


def test_parse_completion_content_filter() -> None:
    response = parse_completion(orjson.dumps(completion("", "content_filter")))
    assert response.stop_reason == "error"
    assert failure(response, "Summarization") is not None


# --- https ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def certificate(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    openssl = shutil.which("openssl")
    if openssl is None:
        pytest.skip("openssl is not installed")
    folder = tmp_path_factory.mktemp("tls")
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(
        [openssl, "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
         "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1", "-addext",
         "subjectAltName=IP:127.0.0.1", "-keyout", str(key), "-out", str(cert)],
        check=True, capture_output=True,
    )  # fmt: skip
    return cert, key


@pytest.fixture
def tls_fake(certificate: tuple[Path, Path]) -> Iterator[FakeModel]:
    cert, key = certificate
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    with FakeModel(tls=context) as server:
        yield server


async def test_https_summary(tls_fake: FakeModel, certificate: tuple[Path, Path]) -> None:
    context = ssl.create_default_context(cafile=str(certificate[0]))
    summarizer = HttpSummarizer(tls_fake.url, "m", timeout=5, ssl_context=context)
    assert tls_fake.url.startswith("https://")
    response = await summarizer.summarize(make_request())
    assert response == SummaryResponse("A summary.", "stop")
    assert tls_fake.requests[0].json()["model"] == "m"


async def test_https_certificate_is_verified(tls_fake: FakeModel) -> None:
    response = await HttpSummarizer(tls_fake.url, "m", timeout=5).summarize(make_request())
    assert response.stop_reason == "error"
    assert response.error_message is not None
    assert "CERTIFICATE_VERIFY_FAILED" in response.error_message or "certificate" in response.error_message


async def test_https_cancellation(tls_fake: FakeModel, certificate: tuple[Path, Path]) -> None:
    tls_fake.reply = lambda _: Reply(hang=True)
    context = ssl.create_default_context(cafile=str(certificate[0]))
    summarizer = HttpSummarizer(tls_fake.url, "m", timeout=30, ssl_context=context)
    with anyio.move_on_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(summarizer.summarize, make_request())
            await wait_for(tls_fake.received.is_set)
            tg.cancel_scope.cancel()
    assert tls_fake.client_closed.wait(3)
