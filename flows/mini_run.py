"""Entrypoint of the `mini-run` deployment in prefect.yaml; the flow itself is tunegate.flows.mini_run.

    prefect deploy --all      # prefect.yaml names this file: flows/mini_run.py:mini_run

A thin shim on purpose: the orchestration code is installed inside the tunegate package, never as
top-level `flows`/`tasks` packages that could clash with a user's own modules of those names.
"""
from tunegate.flows.mini_run import mini_run

__all__ = ["mini_run"]
