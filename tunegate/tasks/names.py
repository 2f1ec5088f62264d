"""Names that say what a Prefect run or artifact gates: `preflight-quickstart-2be54f45`.

Artifact keys are per spec (and per candidate in a sweep), so the Artifacts page keeps one
report per spec instead of only the latest; Prefect keys allow lowercase letters, digits and
dashes only. The spec part is the file's stem plus 6 hex of its resolved path, so two
`quickstart.yaml` in different folders never overwrite each other's report.
"""
from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

_NOT_KEY = re.compile(r"[^a-z0-9]+")
MAX_SLUG = 40  # Prefect shows keys in narrow columns; longer stems are cut


def slug(text: str) -> str:
    return _NOT_KEY.sub("-", text.lower()).strip("-")[:MAX_SLUG].strip("-") or "spec"


def spec_key(spec_path: str | Path) -> str:
    """`quickstart-1a2b3c`: the spec's stem and where it is."""
    where = hashlib.sha256(str(Path(spec_path).resolve()).encode()).hexdigest()[:6]
    return f"{slug(Path(spec_path).stem)}-{where}"


def report_artifact_key(spec_path: str | Path) -> str:
    return f"tunegate-report-{spec_key(spec_path)}"


def sweep_artifact_key(spec_path: str | Path) -> str:
    return f"tunegate-sweep-{spec_key(spec_path)}"


def candidate_artifact_key(spec_path: str | Path, candidate: str) -> str:
    """Per candidate of a sweep; `candidate` is its override key (`tunegate.sweep.candidates.candidate_key`)."""
    return f"tunegate-candidate-{spec_key(spec_path)}-{slug(candidate)[:12]}"


def run_name(kind: str, spec_path: str | None) -> str:
    """`preflight-quickstart-2be54f45`: the flow, the spec, and 8 hex of the spec's bytes."""
    if not spec_path:
        return kind
    try:
        digest = hashlib.sha256(Path(spec_path).read_bytes()).hexdigest()[:8]
    except OSError:  # the parse task reports the missing spec; the name still says what was asked
        return f"{kind}-{slug(Path(spec_path).stem)}"
    return f"{kind}-{slug(Path(spec_path).stem)}-{digest}"


def flow_run_namer(kind: str) -> Callable[[], str]:
    """For `@flow(flow_run_name=...)`: names each run from its own `spec_path` parameter, or from
    the path of its `parsed` spec (a subflow such as sweep-candidates gets the ParsedSpec)."""
    def name() -> str:
        from prefect.runtime import flow_run

        parameters: dict[str, Any] = flow_run.parameters or {}
        parsed = parameters.get("parsed")
        path = parsed.get("path") if isinstance(parsed, dict) else getattr(parsed, "path", None)
        return run_name(kind, parameters.get("spec_path") or (str(path) if path else None))

    return name


def run_tags(spec: Any) -> list[str]:
    """`model:<id>` and `data:<version>` (or `data:unversioned`): what a run trained on, filterable in the UI."""
    version = spec.data.version or "unversioned"
    return [f"model:{spec.model.id}", f"data:{version}"]
