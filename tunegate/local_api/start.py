"""Which Prefect API a flow command uses, decided before it imports Prefect: a server the user
configured; else the user's shared local API (tunegate.local_api.shared), found or started; else,
with `TUNEGATE_LOCAL_API_IDLE_S=0`, an API of the command's own (tunegate.local_api.child).

    api = start_local_api()     # first: PREFECT_API_URL names the local API (starting, or up)
    api = adopt_or_stop(api)    # once Prefect is imported: a server configured elsewhere wins
    api.wait_ready()            # just before the flow's first call to the API

Without a configured server Prefect starts an ephemeral API itself, only once the flow needs it
and only after this process has imported Prefect's server module (4.4 CPU s on the 2-core
machine, for nothing but the class that starts the child; issue 15), and stops it with the
command: every command paid its start-up (~4 s wall, ~5 CPU s; issue 33). Here
`PREFECT_API_URL` is set before Prefect is imported, so Prefect uses the local API as any
configured server and never imports its server module in the command.

Only when Prefect would start an ephemeral API itself: no `PREFECT_API_URL` in the environment
and ephemeral mode not switched off there. A URL (or ephemeral mode off) set in a Prefect profile
or `prefect.toml` is only known once Prefect's settings are read; `adopt_or_stop` checks that,
and there a configured server wins: the local API is given up and Prefect's settings are read
again without it.
"""
from __future__ import annotations

import importlib.util
import logging
import os
import sys

from tunegate.local_api.child import API_URL, LocalApi
from tunegate.local_api.shared import SharedApi, attach, idle_seconds
from tunegate.local_api.tls_bundle import trust_one_root, untrust_one_root

EPHEMERAL = "PREFECT_SERVER_ALLOW_EPHEMERAL_MODE"
_FALSE = {"0", "false", "no", "off"}
_STARTED: list[LocalApi | SharedApi] = []  # the local APIs this process started or attached to
logger = logging.getLogger(__name__)


def serving() -> bool:
    """Whether the API this process talks to (PREFECT_API_URL) is a local API it started or shares
    and still uses."""
    return any(api.running and os.environ.get(API_URL) == api.url for api in _STARTED)


def start_local_api() -> LocalApi | SharedApi | None:
    """Point PREFECT_API_URL at the shared local API (or, with TUNEGATE_LOCAL_API_IDLE_S=0, at one
    started for this command) when Prefect would start an ephemeral one itself; None when the
    environment names a server, ephemeral mode is off there, Prefect is not installed, or Prefect
    is already imported (its settings are read)."""
    if os.environ.get(API_URL) or os.environ.get(EPHEMERAL, "true").strip().lower() in _FALSE:
        return None
    if "prefect" in sys.modules:
        return None
    if importlib.util.find_spec("prefect") is None:
        return None
    api = _shared_or_own(idle_seconds())
    os.environ[API_URL] = api.url
    trust_one_root()  # plain http on this machine: Prefect's clients need no CA bundle of 100+ roots
    _STARTED.append(api)
    return api


def _shared_or_own(idle_s: float) -> LocalApi | SharedApi:
    """The shared API; the command's own when the idle time is 0 or the Prefect home cannot hold
    the shared one's record and locks (read-only, not a folder): Prefect then says what it says."""
    if idle_s > 0:
        try:
            return attach(idle_s)
        except OSError as exc:
            logger.warning(f"no shared local API ({type(exc).__name__}: {exc}); this command starts its own")
    return LocalApi()


def adopt_or_stop(api: LocalApi | SharedApi | None) -> LocalApi | SharedApi | None:
    """After Prefect is imported: keep the local API unless Prefect's other settings sources (a
    profile, prefect.toml, .env) name a server or switch ephemeral mode off; then give it up and
    rebuild Prefect's root settings without it. Returns the API kept, or None."""
    if api is None:
        return None
    from prefect.settings import Settings

    ours = os.environ.pop(API_URL)
    try:
        elsewhere = Settings()
    finally:
        os.environ[API_URL] = ours
    if not elsewhere.api.url and elsewhere.server.ephemeral.enabled:
        return api
    os.environ.pop(API_URL)
    untrust_one_root()  # the configured server is verified as Prefect verifies it
    api.stop()
    import prefect.context

    prefect.context.GLOBAL_SETTINGS_CONTEXT = prefect.context.root_settings_context()
    return None
