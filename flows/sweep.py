"""Entrypoint of the `sweep` deployment in prefect.yaml; the flow itself is tunegate.flows.sweep.

    prefect deploy --all      # prefect.yaml names this file: flows/sweep.py:sweep

A thin shim on purpose: the orchestration code is installed inside the tunegate package, never as
top-level `flows`/`tasks` packages that could clash with a user's own modules of those names.
"""
from tunegate.flows.sweep import sweep

__all__ = ["sweep"]
