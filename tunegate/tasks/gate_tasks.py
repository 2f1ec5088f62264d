"""The gate's stages as Prefect tasks, over a spec parsed once by the first of them.

The static stages are cached on the content digests of the spec and its data files, so a re-run
on unchanged inputs skips them; the advisor, the only network step, retries and times out.
"""
from __future__ import annotations

import hashlib
from datetime import timedelta
from functools import lru_cache
from pathlib import Path
from typing import Any

from prefect import task
from prefect.context import TaskRunContext

from tunegate import stages
from tunegate.facts import GateFacts
from tunegate.gate import check
from tunegate.report import GateReport
from tunegate.spec.check import ParsedSpec, parse_spec

STATIC_STAGES = stages.static()  # what the one cached static-gate task runs after the spec


@task(name="parse-spec")
def parse_spec_task(spec_path: str) -> ParsedSpec:
    """Read and validate the spec once; every later task of the flow takes this parsed value."""
    from tunegate.events.paths import on_this_checkout

    # An event's spec_path is relative to the project root: this checkout's, on a worker.
    on_this_checkout(spec_path, "spec")
    return parse_spec(spec_path)


def content_digest_key(context: TaskRunContext, parameters: dict[str, Any]) -> str:
    """Cache key: where the spec and its data files are, what their bytes are (not their mtimes),
    and which tunegate checked them.

    The place is part of the key because the report names the files it found problems in; the
    checker is, because a result cached by other code (an older release, a changed rule) is that
    code's verdict: reused after an upgrade it was once a report of an older shape, and the flow
    stopped with an internal error instead of checking again.
    """
    parsed: ParsedSpec = parameters["parsed"]
    digest = hashlib.sha256(b"tunegate-static-v2")
    digest.update(f"{code_digest()}\0{Path(parsed.path).resolve()}\0{parsed.digest}".encode())
    if parsed.spec is not None:
        for path in parsed.spec.data.files("train") + parsed.spec.data.files("validation"):
            digest.update(f"{path}\0{_file_digest(path)}".encode())
    return f"static-gate-{digest.hexdigest()}"


@lru_cache(maxsize=1)
def code_digest() -> str:
    """SHA-256 of tunegate's own files (source, data tables, the compiled loops): the checker's
    identity, once per process (~240 files, ~2 MB)."""
    root = Path(__file__).resolve().parents[1]
    h = hashlib.sha256()
    for path in sorted(p for p in root.rglob("*") if p.is_file() and "__pycache__" not in p.parts):
        h.update(f"{path.relative_to(root)}\0{path.stat().st_size}\0".encode())
        h.update(path.read_bytes())
    return h.hexdigest()


def _file_digest(path: Path) -> str:
    from tunegate.errors import UsageError
    from tunegate.pathguard import open_regular

    h = hashlib.sha256()
    try:
        # The shared guard: a folder, FIFO, device or symlink loop is the dataset stage's finding,
        # never a hang here (it opens without blocking and checks what it opened).
        with open_regular(path) as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                h.update(chunk)
    except UsageError:
        return "unreadable"
    except OSError as exc:  # a read error is the dataset stage's finding, not a cache crash
        return f"unreadable:{type(exc).__name__}"
    return h.hexdigest()


@task(name="static-gate", cache_key_fn=content_digest_key, cache_expiration=timedelta(days=7),
      persist_result=True)
def static_gate_task(parsed: ParsedSpec) -> GateReport:
    """Check the spec, the dataset contract, split overlap and the resource estimate."""
    return check(parsed, only=STATIC_STAGES)


@task(name="mini-run", tags=["gpu"])
def mini_run_task(parsed: ParsedSpec, facts: GateFacts) -> GateReport:
    """Run a few real LoRA steps on a sample, with health checks, eval and adapter round trip: in a
    child of this process's fork server when one runs (`tunegate preflight` starts it ahead), else here."""
    from tunegate.sweep.mini_run_apart import forked_mini_run

    forked = forked_mini_run(parsed, facts)
    return forked if forked is not None else check(parsed, only={"mini-run"}, facts=facts)


@task(name="advisor", retries=2, retry_delay_seconds=5, timeout_seconds=300, tags=["network"])
def advisor_task(parsed: ParsedSpec, facts: GateFacts) -> GateReport:
    """Re-estimate with the mini-run's measurements and advise faster settings for the same hardware."""
    return check(parsed, only={"estimate", "advisor"}, facts=facts)
