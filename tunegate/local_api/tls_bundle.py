"""A CA bundle of one root for the Prefect clients of a command that talks to the local API.

    trust_one_root()      # beside PREFECT_API_URL = the local API (tunegate.local_api.start)
    untrust_one_root()    # where that URL is given up again

Why: Prefect builds a TLS context for every API client it makes, from a CA bundle of 100+ roots
(SSL_CERT_FILE's, else certifi's; ~15 ms of CPU each here), whatever the URL: a
1-candidate sweep made six (the flow's and a task's clients, the log and event workers', the
server version check, the concurrency service's) for an API that is plain http on 127.0.0.1 and
never opens TLS. Given a bundle of one root (`PREFECT_API_SSL_CERT_FILE`, Prefect's setting for its
clients' bundle) a context takes ~0.2 ms: a sweep's contexts 156 -> 42 ms of CPU
(`benchmarks/prefect_tls.py`). The two TLS contexts Prefect's webhook module builds when
it is imported are httpx's and stay.

Only beside the local API's URL, and never where the environment names a bundle already: a
server the user configured is verified as Prefect verifies it. The root is certifi's first, copied
into the user cache; it never verifies anything (nothing here speaks TLS), and a client that did
try TLS with it would fail to verify, not pass. Where the bundle cannot be made (no certifi, a
cache that cannot be written, a copy that does not load) nothing is set: Prefect uses its own.
"""
from __future__ import annotations

import os
import re
from pathlib import Path

from tunegate.user_cache import cache_root

CERT_FILE = "PREFECT_API_SSL_CERT_FILE"
BUNDLE = ("prefect-tls", "one-root.pem")
_CERT = re.compile(rb"-----BEGIN CERTIFICATE-----\r?\n.*?-----END CERTIFICATE-----\r?\n", re.S)
_SET: list[str] = []  # the bundle this process put in the environment


def trust_one_root() -> None:
    """Name the one-root bundle in PREFECT_API_SSL_CERT_FILE, unless the environment names one."""
    if os.environ.get(CERT_FILE):
        return
    bundle = one_root_bundle()
    if bundle is not None:
        os.environ[CERT_FILE] = str(bundle)
        _SET.append(str(bundle))


def untrust_one_root() -> None:
    """Take back what trust_one_root set (a server configured elsewhere is verified with its own)."""
    while _SET:
        if os.environ.get(CERT_FILE) == _SET.pop():
            del os.environ[CERT_FILE]


def one_root_bundle() -> Path | None:
    """The bundle in the user cache, made on first use; None where it cannot be made or does not load."""
    path = cache_root().joinpath(*BUNDLE)
    if _loads(path):
        return path
    root = _first_root()
    if root is None:
        return None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        aside = path.with_name(f".{path.name}.{os.getpid()}")
        aside.write_bytes(root)
        os.replace(aside, path)  # whole or not at all, for a command that reads it meanwhile
    except OSError:
        return None
    return path if _loads(path) else None


def _first_root() -> bytes | None:
    try:
        import certifi

        found = _CERT.search(Path(certifi.where()).read_bytes())
    except (ImportError, OSError):
        return None
    return found.group(0) if found else None


def _loads(path: Path) -> bool:
    """Whether `path` is a bundle an SSL context loads (a damaged copy would fail every Prefect client)."""
    import ssl

    if not path.is_file():
        return False
    try:
        ssl.create_default_context(cafile=str(path))
    except (ssl.SSLError, OSError, ValueError):
        return False
    return True
