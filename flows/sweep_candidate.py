"""Entrypoint of the `sweep-candidate` deployment in prefect.yaml; the flow itself is tunegate.flows.sweep_candidate.

    prefect deploy --all      # prefect.yaml names this file: flows/sweep_candidate.py:sweep_candidate

A thin shim on purpose: the orchestration code is installed inside the tunegate package, never as
top-level `flows`/`tasks` packages that could clash with a user's own modules of those names.
"""
from tunegate.flows.sweep_candidate import sweep_candidate

__all__ = ["sweep_candidate"]
