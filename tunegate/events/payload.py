"""The events tunegate emits, built from digests we computed: never dataset content, never a secret.

    tunegate check SPEC --emit-event      -> tunegate.dataset.version   (starts the `preflight` deployment)
    an approved preflight flow run        -> tunegate.preflight.approved (starts the `full-run` deployment)
    a rejected one                        -> tunegate.preflight.rejected (starts nothing)

prefect.yaml's `triggers:` match these names and read `spec_path` (and `report_file`) from the payload.
Every path is relative to the sender's project root (`tunegate.events.paths`), with that root's
digest: the worker resolves it in its own checkout.
"""
from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from tunegate.events.paths import portable, project_root, root_digest
from tunegate.report import GateReport

DATASET_EVENT = "tunegate.dataset.version"
APPROVED_EVENT = "tunegate.preflight.approved"
REJECTED_EVENT = "tunegate.preflight.rejected"
# Only these keys of a fingerprint travel: the digest, how many records, which file, how it was hashed.
FINGERPRINT_KEYS = ("digest", "records", "file", "algorithm")


class EventMessage(BaseModel):
    """One Prefect event as tunegate sends it: the name, the resource it is about, and the payload."""

    model_config = ConfigDict(extra="forbid")

    event: str = Field(description="the event name prefect.yaml's triggers `expect`")
    resource: dict[str, str] = Field(description="`prefect.resource.id` and labels a trigger can `match`")
    payload: dict[str, Any] = Field(description="what the triggered flow run is parameterised from")


def data_resource_id(fingerprints: dict[str, dict[str, Any]]) -> str:
    """`tunegate.dataset.<sha256>` over each role's digest: one id per exact version of the data."""
    joined = "\n".join(f"{role}={fingerprints[role]['digest']}" for role in sorted(fingerprints))
    return "tunegate.dataset." + hashlib.sha256(joined.encode()).hexdigest()


def dataset_event(spec_path: str | Path, fingerprints: dict[str, dict[str, Any]],
                  spec_digest: str | None = None) -> EventMessage:
    """The dataset-version event of data that passed: the spec to gate and each file's digest.

    Args:
        spec_path: the spec the triggered preflight gates (sent relative to its project root: the
            worker resolves it in its own checkout).
        fingerprints: role -> our fingerprint of that file (`train`, `validation`, or lint's file names).
        spec_digest: the spec's digest when the gate computed it.
    """
    root = project_root(spec_path)
    data = {role: _kept(fp, root) for role, fp in fingerprints.items() if fp.get("digest")}
    if not data:
        raise ValueError("a dataset event needs at least one fingerprinted file")
    resource = {"prefect.resource.id": data_resource_id(data), "prefect.resource.name": Path(spec_path).name}
    resource.update({f"tunegate.{role}.digest": fp["digest"] for role, fp in data.items() if "." not in role})
    payload: dict[str, Any] = {"spec_path": portable(spec_path, root), **_root(root), "data": data}
    if spec_digest:
        payload["spec_digest"] = spec_digest
    return EventMessage(event=DATASET_EVENT, resource=resource, payload=payload)


def preflight_event(report: GateReport, spec_path: str | Path, report_file: str | Path) -> EventMessage:
    """`tunegate.preflight.approved` (or `.rejected`) with the spec, the report and the approval's digests."""
    prints = report.fingerprints
    root = project_root(spec_path)
    data = {role: _kept(prints[role], root) for role in ("train", "validation")
            if (prints.get(role) or {}).get("digest")}
    spec_digest = (prints.get("spec") or {}).get("digest")
    approved = report.approved_for_full_run
    resource = {"prefect.resource.id": f"tunegate.spec.{spec_digest or 'unparsed'}",
                "prefect.resource.name": Path(spec_path).name}
    payload = {"spec_path": portable(spec_path, root), "report_file": portable(report_file, root),
               **_root(root), "approved_for_full_run": approved,
               "spec_digest": spec_digest, "data": data, "counts": dict(report.counts)}
    return EventMessage(event=APPROVED_EVENT if approved else REJECTED_EVENT, resource=resource, payload=payload)


def _root(root: Path | None) -> dict[str, str]:
    """The sender's project root, as its digest (paths are relative to it); nothing outside a project."""
    return {"project_root_digest": root_digest(root)} if root is not None else {}


def _kept(fingerprint: dict[str, Any], root: Path | None) -> dict[str, Any]:
    kept = {k: fingerprint[k] for k in FINGERPRINT_KEYS if k in fingerprint}
    if kept.get("file"):
        kept["file"] = portable(kept["file"], root)
    return kept
