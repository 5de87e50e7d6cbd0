"""File-history blobs in JetStream's object store: one object per content hash (docs/scale-out.md).

The bucket (``object_bucket``) is shared by every session and every daemon: an object's name
is the SHA-256 of its content, so the same content backed up twice — by two sessions, on two
daemons — is stored once. The object store records each object's digest; an object counts as
present only when that digest is the name's, so a damaged or foreign object is stored again
rather than trusted. Uploads and downloads stream in the object store's chunks (128 KiB) on
the link's thread, reading and writing the local file in the link loop's executor: a big
file never passes through the daemon's loop, nor is it held in memory.
"""

from __future__ import annotations

import base64
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, BinaryIO, Final, cast

import orjson
from nats.js.errors import APIError, DigestMismatchError, NotFoundError, ObjectNotFoundError

from ...errors import ClusterUnavailableError
from ...filehistory.blobs import HashingWriter
from ...filehistory.errors import BlobCorruptError, BlobMissingError
from .link import Link
from .log import EXPECTED_LAST, WRONG_LAST_SEQUENCE

DIGEST_PREFIX: Final = "SHA-256="
MIN_RATE: Final = 1 << 20
"""Bytes per second a transfer may not fall below before it is given up (on top of ``ack_wait``)."""
RESTAMP_AFTER: Final = 3600.0
"""Seconds after which a backup that finds its content already stored stamps the object again
(its metadata re-published: a new modification time), so that ``sessiond gc`` — which only
deletes objects stamped longer than its grace ago (at least twice this) — cannot delete it
under a snapshot about to name it (docs/scale-out.md, "Collecting blobs")."""
ROLLUP: Final = "Nats-Rollup"
"""The header that makes a message replace every earlier one of its subject (value ``sub``)."""


def object_digest(sha: str) -> str:
    """The object store's digest of content whose SHA-256 is ``sha`` (hex)."""
    return DIGEST_PREFIX + base64.urlsafe_b64encode(bytes.fromhex(sha)).decode()


def object_stream(bucket: str) -> str:
    return f"OBJ_{bucket}"


def meta_subject(bucket: str, name: str) -> str:
    """Where the object store keeps an object's metadata (one message per object, the last wins)."""
    return f"$O.{bucket}.M.{base64.urlsafe_b64encode(name.encode()).decode()}"


def chunk_subject(bucket: str, nuid: str) -> str:
    return f"$O.{bucket}.C.{nuid}"


@dataclass(frozen=True, slots=True)
class StoredObject:
    """An object's metadata as its message holds it: what a collector decides on, and the
    message's sequence, so a delete or a re-stamp only lands if nobody changed it since."""

    name: str
    size: int
    nuid: str
    digest: str
    deleted: bool
    seq: int
    """Stream sequence of the metadata message."""
    stamped: float
    """When the server stored the metadata message (epoch seconds): the object's age."""
    info: dict[str, Any]

    @property
    def whole(self) -> bool:
        """Not deleted, and its recorded digest is its name's (a blob, complete)."""
        return not self.deleted and self.digest == object_digest(self.name)

    @classmethod
    def parse(cls, data: bytes | None, seq: int, stamped: datetime | None) -> StoredObject | None:
        """None for metadata that is not an object's (not JSON, no name or nuid)."""
        try:
            info = orjson.loads(data or b"")
        except orjson.JSONDecodeError:
            return None
        if type(info) is not dict or type(info.get("name")) is not str or type(info.get("nuid")) is not str:
            return None
        size, digest = info.get("size"), info.get("digest")
        return cls(
            name=info["name"],
            size=size if type(size) is int else 0,
            nuid=info["nuid"],
            digest=digest if type(digest) is str else "",
            deleted=info.get("deleted") is True,
            seq=seq,
            stamped=stamped.timestamp() if stamped is not None else 0.0,
            info=info,
        )


async def read_object(link: Link, name: str) -> StoredObject | None:
    """An object's current metadata (None: never stored)."""
    bucket = link.settings.object_bucket
    try:
        msg = await link.js.get_last_msg(object_stream(bucket), meta_subject(bucket, name))
    except NotFoundError:
        return None
    return StoredObject.parse(msg.data, msg.seq or 0, msg.time)


async def replace_meta(link: Link, stored: StoredObject, info: dict[str, Any]) -> bool:
    """Publish ``info`` as the object's metadata if its last message is still ``stored``'s
    (compare-and-set on the subject's sequence); False when someone changed it meanwhile."""
    bucket = link.settings.object_bucket
    headers = {ROLLUP: "sub", EXPECTED_LAST: str(stored.seq)}
    try:
        await link.js.publish(meta_subject(bucket, stored.name), orjson.dumps(info), headers=headers)
    except APIError as exc:
        if exc.err_code == WRONG_LAST_SEQUENCE or "wrong last sequence" in str(exc.description):
            return False
        raise
    return True


async def remove_object(link: Link, stored: StoredObject) -> bool:
    """Delete an object if it is still exactly ``stored`` (not re-uploaded, not re-stamped since):
    its metadata becomes a deletion marker, then its chunks are purged. False: it changed."""
    marker = {**stored.info, "deleted": True, "size": 0, "chunks": 0, "digest": "", "mtime": ""}
    if not await replace_meta(link, stored, marker):
        return False
    bucket = link.settings.object_bucket
    await link.js.purge_stream(object_stream(bucket), subject=chunk_subject(bucket, stored.nuid))
    return True


class ObjectBlobs:
    """The :class:`~sessiond.filehistory.shared.RemoteBlobs` of one session (the bucket is shared;
    the session only names the errors)."""

    def __init__(self, link: Link, session_id: str) -> None:
        self.link = link
        self.session_id = session_id

    def __repr__(self) -> str:
        return f"ObjectBlobs({self.link.settings.object_bucket!r})"

    def _deadline(self, size: int) -> float:
        return self.link.settings.ack_wait + size / MIN_RATE

    def _unavailable(self, doing: str, exc: BaseException) -> ClusterUnavailableError:
        reason = str(exc) or type(exc).__name__
        return ClusterUnavailableError(
            self.session_id, f"cannot {doing} the file-history blob store: {reason}"
        )

    def size(self, sha: str) -> int | None:
        self.link.require(self.session_id)

        async def info() -> Any:
            try:
                return await self.link.objects.get_info(sha)
            except ObjectNotFoundError:
                return None

        try:
            found = self.link.call(info(), self.link.settings.ack_wait)
        except Exception as exc:
            raise self._unavailable("read", exc) from exc
        if found is None or found.deleted or found.digest != object_digest(sha):
            return None
        return int(found.size or 0)

    def keep(self, sha: str, size: int) -> bool:
        """Whether the store holds blob ``sha`` whole, stamped recently enough that a collector
        leaves it alone until the snapshot naming it is committed (re-stamped when older than
        :data:`RESTAMP_AFTER`). False: it must be uploaded."""
        self.link.require(self.session_id)

        async def check() -> bool:
            stored = await read_object(self.link, sha)
            if stored is None or not stored.whole or stored.size != size:
                return False
            if time.time() - stored.stamped < RESTAMP_AFTER:
                return True
            info = {**stored.info, "mtime": datetime.now(UTC).isoformat()}
            return await replace_meta(self.link, stored, info)  # changed meanwhile: upload again

        try:
            return self.link.call(check(), self.link.settings.ack_wait)
        except Exception as exc:
            raise self._unavailable("read", exc) from exc

    def upload(self, sha: str, size: int, source: BinaryIO) -> None:
        self.link.require(self.session_id)
        try:
            stored = self.link.call(self.link.objects.put(sha, cast(Any, source)), self._deadline(size))
        except Exception as exc:
            raise self._unavailable("write to", exc) from exc
        if stored.digest != object_digest(sha) or stored.size != size:
            # The local copy changed under us (it is read-only and named by its hash: damage).
            raise BlobCorruptError(sha, f"{stored.size} bytes were uploaded with digest {stored.digest}")

    def download(self, sha: str, size: int, into: HashingWriter) -> None:
        self.link.require(self.session_id)
        try:
            self.link.call(self.link.objects.get(sha, writeinto=cast(Any, into)), self._deadline(size))
        except ObjectNotFoundError:
            raise BlobMissingError(sha) from None  # deleted since its size was read
        except DigestMismatchError:
            raise BlobCorruptError(
                sha, "the object store's copy does not match its recorded digest"
            ) from None
        except Exception as exc:
            raise self._unavailable("read", exc) from exc
