"""The spec's digest: SHA-256 of its bytes. An approval is valid only for these exact bytes."""
from __future__ import annotations

import hashlib
from pathlib import Path

from tunegate.pathguard import open_regular


def digest_bytes(raw: bytes) -> str:
    return hashlib.sha256(raw).hexdigest()


def spec_digest(path: str | Path) -> str:
    """The digest of the spec file as it is now (the approval check compares it with the approved one).

    Raises UsageError when the path is no longer a regular file (a FIFO would block the read).
    """
    h = hashlib.sha256()
    with open_regular(Path(path)) as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()
