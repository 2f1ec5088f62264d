"""The gate's stages as Prefect tasks.

The static stages are cached on the content digests of the spec and its data files, so a re-run
on unchanged inputs skips them; the advisor, the only network step, retries and times out.
"""
from __future__ import annotations

import hashlib
from datetime import timedelta
from pathlib import Path
from typing import Any

from prefect import task
from prefect.context import TaskRunContext

from tunegate.gate import check
from tunegate.report import GateReport

STATIC_STAGES = frozenset({"dataset", "overlap", "estimate"})


def content_digest_key(context: TaskRunContext, parameters: dict[str, Any]) -> str:
    """Cache key: where the spec and its data files are and what their bytes are (not their mtimes).

    The place is part of the key because the report names the files it found problems in.
    """
    from tunegate.spec_check import read_spec

    spec_path = Path(parameters["spec_path"])
    digest = hashlib.sha256(b"tunegate-static-v1")
    digest.update(str(spec_path.resolve()).encode() + b"\0" + spec_path.read_bytes())
    _, spec = read_spec(spec_path)
    if spec is not None:
        for path in (spec.data.train, spec.data.validation):
            digest.update(f"{path}\0{_file_digest(path)}".encode())
    return f"static-gate-{digest.hexdigest()}"


def _file_digest(path: Path) -> str:
    h = hashlib.sha256()
    try:
        with open(path, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                h.update(chunk)
    except OSError as exc:  # a missing file is the dataset stage's finding, not a cache crash
        return f"unreadable:{type(exc).__name__}"
    return h.hexdigest()


@task(name="static-gate", cache_key_fn=content_digest_key, cache_expiration=timedelta(days=7),
      persist_result=True, tags=["tunegate"])
def static_gate_task(spec_path: str) -> GateReport:
    """Check the spec, the dataset contract, split overlap and the resource estimate."""
    return check(spec_path, only=STATIC_STAGES)


@task(name="mini-run", tags=["tunegate", "gpu"])
def mini_run_task(spec_path: str, facts: dict[str, Any]) -> GateReport:
    """Run a few real LoRA steps on a sample, with health checks, eval and adapter round trip."""
    return check(spec_path, only={"mini-run"}, facts=facts)


@task(name="advisor", retries=2, retry_delay_seconds=5, timeout_seconds=300, tags=["tunegate", "network"])
def advisor_task(spec_path: str, facts: dict[str, Any]) -> GateReport:
    """Re-estimate with the mini-run's measurements and advise faster settings for the same hardware."""
    return check(spec_path, only={"estimate", "advisor"}, facts=facts)
