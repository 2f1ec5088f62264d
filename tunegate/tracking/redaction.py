"""Scrub secret values from text before it is written anywhere (MLflow params, tags, artifacts).

The allowlist in `tunegate.tracking.record` keeps keys out of params in the first place; this is
the second line: if a key leaked into a report, an advice object or an exception message upstream,
it still never reaches the tracking store.
"""
from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any
from urllib.parse import urlsplit, urlunsplit

MASK = "[REDACTED]"
# Shorter values are not credentials, and masking them would mangle ordinary words.
MIN_SECRET_LEN = 8


class Redactor:
    """Replaces every known secret value with `MASK`."""

    def __init__(self, secrets: Iterable[str]):
        # Longest first, so a secret that contains another is masked whole.
        self.secrets = sorted({s for s in secrets if s and len(s) >= MIN_SECRET_LEN}, key=len, reverse=True)

    @classmethod
    def from_env(cls, names: Iterable[str], also: Iterable[str] = ()) -> Redactor:
        """Mask the current values of the environment variables `names` (unset ones are skipped),
        and the values `also` (e.g. the password of the tracking URI)."""
        return cls([*(os.environ.get(n, "") for n in names), *also])

    def text(self, value: str) -> str:
        for secret in self.secrets:
            value = value.replace(secret, MASK)
        return value

    def data(self, value: Any) -> Any:
        """Recursively scrub strings (and dict keys) in JSON-like data."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {self.data(k): self.data(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [self.data(v) for v in value]
        return value


def uri_password(uri: str) -> str | None:
    """The password in a URI's user info (`postgresql://user:PASSWORD@host/db`), if any."""
    try:
        return urlsplit(uri).password or None
    except ValueError:
        return None


def uri_without_password(uri: str) -> str:
    """`uri` with the password of its user info replaced by MASK, fit for a message or a log."""
    if not uri_password(uri):
        return uri
    parts = urlsplit(uri)
    user, _, host = parts.netloc.rpartition("@")
    name = user.split(":", 1)[0]
    return urlunsplit(parts._replace(netloc=f"{name}:{MASK}@{host}"))
