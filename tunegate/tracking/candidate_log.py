"""Log one candidate into its child run: params, metrics per step, datasets, tags, artifacts.

    result = log_candidate(client, parent_run_id, record)
    result.status   # "FINISHED" (approved) or "FAILED" (rejected, errored, or logging broke)

A failing candidate ends FAILED with its reason, never FINISHED, and an exception while logging
marks the run FAILED and is returned, not raised: one broken candidate never aborts a sweep.
Logging is idempotent: a rerun of the same record adds no run, no param and no metric point.
"""
from __future__ import annotations

import json
import logging
import tempfile
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import BaseModel

from tunegate.tracking.record import CandidateRecord
from tunegate.tracking.redaction import Redactor, uri_password
from tunegate.tracking.warning_tags import WARNINGS, warnings_tag
from tunegate.tracking.runs import (
    APPROVED,
    CANDIDATE_ID,
    CAVEATS,
    COMPLETE,
    FAILING_CODES,
    LINEAGE,
    NOT_RUN,
    PRUNED_AT,
    STEPS_SAVED,
    TRAIN_DIGEST,
    VAL_SCOPE,
    VALIDATION_DIGEST,
    VERDICT,
    end_run,
    open_candidate_run,
    supersede,
)

if TYPE_CHECKING:
    from mlflow import MlflowClient

log = logging.getLogger(__name__)
# MLflow's log_batch limits per request (mlflow/utils/validation.py).
MAX_METRICS, MAX_PARAMS, MAX_TAGS, MAX_ENTITIES = 1000, 100, 100, 1000
INPUT_ATTEMPTS = 3
# One lock per candidate and store in this process: two threads logging the same candidate would
# otherwise both find the run incomplete (the first is still logging) and log every point twice.
_CANDIDATE_LOCKS: dict[tuple[str, str], threading.Lock] = {}
_LOCKS_GUARD = threading.Lock()


class CandidateLogResult(BaseModel):
    """What happened to one candidate's run."""

    run_id: str | None
    candidate_id: str
    status: str
    reused: bool = False
    error: str | None = None


def log_candidate(client: MlflowClient, parent_run_id: str, record: CandidateRecord) -> CandidateLogResult:
    """Log `record` into its candidate run under `parent_run_id` and end the run.

    Returns the run's final status; never raises for a problem inside the candidate or its logging.
    """
    with _candidate_lock(client.tracking_uri, record.candidate_id):
        return _log_candidate(client, parent_run_id, record)


def _candidate_lock(store: str, cid: str) -> threading.Lock:
    with _LOCKS_GUARD:
        return _CANDIDATE_LOCKS.setdefault((store, cid), threading.Lock())


def _log_candidate(client: MlflowClient, parent_run_id: str, record: CandidateRecord) -> CandidateLogResult:
    redact = Redactor.from_env(record.secret_env_names, also=[uri_password(client.tracking_uri) or ""])
    run_id = None
    start_ms, end_ms = run_window(record)
    try:
        run = open_candidate_run(client, parent_run_id, record.candidate_id, record.name, start_ms)
        run_id = run.run_id
        if run.complete:
            # Logged completely before (an at-least-once rerun): nothing to add.
            return CandidateLogResult(run_id=run_id, candidate_id=record.candidate_id,
                                      status=run.previous_status, reused=True)
        status, reason = _verdict_status(client, parent_run_id, record)
        _log_everything(client, run_id, record, redact, reused=run.reused)
        end_run(client, run_id, status, redact.text(reason), end_ms)
        # Last, so a crash before this line leaves the run incomplete and a rerun finishes it.
        client.set_tag(run_id, COMPLETE, "true")
        if record.lineage:  # a newer preflight or full run of the same spec and data: the latest record
            supersede(client, run_id, record.lineage)
        return CandidateLogResult(run_id=run_id, candidate_id=record.candidate_id, status=status,
                                  reused=run.reused)
    except Exception as exc:  # the sweep must go on; the run says why it failed
        error = redact.text(f"logging the candidate failed: {type(exc).__name__}: {exc}")
        log.warning("candidate %s: %s", record.candidate_id[:12], error)
        if run_id is not None:
            _try_fail(client, run_id, error)
        return CandidateLogResult(run_id=run_id, candidate_id=record.candidate_id, status="FAILED",
                                  error=error)


def run_window(record: CandidateRecord) -> tuple[int | None, int | None]:
    """(start, end) in epoch ms of what the run trained, so MLflow's Duration column is its training
    time; (None, None), MLflow's own times, for a run that trained nothing."""
    if record.train_seconds is None:
        return None, None
    end = record.trained_until if record.trained_until is not None else time.time()
    return int((end - record.train_seconds) * 1000), int(end * 1000)


def _try_fail(client: MlflowClient, run_id: str, error: str) -> None:
    try:
        end_run(client, run_id, "FAILED", error)
    except Exception as exc:  # the store itself is gone; the reconciler will end the run later
        log.warning("could not mark run %s FAILED: %s", run_id, exc)


def _verdict_status(client: MlflowClient, parent_run_id: str, record: CandidateRecord) -> tuple[str, str]:
    """FINISHED only for an approved candidate whose validation set is the sweep's frozen one."""
    frozen = client.get_run(parent_run_id).data.tags.get(VALIDATION_DIGEST)
    mine = record.validation_digest
    if frozen and mine and frozen != mine:
        return "FAILED", (f"validation digest {mine} differs from this flow run's frozen validation "
                          f"set {frozen}: its scores would not be comparable")
    if record.verdict == "pruned":  # stopped early by the sweep's rule: neither a success nor a failure
        return "KILLED", record.reason or f"pruned at step {record.pruned_at_step}"
    if record.verdict in ("approved", "passed"):
        return "FINISHED", ""
    return "FAILED", record.reason or f"{record.verdict}: {', '.join(record.failing_codes) or 'no code'}"


def _log_everything(client: MlflowClient, run_id: str, record: CandidateRecord, redact: Redactor,
                    reused: bool) -> None:
    """Params, metrics and tags in one `log_batch` (more only past MLflow's limits), the datasets,
    then the artifacts: one request to the store where three were, the same contents."""
    from mlflow.entities import Metric, Param, RunTag

    params = [Param(k, redact.text(str(v))) for k, v in sorted(record.params.items())]
    now = int(time.time() * 1000)
    metrics = [Metric(k, float(v), now, step) for k, v, step in _new_points(client, run_id, record, reused)]
    tags = [RunTag(k, redact.text(v)) for k, v in run_tags(record).items()]
    for chunk in batches(params, metrics, tags):
        client.log_batch(run_id, **chunk)
    _log_datasets(client, run_id, record)
    _log_artifacts(client, run_id, record, redact)


def run_charts(record: CandidateRecord) -> dict[str, bytes]:
    """The charts of a run that stands alone (a preflight, a full run): its loss curve, and the charts
    of its report (memory per GPU, token lengths, mini-run loss).

    A sweep candidate gets none: the sweep charts its candidates once, on its parent run
    (`tunegate.tracking.parent_charts`), and each candidate's losses and gradient norms per step
    are metrics MLflow's own run page charts. Drawing and logging them cost ~0.4 s of a
    candidate's ~2.2 (issue 33 item 4).
    """
    from tunegate.tracking.loss_plot import loss_curve_svg

    files: dict[str, bytes] = {}
    chart = loss_curve_svg({"mini-run": record.mini_run_steps, "training": record.train_steps},
                           record.name or f"candidate {record.candidate_id[:12]}")
    if chart is not None:
        files["loss_curve.svg"] = chart
    if record.report is not None:
        from tunegate.charts import report_charts

        files.update(report_charts(record.report))
    return files


def batches(params: list, metrics: list, tags: list) -> list[dict[str, list]]:
    """The fewest `log_batch` requests holding every param, metric and tag, each within MLflow's
    limits (100 params, 1000 metrics, 100 tags, 1000 in all per request), in that order."""
    chunks, rest = [], {"params": list(params), "metrics": list(metrics), "tags": list(tags)}
    while any(rest.values()):
        room, chunk = MAX_ENTITIES, {}
        for kind, cap in (("params", MAX_PARAMS), ("tags", MAX_TAGS), ("metrics", MAX_METRICS)):
            take = min(cap, room)
            chunk[kind], rest[kind] = rest[kind][:take], rest[kind][take:]
            room -= len(chunk[kind])
        chunks.append(chunk)
    return chunks


def run_tags(record: CandidateRecord) -> dict[str, str]:
    """The candidate run's tags: its id, verdict, digests, what the verdict covers, its pruning."""
    tags = {CANDIDATE_ID: record.candidate_id, VERDICT: record.verdict,
            FAILING_CODES: ",".join(record.failing_codes)}
    if record.lineage:
        tags[LINEAGE] = record.lineage
    if record.validation_digest:
        tags[VALIDATION_DIGEST] = record.validation_digest
    if record.dataset("train") is not None:
        tags[TRAIN_DIGEST] = record.dataset("train").digest
    tags.update(verdict_tags(record))
    if record.pruned_at_step is not None:
        tags.update({PRUNED_AT: str(record.pruned_at_step), STEPS_SAVED: str(record.steps_saved or 0)})
    if record.val_loss is not None:
        tags[VAL_SCOPE] = record.val_scope
    return tags


def verdict_tags(record: CandidateRecord) -> dict[str, str]:
    """What the verdict covers: approved for a full run or not, the gates that did not run, the caveats."""
    report = record.report
    if report is None:
        return {}
    return {APPROVED: str(report.approved_for_full_run).lower(),
            NOT_RUN: "; ".join(f"{g} {why}" for g, why in report.not_run.items()) or "none",
            CAVEATS: "; ".join(report.caveats)[:5000],
            **({WARNINGS: warnings_tag(record.warnings)[:5000]} if record.warnings is not None else {})}


def metric_points(record: CandidateRecord) -> list[tuple[str, float, int]]:
    """(key, value, step) for every number in the record; scalars sit at step 0."""
    points = []
    curves = (("mini_run", record.mini_run_steps), ("train", record.train_steps), ("eval", record.val_steps))
    for prefix, steps in curves:
        for s in steps:
            points += [(f"{prefix}/{attr}", v, s.step) for attr in ("loss", "grad_norm")
                       if (v := getattr(s, attr)) is not None]
    # gate/approved_for_full_run: the verdict as a number, a column the MLflow UI sorts like a loss.
    scalars = {"mini_run/tokens_per_s": record.tokens_per_s, "mini_run/peak_memory_gib": record.peak_memory_gib,
               "estimate/hours": record.predicted_hours, "train/final_loss": record.final_train_loss,
               "val/loss": record.val_loss, "mini_run/eval_loss": record.mini_run_eval_loss,
               "gate/approved_for_full_run": float(record.verdict in ("approved", "pruned")),
               "gate/warnings": float(sum(record.warnings.values())) if record.warnings is not None else None,
               # What the run trained, in seconds: its duration, also where MLflow's times cannot say it
               # (a run reopened after a crash keeps its first start time).
               "train/duration_s": record.train_seconds}
    points += [(k, v, 0) for k, v in scalars.items() if v is not None]
    return points


def _new_points(client: MlflowClient, run_id: str, record: CandidateRecord,
                reused: bool) -> list[tuple[str, float, int]]:
    """The record's metric points; on a rerun, only those an earlier attempt did not store."""
    points = metric_points(record)
    if reused:
        done = {(m.key, m.step) for key in {k for k, _, _ in points}
                for m in client.get_metric_history(run_id, key)}
        points = [p for p in points if (p[0], p[2]) not in done]
    return points


def _log_datasets(client: MlflowClient, run_id: str, record: CandidateRecord) -> None:
    """Datasets as MLflow inputs, carrying our content digest; MLflow's own hashes only the first
    10,000 rows of string/number columns into 8 hex characters and collides on chat data."""
    if not record.datasets:
        return
    from mlflow.data.dataset_source_registry import get_dataset_source_from_json
    from mlflow.data.meta_dataset import MetaDataset
    from mlflow.entities import DatasetInput, InputTag

    inputs = []
    for ref in record.datasets:
        source = get_dataset_source_from_json(json.dumps({"uri": ref.path}), "local")
        # MLflow's digest column holds 36 characters: keep 32 hex (128 bits) there, the full one in a tag.
        short = ref.digest.split(":", 1)[-1][:32]
        entity = MetaDataset(source, name=Path(ref.path).name, digest=short)._to_mlflow_entity()
        tags = [InputTag("mlflow.data.context", "training" if ref.role == "train" else "validation"),
                InputTag("tunegate.digest", ref.digest)]
        if ref.records is not None:
            tags.append(InputTag("tunegate.records", str(ref.records)))
        if ref.version:
            tags.append(InputTag("tunegate.version", ref.version))
        inputs.append(DatasetInput(entity, tags))
    # MLflow checks for the dataset row, then inserts it: two candidates logging the same dataset
    # at once can both insert, and the loser gets a UNIQUE-constraint error. A second attempt finds
    # the row the winner wrote (seen in the 4-thread test).
    for attempt in range(INPUT_ATTEMPTS):
        try:
            client.log_inputs(run_id, inputs)
            return
        except Exception:
            if attempt == INPUT_ATTEMPTS - 1:
                raise
            time.sleep(0.05 * (attempt + 1))


def _log_artifacts(client: MlflowClient, run_id: str, record: CandidateRecord, redact: Redactor) -> None:
    files: dict[str, bytes] = {}
    if record.report is not None:
        from tunegate.render import markdown

        files["report.json"] = redact.text(record.report.model_dump_json(indent=2)).encode()
        files["report.md"] = redact.text(record.report_markdown or markdown(record.report)).encode()
    elif record.report_markdown:
        files["report.md"] = redact.text(record.report_markdown).encode()
    if record.advice is not None:
        files["advice.json"] = json.dumps(redact.data(record.advice), indent=2, default=str).encode()
    if record.kind != "sweep candidate":
        files.update(run_charts(record))
    if not files:
        return
    with tempfile.TemporaryDirectory(prefix="tunegate-artifacts-") as tmp:
        for name, data in files.items():
            (Path(tmp) / name).write_bytes(data)
        client.log_artifacts(run_id, tmp)
