"""Which summarizer writes a compaction's summary.

``auto`` prefers the agent's own model (a client of the session that declared the
``summarizer`` capability), then what the daemon's configuration names (a command, then an
HTTP endpoint), and falls back to the built-in extractive summarizer, which always works. An
explicit choice that cannot be honoured fails with a message saying what to set up.
"""

from __future__ import annotations

from ...errors import SummarizerUnavailableError
from ..config import SummarizerConfig
from . import Summarizer
from .client import ClientSummarizer, SummarizingClient
from .command import CommandSummarizer
from .extractive import ExtractiveSummarizer
from .http import HttpSummarizer


def choose_summarizer(
    choice: str,
    config: SummarizerConfig,
    client: SummarizingClient | None,
    session_id: str,
    compaction_id: str,
) -> Summarizer:
    if choice in ("auto", "client"):
        if client is not None:
            return ClientSummarizer(client, session_id, compaction_id, config.timeout)
        if choice == "client":
            raise SummarizerUnavailableError(
                "No client of this session declared the summarizer capability "
                "(initialize with capabilities.summarizer = true)",
                "client",
            )
    if choice in ("auto", "command"):
        if config.command is not None:
            return CommandSummarizer(config.command.argv, config.command.timeout, config.command.env)
        if choice == "command":
            raise SummarizerUnavailableError(
                "No summarizer command is configured ([summarizer.command] in the config file)", "command"
            )
    if choice in ("auto", "http"):
        if config.http is not None:
            return HttpSummarizer(
                config.http.base_url, config.http.model, config.http.api_key_env, config.http.timeout
            )
        if choice == "http":
            raise SummarizerUnavailableError(
                "No summarizer endpoint is configured ([summarizer.http] in the config file)", "http"
            )
    return ExtractiveSummarizer()
