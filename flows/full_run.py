"""Entrypoint of the `full-run` deployment in prefect.yaml; the flow itself is tunegate.flows.full_run.

    prefect deploy --all      # prefect.yaml names this file: flows/full_run.py:full_run

A thin shim on purpose: the orchestration code is installed inside the tunegate package, never as
top-level `flows`/`tasks` packages that could clash with a user's own modules of those names.
"""
from tunegate.flows.full_run import full_run

__all__ = ["full_run"]
