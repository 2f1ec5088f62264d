"""Prefect's local API for a tunegate command that runs a flow (sweep, preflight, launch): the
user's shared one, found or started before the command imports Prefect, unless a server is
configured.

    api = start_local_api()     # first: PREFECT_API_URL names the local API
    api = adopt_or_stop(api)    # once Prefect is imported: a server configured elsewhere wins
    ...                         # imports, the work that needs no API
    api.wait_ready()            # just before the flow's first call to the API

`start.py`: which API a command uses; `shared.py`: the one per Prefect home that commands share,
kept up `TUNEGATE_LOCAL_API_IDLE_S` (600) s after the last, its files and locks in `state.py`,
its own end in `idle.py`; `child.py`: the uvicorn child, and a command's own API when the idle
time is 0; `app.py`: what it serves, Prefect's API with a request SQLite refused for a write
conflict run again at once.
"""
from __future__ import annotations

from tunegate.front_door import front_door

# Each name's module, imported on first use (tunegate.front_door).
_HOME = dict.fromkeys(["adopt_or_stop", "serving", "start_local_api"], "tunegate.local_api.start")

__all__ = ["adopt_or_stop", "serving", "start_local_api"]
__getattr__ = front_door(__name__, _HOME)
