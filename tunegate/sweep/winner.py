"""The sweep's winner as a spec of its own, beside the sweep's spec: what `--launch-best` preflights
and then trains to the end.

    path = write_winner_spec(parsed, summary.best)     # examples/sweep-best.yaml
    tunegate preflight examples/sweep-best.yaml && tunegate launch examples/sweep-best.yaml

The file is the base spec as written with the winner's overrides applied and no `sweep:` section,
in the base spec's folder, so every relative path in it (data, output, a local model) means what it
meant there: a real YAML file to read, commit, preflight and launch. Its approval binds its exact
bytes and data (`tunegate.fullrun.approval`). A file of that name tunegate did not write is never
overwritten.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel

from tunegate.errors import UsageError
from tunegate.spec.check import ParsedSpec
from tunegate.spec.overrides import apply_overrides

HEADER = "# The winner of `tunegate sweep"  # how a file this module wrote begins


class Launch(BaseModel):
    """What `--launch-best` did: the winner's spec, its preflight and its full run."""

    spec_path: str | None = None
    report_file: str | None = None
    preflight: str | None = None  # the preflight flow run's final state: Completed, Failed
    full_run: str | None = None  # the full run's final state, where it ran
    completed: bool = False
    message: str


def winner_path(base_spec: str | Path) -> Path:
    """`<spec folder>/<spec stem>-best.yaml`."""
    path = Path(base_spec).resolve()
    return path.with_name(f"{path.stem}-best.yaml")


def write_winner_spec(base: ParsedSpec, overrides: dict[str, Any], val_loss: float | None = None,
                      run_id: str | None = None) -> Path:
    """Write the winner's spec beside the base spec; return its path.

    Raises:
        UsageError: a file of that name exists that tunegate did not write.
    """
    path = winner_path(base.path)
    if path.is_file() and not path.read_text(encoding="utf-8", errors="replace").startswith(HEADER):
        raise UsageError(f"{path} exists and was not written by tunegate: the sweep's winner is not written over "
                         "it; move it away, or launch the winner from the sweep's table by hand")
    if base.raw is None:
        raise UsageError(f"{base.path} is not a spec mapping")
    data = {k: v for k, v in apply_overrides(base.raw, overrides).items() if k != "sweep"}
    loss = f", validation loss {val_loss:.4f}" if val_loss is not None else ""
    header = (f"{HEADER} {Path(base.path).name} --launch-best`: {json.dumps(overrides)}{loss}"
              + (f", MLflow run {run_id}" if run_id else "") + ".\n"
              f"#   tunegate preflight {path.name} && tunegate launch {path.name}\n")
    tmp = path.with_suffix(".yaml.tmp")
    tmp.write_text(header + yaml.safe_dump(data, sort_keys=False, allow_unicode=True), encoding="utf-8")
    tmp.replace(path)  # a reader (a worker's preflight) never sees half a file
    return path
