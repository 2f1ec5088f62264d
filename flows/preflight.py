"""Entrypoint of the `preflight` deployment in prefect.yaml; the flow itself is tunegate.flows.preflight.

    prefect deploy --all      # prefect.yaml names this file: flows/preflight.py:preflight

A thin shim on purpose: the orchestration code is installed inside the tunegate package, never as
top-level `flows`/`tasks` packages that could clash with a user's own modules of those names.
"""
from tunegate.flows.preflight import preflight

__all__ = ["preflight"]
