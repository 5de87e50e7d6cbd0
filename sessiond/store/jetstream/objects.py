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
from typing import Any, BinaryIO, Final, cast

from nats.js.errors import DigestMismatchError, ObjectNotFoundError

from ...errors import ClusterUnavailableError
from ...filehistory.blobs import HashingWriter
from ...filehistory.errors import BlobCorruptError, BlobMissingError
from .link import Link

DIGEST_PREFIX: Final = "SHA-256="
MIN_RATE: Final = 1 << 20
"""Bytes per second a transfer may not fall below before it is given up (on top of ``ack_wait``)."""


def object_digest(sha: str) -> str:
    """The object store's digest of content whose SHA-256 is ``sha`` (hex)."""
    return DIGEST_PREFIX + base64.urlsafe_b64encode(bytes.fromhex(sha)).decode()


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
