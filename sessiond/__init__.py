"""sessiond: a session daemon for coding agents (Pi-compatible JSONL session trees)."""

__version__ = "0.1.0"
