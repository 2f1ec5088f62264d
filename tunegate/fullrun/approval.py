"""Approvals: the report that lets a full run start, and the check that it still applies.

A preflight writes its report beside the spec (`.tunegate/reports/<spec>.json`). A full run starts
only from an approving report whose spec and data digests match the files as they are now: an
approval of yesterday's data says nothing about today's.
"""
from __future__ import annotations

from pathlib import Path

from tunegate.errors import ApprovalError
from tunegate.report import REQUIRED_GATES, GateReport
from tunegate.spec.check import ParsedSpec
from tunegate.spec.path_names import split_files

DataFiles = Path | list[Path]  # a split: one file, or several read in order


def report_path(spec_path: Path) -> Path:
    """Where the preflight of `spec_path` keeps its latest report."""
    spec_path = Path(spec_path)
    return spec_path.resolve().parent / ".tunegate" / "reports" / f"{spec_path.stem}.json"


def save_report(report: GateReport, spec_path: Path) -> Path:
    """Write the report aside and rename it into place (a reader never sees half a file; a folder or a
    FIFO in its place is a usage error, tunegate.destination); return its path."""
    from tunegate.destination import write_file

    return write_file(report_path(spec_path), report.model_dump_json(indent=2).encode("utf-8"), [spec_path],
                      force=True, what="the preflight report")


def load_report(path: Path) -> GateReport:
    try:
        return GateReport.model_validate_json(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ApprovalError(f"no preflight report at {path}: run `tunegate preflight` on the spec first") from None
    except ValueError as exc:
        raise ApprovalError(f"{path} is not a tunegate report: {str(exc).splitlines()[0]}") from None


def stale_reasons(report: GateReport, spec_path: Path, train: DataFiles, validation: DataFiles) -> list[str]:
    """Every reason the report does not approve a full run of these exact files (empty: it does); each
    split is a file, or several read in order."""
    from tunegate.dataset.fingerprint import algorithm_of, fingerprint_file
    from tunegate.spec.digest import spec_digest

    reasons = []
    if not report.gates_passed:
        reasons.append("the report rejected this spec; fix its findings and rerun the preflight")
    passed = {s.name for s in report.stages if s.status == "passed"}
    missing = [s for s in REQUIRED_GATES if s not in passed]
    if missing:
        reasons.append(f"the report has no passed {', '.join(missing)} stage; run the full preflight")
    prints = report.fingerprints
    if prints.get("spec", {}).get("digest") != spec_digest(Path(spec_path)):
        reasons.append(f"{Path(spec_path).name} changed since it was approved")
    for role, files in (("train", split_files(train)), ("validation", split_files(validation))):
        approved = prints.get(role, {}).get("digest")  # taken again in its own version: an old approval holds
        if approved is None or fingerprint_file(files, algorithm_of(approved)).digest != approved:
            names = " + ".join(path.name for path in files)
            reasons.append(f"the {role} data ({names}) changed since it was approved")
    return reasons


def require_approval(spec_path: Path, train: DataFiles, validation: DataFiles,
                     report_file: Path | None = None) -> GateReport:
    """Return the approving report for these files, or raise ApprovalError listing every reason."""
    report = load_report(report_file or report_path(spec_path))
    reasons = stale_reasons(report, spec_path, train, validation)
    if reasons:
        raise ApprovalError("the full run is refused:\n  - " + "\n  - ".join(reasons))
    return report


def approved_report(parsed: ParsedSpec, report_file: str | Path | None = None) -> GateReport:
    """The approving preflight report of this spec; raises ApprovalError when missing or stale."""
    spec = parsed.require()
    return require_approval(Path(parsed.path), spec.data.train, spec.data.validation,
                            Path(report_file) if report_file else None)
