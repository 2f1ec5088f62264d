"""Prefect events tunegate emits (a dataset version passed, a preflight approved) and the human review.

`payload` builds the events (no Prefect import: the CLI's static path stays light); `send` posts one
to the Prefect API the environment names; `review` is the full run's pause for a person (imports Prefect).
"""
