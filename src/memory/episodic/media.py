"""Media files of messages, kept in a local directory by content hash (SHA-256).

The file for hash ``h`` lives at ``<media_dir>/<h[:2]>/<h>``; writing the
same bytes twice stores them once. Files are written to a temporary name and
renamed, so a reader never sees a half-written file.
"""

from __future__ import annotations

import hashlib
import mimetypes
import os
import tempfile
from pathlib import Path

from memory.episodic.types import MediaRef
from memory.errors import InvalidInputError, NotFoundError, StorageError

__all__ = ["MediaStore", "MAX_MEDIA_BYTES"]

#: Largest media file accepted (bytes).
MAX_MEDIA_BYTES = 512 * 1024 * 1024


class MediaStore:
    """A content-addressed directory of media files."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        """Use ``root`` (created on first write)."""
        self.root = Path(root).expanduser()

    def path_of(self, sha256: str) -> Path:
        """Where the file with this hash is (or would be) stored."""
        if len(sha256) != 64 or any(c not in "0123456789abcdef" for c in sha256):
            raise InvalidInputError(f"{sha256!r} is not a SHA-256 hex digest")
        return self.root / sha256[:2] / sha256

    def put(
        self, data: bytes | str | os.PathLike[str], *, name: str | None = None, mime: str | None = None
    ) -> MediaRef:
        """Store bytes, or the file at a path; returns its reference. Raises InvalidInputError, StorageError."""
        if isinstance(data, (str, os.PathLike)):
            source = Path(data).expanduser()
            if not source.is_file():
                raise InvalidInputError(f"media file {source} does not exist")
            if source.stat().st_size > MAX_MEDIA_BYTES:
                raise InvalidInputError(f"media file {source} is larger than {MAX_MEDIA_BYTES} bytes")
            payload = source.read_bytes()
            name = name or source.name
        elif isinstance(data, (bytes, bytearray, memoryview)):
            payload = bytes(data)
        else:
            raise InvalidInputError(f"media must be bytes or a file path, got {type(data).__name__}")
        if not payload:
            raise InvalidInputError("media is empty")
        if len(payload) > MAX_MEDIA_BYTES:
            raise InvalidInputError(f"media is larger than {MAX_MEDIA_BYTES} bytes")
        digest = hashlib.sha256(payload).hexdigest()
        target = self.path_of(digest)
        if not target.exists():
            try:
                target.parent.mkdir(parents=True, exist_ok=True)
                fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".incoming-")
                with os.fdopen(fd, "wb") as handle:
                    handle.write(payload)
                os.replace(tmp, target)
            except OSError as exc:
                raise StorageError(f"cannot write media file under {self.root}: {exc}") from exc
        if mime is None and name:
            mime = mimetypes.guess_type(name)[0]
        return MediaRef(sha256=digest, size=len(payload), mime=mime, name=name)

    def read(self, ref: MediaRef) -> bytes:
        """The bytes of a stored media file. Raises NotFoundError."""
        if ref.sha256 is None:
            raise NotFoundError(f"media {ref.uri!r} is an external reference, not a stored file")
        path = self.path_of(ref.sha256)
        try:
            return path.read_bytes()
        except FileNotFoundError:
            raise NotFoundError(f"media file {path} is missing") from None
