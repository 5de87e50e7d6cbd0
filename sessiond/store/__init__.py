"""The store: session files on disk, their writer, their lazy index, listing.

``Session`` (:mod:`sessiond.store.session`) is the object everything above uses; the
modules below it each do one job: ``layout`` (where files live, path containment),
``ids`` (UUIDv7, short entry ids), ``journal`` (the append-only writer), ``index`` (what is
kept in memory per entry), ``listing`` (session summaries for a cwd or the whole store).
"""
