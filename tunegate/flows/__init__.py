"""Prefect flows: the order of the steps, no logic (that lives in tunegate/)."""
