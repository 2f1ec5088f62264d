"""Prefect tasks: each one decorator over one tunegate core call (retries, caching, timeouts, tags)."""
