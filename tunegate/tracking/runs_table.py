"""The experiment table: every candidate run, grouped by validation digest, ranked inside a group.

The validation set is frozen across candidates because changing it makes scores incomparable, so
runs are only ever ranked against runs that were scored on the same validation data (same
digest). Comparing across digests is refused with `IncomparableRunsError`.
"""
from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from tunegate.errors import IncomparableRunsError
from tunegate.tracking.runs import (
    BEST_RUN,
    CANDIDATE_ID,
    KIND,
    VALIDATION_DIGEST,
    VERDICT,
    children,
    end_run,
    search_all,
)

if TYPE_CHECKING:
    from mlflow import MlflowClient
    from mlflow.entities import Run

NO_DIGEST = "(no validation digest)"


class RunRow(BaseModel):
    """One candidate run as the table shows it (the fields the source asks to record)."""

    run_id: str
    candidate_id: str
    status: str
    verdict: str | None
    dataset_version: str | None
    model_id: str | None
    r: str | None
    alpha: str | None
    dropout: str | None
    lr: str | None
    micro_batch: str | None
    grad_accum: str | None
    steps: str | None
    epochs: str | None
    final_train_loss: float | None
    val_loss: float | None
    validation_digest: str
    rank: int | None = None


class RunGroup(BaseModel):
    validation_digest: str
    runs: list[RunRow]


def row_from_run(run: Run) -> RunRow:
    p, m, t = run.data.params, run.data.metrics, run.data.tags
    return RunRow(
        run_id=run.info.run_id, candidate_id=t.get(CANDIDATE_ID, ""), status=run.info.status,
        verdict=t.get(VERDICT), dataset_version=p.get("data.version"), model_id=p.get("model.id"),
        r=p.get("lora.r"), alpha=p.get("lora.alpha"), dropout=p.get("lora.dropout"),
        lr=p.get("training.learning_rate"), micro_batch=p.get("training.micro_batch_size"),
        grad_accum=p.get("training.grad_accum_steps"), steps=p.get("training.max_steps"),
        epochs=p.get("training.epochs"), final_train_loss=m.get("train/final_loss"),
        val_loss=m.get("val/loss"),
        validation_digest=t.get(VALIDATION_DIGEST) or p.get("data.validation_digest") or NO_DIGEST)


def candidate_rows(client: MlflowClient, experiment: str) -> list[RunRow]:
    """Every candidate run of `experiment` (parents left out); [] when the experiment is missing."""
    exp = client.get_experiment_by_name(experiment)
    if exp is None:
        return []
    runs = search_all(client, [exp.experiment_id], f"tags.`{KIND}` = 'candidate'")
    return [row_from_run(r) for r in runs]


def _rankable(row: RunRow) -> bool:
    return row.val_loss is not None and math.isfinite(row.val_loss) and row.status == "FINISHED"


def rank(rows: list[RunRow]) -> list[RunRow]:
    """Rows of ONE validation digest, best validation loss first; unrankable rows (failed, no val
    loss) follow, unranked."""
    compare_digests(rows)
    ranked = sorted((r for r in rows if _rankable(r)), key=lambda r: (r.val_loss, r.run_id))
    rest = [r for r in rows if not _rankable(r)]
    return [r.model_copy(update={"rank": i}) for i, r in enumerate(ranked, 1)] + rest


def compare_digests(rows: list[RunRow]) -> None:
    """Raise IncomparableRunsError when the rows were scored on different validation sets."""
    digests = sorted({r.validation_digest for r in rows})
    if len(digests) > 1:
        listing = "; ".join(f"{d}: {', '.join(r.run_id[:8] for r in rows if r.validation_digest == d)}"
                            for d in digests)
        raise IncomparableRunsError(
            f"refusing to rank runs scored on different validation sets ({len(digests)} validation "
            f"digests: {listing}). The validation set must stay frozen for scores to be comparable; "
            "compare runs within one digest.")


def compare_runs(client: MlflowClient, run_ids: list[str]) -> list[RunRow]:
    """Rank the given runs against each other, best first.

    Raises:
        IncomparableRunsError: the runs were scored on different validation digests.
    """
    return rank([row_from_run(client.get_run(run_id)) for run_id in run_ids])


def group_by_validation(rows: list[RunRow]) -> list[RunGroup]:
    """One ranked group per validation digest; the group with the most runs first."""
    digests: dict[str, list[RunRow]] = {}
    for row in rows:
        digests.setdefault(row.validation_digest, []).append(row)
    groups = [RunGroup(validation_digest=d, runs=rank(rs)) for d, rs in digests.items()]
    return sorted(groups, key=lambda g: (-len(g.runs), g.validation_digest))


def finish_parent(client: MlflowClient, parent_run_id: str, failed_reason: str = "") -> str | None:
    """End the parent run, tagged with its best candidate (lowest validation loss); return that run id.

    Raises IncomparableRunsError (after ending the parent FAILED) if the children were scored on
    different validation sets, which a sweep must never do.
    """
    rows = [row_from_run(r) for r in children(client, parent_run_id)]
    try:
        ranked = rank(rows)
    except IncomparableRunsError as exc:
        end_run(client, parent_run_id, "FAILED", str(exc))
        raise
    best = next((r.run_id for r in ranked if r.rank == 1), None)
    if best:
        client.set_tag(parent_run_id, BEST_RUN, best)
    end_run(client, parent_run_id, "FAILED" if failed_reason else "FINISHED", failed_reason)
    return best


def _fmt(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


COLUMNS = [("rank", 4), ("run", 8), ("version", 10), ("model", 18), ("r", 4), ("alpha", 5),
           ("dropout", 7), ("lr", 8), ("batch", 6), ("steps/ep", 8), ("train loss", 10),
           ("val loss", 9), ("verdict", 8), ("status", 8)]


def _cells(r: RunRow) -> list[str]:
    batch = f"{r.micro_batch}x{r.grad_accum}" if r.micro_batch else "-"
    length = f"{r.steps} st" if r.steps else (f"{r.epochs} ep" if r.epochs else "-")
    return [_fmt(r.rank), r.run_id[:8], _fmt(r.dataset_version), _fmt(r.model_id), _fmt(r.r), _fmt(r.alpha),
            _fmt(r.dropout), _fmt(r.lr), batch, length, _fmt(r.final_train_loss), _fmt(r.val_loss),
            _fmt(r.verdict), r.status]


def format_table(groups: list[RunGroup], experiment: str) -> str:
    """The groups as plain text, one table per validation digest."""
    if not groups:
        return f"no candidate runs in experiment '{experiment}'\n"
    out = [f"experiment '{experiment}': {sum(len(g.runs) for g in groups)} candidate run(s) "
           f"in {len(groups)} validation group(s)"]
    if len(groups) > 1:
        out.append("runs in different groups were scored on different validation data: "
                   "they are ranked only within their group")
    for g in groups:
        out += ["", f"validation digest {g.validation_digest} ({len(g.runs)} run(s))"]
        table = [[name for name, _ in COLUMNS]] + [_cells(r) for r in g.runs]
        widths = [max(w, *(len(row[i]) for row in table)) for i, (_, w) in enumerate(COLUMNS)]
        out += ["  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip() for row in table]
    return "\n".join(out) + "\n"
