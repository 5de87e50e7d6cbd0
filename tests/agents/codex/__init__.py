"""Codex CLI run offline against a scripted stand-in of the Responses API (see harness.py)."""
