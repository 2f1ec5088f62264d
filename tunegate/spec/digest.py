"""The spec's digest: SHA-256 of its bytes. An approval is valid only for these exact bytes."""
from __future__ import annotations

import hashlib
from pathlib import Path


def digest_bytes(raw: bytes) -> str:
    return hashlib.sha256(raw).hexdigest()


def spec_digest(path: str | Path) -> str:
    """The digest of the spec file as it is now (the approval check compares it with the approved one)."""
    return digest_bytes(Path(path).read_bytes())
