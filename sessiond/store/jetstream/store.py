"""The JetStream store backend: sessions whose log is in a NATS JetStream cluster.

Each daemon keeps a replica of every session it opens in its own store directory, at the path
the local store would use (so listing, the viewer and ``sessiond show`` work unchanged). Opening
a session reads its whole log from the stream into the replica (the stream is the truth;
the replica is rewritten atomically); a session only known to another daemon is found through
the metadata bucket. A session file in the store directory that is not in the stream (written
before the store was shared) is served read-only until ``sessiond import`` puts it there.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Any

import orjson
from nats.js.errors import KeyNotFoundError, NotFoundError

from ...errors import ClusterUnavailableError, SessiondError, SessionExistsError
from ...filehistory.blobs import BlobStore
from ...filehistory.shared import SharedBlobs
from ..journal import Durability
from ..layout import encode_cwd, ensure_within, session_file_name
from ..listing import read_header
from ..session import Session
from .link import Link
from .log import JetStreamLog, fetch_all, subject_token
from .objects import ObjectBlobs
from .replica import extend, last_id, mark_path, read_mark, replace, write_mark
from .settings import JetStreamSettings

NOT_SHARED = "it is not in the shared JetStream store (bring it there with `sessiond import`)"


class JetStreamStore:
    name = "jetstream"

    def __init__(self, settings: JetStreamSettings, sessions_dir: Path) -> None:
        self.settings = settings
        self.sessions_dir = sessions_dir
        self.link = Link(settings)
        self.full_reads = 0
        """Sessions opened by reading their whole log (no usable mark), and ..."""
        self.tail_reads = 0
        """... by reading only what followed the replica's mark (diagnostics; tests)."""

    def subject(self, session_id: str) -> str:
        return f"{self.settings.subject_prefix}.{subject_token(session_id)}"

    def _relative(self, path: Path) -> str:
        return os.path.relpath(path, self.sessions_dir)

    # ------------------------------------------------------------------ the backend

    def create(
        self,
        directory: Path,
        cwd: str,
        *,
        session_id: str | None,
        parent_session: str | None,
        durability: Durability,
    ) -> Session:
        self.link.require(session_id or "(new session)")
        session = Session.create(
            directory, cwd, session_id=session_id, parent_session=parent_session, durability=durability
        )
        if session_id is not None and self._exists(session_id):
            raise SessionExistsError(f"{session_id} (in the shared store)")
        session.remote = JetStreamLog(self.link, session.id, 0, self._relative(session.path))
        return session

    def open(self, path: Path, *, durability: Durability) -> Session:
        header = read_header(path)
        session_id = header.get("id") if header is not None else None
        if type(session_id) is not str:
            return Session.open(path, durability=durability)  # not a session: the open says why
        self.link.require(session_id)
        last = self._bring_up_to_date(path, session_id)
        if last == 0:
            return Session.open(path, durability=durability, read_only=NOT_SHARED)
        session = Session.open(path, durability=durability)
        session.remote = JetStreamLog(self.link, session_id, last, self._relative(path), replica=path)
        return session

    def _bring_up_to_date(self, path: Path, session_id: str) -> int:
        """Make the replica the log: only what follows its mark when the log still holds what
        the mark describes (:mod:`.replica`), else the whole log. The log's last sequence (0:
        the session is not in the stream; the file is left alone)."""
        subject = self.subject(session_id)
        held = read_mark(path)
        if held is not None and self._ends_with(session_id, *held):
            batches, last = fetch_all(self.link, subject, after=held[0])
            if batches:
                extend(path, b"".join(batches))
            self.tail_reads += 1
            return last
        batches, last = fetch_all(self.link, subject)
        if last:
            replace(path, b"".join(batches))
            self.full_reads += 1
        return last

    def _ends_with(self, session_id: str, seq: int, entry_id: Any) -> bool:
        """Whether message ``seq`` of the stream is the session's and ends with ``entry_id``."""
        subject = self.subject(session_id)

        async def get() -> Any:
            try:
                return await self.link.js.get_msg(self.settings.stream, seq=seq)
            except NotFoundError:
                return None

        try:
            msg = self.link.call(get(), self.settings.ack_wait)
        except Exception as exc:
            raise ClusterUnavailableError(session_id, f"cannot read the log: {exc}") from exc
        return msg is not None and msg.subject == subject and last_id(msg.data or b"") == entry_id

    def adopt(self, session: Session) -> Session:
        """A fork: its log is created now if its file was written, else with its first flush."""
        log = JetStreamLog(self.link, session.id, 0, self._relative(session.path))
        if session.flushed:
            data = session.path.read_bytes()
            log.commit(data, create=True, leaf=session.leaf_id)
        session.remote = log
        return session

    def locate(self, session_id: str) -> Path | None:
        meta = self._meta(session_id) or self._meta_from_log(session_id)
        if meta is None:
            return None
        return self._materialise(session_id, meta)

    def _meta_from_log(self, session_id: str) -> dict[str, Any] | None:
        """Where the session's replica goes, from its header (the metadata may lag its log)."""

        async def first() -> bytes | None:
            try:
                msg = await self.link.js.get_msg(
                    self.settings.stream, seq=1, subject=self.subject(session_id), next=True
                )
            except NotFoundError:
                return None
            return msg.data

        data = self.link.call(first(), self.settings.ack_wait)
        if not data:
            return None
        try:
            header = orjson.loads(data.split(b"\n", 1)[0])
        except orjson.JSONDecodeError:
            return None
        if type(header) is not dict or type(header.get("timestamp")) is not str:
            return None
        cwd = header.get("cwd") if type(header.get("cwd")) is str else "/"
        name = os.path.join(encode_cwd(cwd or "/"), session_file_name(header["timestamp"], session_id))
        return {"file": name}

    def refresh(self) -> None:
        if not self.link.connected.is_set():
            return  # list what this daemon has; writes will say the cluster is away
        try:
            keys = self.link.call(self.link.kv.keys(), self.settings.ack_wait)
        except Exception:
            return  # an empty bucket raises; an unreachable one leaves the listing local
        for key in keys:
            meta = self._meta(key)
            if meta is not None and not (self.sessions_dir / str(meta.get("file", ""))).exists():
                self._materialise(key, meta)

    def delete(self, session_id: str) -> None:
        """Purge the session's subject and its metadata: no daemon finds it again (this daemon's
        trash keeps the replica)."""
        self.link.require(session_id)
        meta = self._meta(session_id)
        if meta is not None and type(meta.get("file")) is str:
            with contextlib.suppress(OSError, SessiondError):  # the replica's mark goes with it
                mark_path(ensure_within(self.sessions_dir, meta["file"])).unlink()

        async def purge() -> None:
            await self.link.js.purge_stream(self.settings.stream, subject=self.subject(session_id))
            with contextlib.suppress(KeyNotFoundError):
                await self.link.kv.purge(session_id)

        try:
            self.link.call(purge(), self.settings.ack_wait)
        except Exception as exc:
            raise ClusterUnavailableError(session_id, f"cannot delete it from the stream: {exc}") from exc

    def blobs(self, directory: Path) -> SharedBlobs:
        """The object store (one bucket, keyed by hash), this daemon's directory as its cache."""
        return SharedBlobs(BlobStore(directory), ObjectBlobs(self.link, directory.name))

    def close(self) -> None:
        self.link.close()

    # ------------------------------------------------------------------ helpers

    def last_seq(self, session_id: str) -> int:
        """The stream sequence of the session's last message (0: the session is not in the stream)."""
        self.link.require(session_id)

        async def ask() -> int:
            try:
                msg = await self.link.js.get_last_msg(self.settings.stream, self.subject(session_id))
            except NotFoundError:
                return 0
            return msg.seq or 0

        return self.link.call(ask(), self.settings.ack_wait)

    def _exists(self, session_id: str) -> bool:
        return self._meta(session_id) is not None

    def _meta(self, session_id: str) -> dict[str, Any] | None:
        self.link.require(session_id)
        try:
            entry = self.link.call(self.link.kv.get(session_id), self.settings.ack_wait)
        except KeyNotFoundError:
            return None
        except Exception as exc:
            raise ClusterUnavailableError(session_id, f"cannot read the session's metadata: {exc}") from exc
        try:
            value = orjson.loads(entry.value or b"null")
        except orjson.JSONDecodeError:
            return None
        return value if type(value) is dict else None

    def _materialise(self, session_id: str, meta: dict[str, Any]) -> Path | None:
        name = meta.get("file")
        if type(name) is not str:
            return None
        path = ensure_within(self.sessions_dir, name)
        batches, last = fetch_all(self.link, self.subject(session_id))
        if last == 0:
            return None
        replace(path, b"".join(batches))
        self.full_reads += 1
        write_mark(path, last)  # the open that follows reads nothing again
        return path
