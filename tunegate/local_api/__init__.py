"""Prefect's local API for a tunegate command that runs a flow (sweep, preflight, launch), started
before the command imports Prefect, and dying with it.

    api = start_local_api()     # first: a uvicorn child starts, PREFECT_API_URL names it
    api = adopt_or_stop(api)    # once Prefect is imported: a server configured elsewhere wins
    ...                         # imports, the work that needs no API
    api.wait_ready()            # just before the flow's first call to the API

`child.py`: the uvicorn child and when it is used; `app.py`: what it serves, Prefect's API with a
request SQLite refused for a write conflict run again at once.
"""
from tunegate.local_api.child import LocalApi, adopt_or_stop, serving, start_local_api

__all__ = ["LocalApi", "adopt_or_stop", "serving", "start_local_api"]
