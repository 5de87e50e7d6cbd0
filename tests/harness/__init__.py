"""Harnesses the tests share: the real daemon (``daemon.py``)."""
