"""The full run: only from an approval that still matches the files, launched as the cluster would.

    tunegate launch examples/quickstart.yaml
"""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from tunegate.approval import require_approval
from tunegate.report import GateReport
from tunegate.spec_check import load_spec


def approved_report(spec_path: str | Path, report_file: str | Path | None = None) -> GateReport:
    """The approving preflight report of this spec; raises ApprovalError when missing or stale."""
    spec = load_spec(Path(spec_path))
    return require_approval(Path(spec_path), spec.data.train, spec.data.validation,
                            Path(report_file) if report_file else None)


def launch(spec_path: str | Path, log: Callable[[str], None] = print, timeout_s: float | None = None):
    """Run `tunegate.train` through the spec's launcher (accelerate, torchrun or python); return its result."""
    from tunegate.train import launch_command, run_launched

    spec = load_spec(Path(spec_path))
    output = spec.full_run.output_dir
    output.mkdir(parents=True, exist_ok=True)
    result_path = output / "train_result.json"
    cmd = launch_command(spec, Path(spec_path), output, result_path)
    log("launching: " + " ".join(cmd))
    return run_launched(cmd, result_path, timeout_s=timeout_s, log=log)
