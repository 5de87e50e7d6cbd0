"""Full-text search across every session of every root (issue 26).

One job per module: :mod:`.extract` (what of an entry a person searches), :mod:`.query` (the
query language -> FTS5's, and the checks that keep SQLite's errors away from clients),
:mod:`.database` (the SQLite file: schema, version, modes, corruption), :mod:`.index` (writes
and reads of that file, synchronous), :mod:`.engine` (the background writer thread the service
feeds, the first build, its progress), :mod:`.resume` (the command that resumes a hit's session
in its own agent). The service wires the engine to its append and follow events
(``sessiond/service/searching.py``); see docs/search.md.
"""
