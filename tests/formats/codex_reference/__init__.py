"""The Codex rollout reader as it was before it was made fast (main at 421467a): the oracle of
``tests/formats/test_codex_fast.py``, which asserts the fast reader in ``sessiond/formats/codex``
gives the same records, entries, context and diagnostics. Frozen: never edit these files to
make a test pass; a deliberate change of the reader's output changes both, with its reason."""
