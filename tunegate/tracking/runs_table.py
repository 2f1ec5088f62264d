"""The experiment table: every candidate run, grouped by its data, ranked inside a group.

The source: never compare runs whose training or validation data changed. So runs are ranked only
against runs trained on the same training data AND scored on the same validation data (same two
content digests), on the whole validation set (a preflight's mini-run batch is shown, not ranked).
Comparing across groups is refused with `IncomparableRunsError`.
"""
from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field, computed_field

from tunegate.errors import IncomparableRunsError
from tunegate.tracking.runs import (
    BEST_RUN,
    CANDIDATE_ID,
    KIND,
    SUPERSEDED_BY,
    TRAIN_DIGEST,
    VAL_SCOPE,
    VALIDATION_DIGEST,
    VERDICT,
    children,
    end_run,
    search_all,
)

if TYPE_CHECKING:
    from mlflow import MlflowClient
    from mlflow.entities import Run

NO_DIGEST = "(no digest)"
MINI_SCOPE = "mini-run eval batch"


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
    train_digest: str = NO_DIGEST
    train_records: str | None = None
    validation_records: str | None = None
    name: str | None = None
    trained_steps: str | None = None
    val_scope: str | None = None
    superseded_by: str | None = Field(None, description="The newer run of the same spec, data and kind.")
    rank: int | None = None

    @computed_field  # in the JSON too: `tunegate runs --json` says which runs trained
    @property
    def trained(self) -> bool:
        """Whether the run trained anything (run.trained_steps > 0): a rejected candidate did not."""
        return bool(self.trained_steps) and self.trained_steps not in ("0", "0.0")


class RunGroup(BaseModel):
    validation_digest: str
    train_digest: str = NO_DIGEST
    train_records: str | None = None
    validation_records: str | None = None
    differs: str = Field("", description="Why these runs are not ranked with the first group's.")
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
        val_loss=m.get("val/loss"), name=run.info.run_name, trained_steps=p.get("run.trained_steps"),
        val_scope=t.get(VAL_SCOPE), train_records=p.get("data.train_records"),
        validation_records=p.get("data.validation_records"), superseded_by=t.get(SUPERSEDED_BY),
        validation_digest=t.get(VALIDATION_DIGEST) or p.get("data.validation_digest") or NO_DIGEST,
        train_digest=t.get(TRAIN_DIGEST) or p.get("data.train_digest") or NO_DIGEST)


def candidate_rows(client: MlflowClient, experiment: str) -> list[RunRow]:
    """Every candidate run of `experiment` (parents left out); [] when the experiment is missing."""
    exp = client.get_experiment_by_name(experiment)
    if exp is None:
        return []
    runs = search_all(client, [exp.experiment_id], f"tags.`{KIND}` = 'candidate'")
    return [row_from_run(r) for r in runs]


def _rankable(row: RunRow) -> bool:
    return (row.val_loss is not None and math.isfinite(row.val_loss) and row.status == "FINISHED"
            and row.val_scope != MINI_SCOPE and row.superseded_by is None)


def rank(rows: list[RunRow]) -> list[RunRow]:
    """Rows of ONE data group, best validation loss first; unrankable rows (failed, no val loss, a
    preflight's mini-run loss) follow, unranked, and superseded runs (an earlier preflight or full
    run of the same spec and data) last."""
    compare_digests(rows)
    ranked = sorted((r for r in rows if _rankable(r)), key=lambda r: (r.val_loss, r.run_id))
    rest = [r for r in rows if not _rankable(r) and r.superseded_by is None]
    old = [r for r in rows if r.superseded_by is not None]
    return [r.model_copy(update={"rank": i}) for i, r in enumerate(ranked, 1)] + rest + old


def compare_digests(rows: list[RunRow]) -> None:
    """Raise IncomparableRunsError when the rows were trained or scored on different data."""
    for role, digest_of in (("validation", lambda r: r.validation_digest), ("training", lambda r: r.train_digest)):
        digests = sorted({digest_of(r) for r in rows})
        if len(digests) > 1:
            listing = "; ".join(f"{d}: {', '.join(r.run_id[:8] for r in rows if digest_of(r) == d)}"
                                for d in digests)
            raise IncomparableRunsError(
                f"refusing to rank runs on different {role} data ({len(digests)} {role} digests: {listing}). "
                "Runs are comparable only when both their training and validation data are the same; "
                "compare runs within one group.")


def compare_runs(client: MlflowClient, run_ids: list[str], experiment: str | None = None) -> list[RunRow]:
    """Rank the given runs against each other, best first. An id may be any unique prefix of one in
    `experiment` (the 8 characters the table prints).

    Raises:
        IncomparableRunsError: the runs were scored on different validation digests.
        UsageError: a prefix matches no run, or more than one.
    """
    full = resolve_run_ids(client, run_ids, experiment)
    return rank([row_from_run(client.get_run(run_id)) for run_id in full])


def resolve_run_ids(client: MlflowClient, given: list[str], experiment: str | None) -> list[str]:
    """Each id as given when it is a whole one (32 hex), else the one run of `experiment` it begins."""
    from tunegate.errors import UsageError

    short = [g for g in given if len(g) < 32]
    exp = client.get_experiment_by_name(experiment) if short and experiment else None
    if short and exp is None:
        raise UsageError(f"run id(s) {', '.join(short)} are not whole (32 characters) and there is no experiment "
                         f"'{experiment}' to find them in; pass --experiment, or the whole ids")
    every = [r.info.run_id for r in search_all(client, [exp.experiment_id])] if exp is not None else []
    out = []
    for g in given:
        if len(g) >= 32:
            out.append(g)
            continue
        found = [r for r in every if r.startswith(g.lower())]
        if len(found) != 1:
            what = "no run" if not found else f"{len(found)} runs ({', '.join(f[:12] for f in found[:5])})"
            raise UsageError(f"run id {g!r} matches {what} in experiment '{experiment}'; give more of it")
        out.append(found[0])
    return out


def group_by_data(rows: list[RunRow]) -> list[RunGroup]:
    """One ranked group per (training, validation) digest pair; the group with the most runs first,
    each later one saying how its data differ from the first's."""
    pairs: dict[tuple[str, str], list[RunRow]] = {}
    for row in rows:
        pairs.setdefault((row.train_digest, row.validation_digest), []).append(row)
    groups = sorted((_group(t, v, rs) for (t, v), rs in pairs.items()),
                    key=lambda g: (-len(g.runs), g.train_digest, g.validation_digest))
    for g in groups[1:]:
        g.differs = _differs(groups[0], g)
    return groups


group_by_validation = group_by_data  # the name `tunegate runs` used before it grouped by both digests


def _group(train: str, validation: str, rows: list[RunRow]) -> RunGroup:
    def records(attr: str) -> str | None:
        return next((getattr(r, attr) for r in rows if getattr(r, attr)), None)

    return RunGroup(train_digest=train, validation_digest=validation, runs=rank(rows),
                    train_records=records("train_records"), validation_records=records("validation_records"))


def _differs(first: RunGroup, group: RunGroup) -> str:
    """Why a group is not ranked with the first: 'other training data (a1b2c3d4e5f6, 60 records, not ...)'."""
    parts = []
    for role, digest, records in (("training", "train_digest", "train_records"),
                                  ("validation", "validation_digest", "validation_records")):
        if getattr(group, digest) != getattr(first, digest):
            parts.append(f"{role} data ({_short(getattr(group, digest))}, {getattr(group, records) or '?'} records, "
                         f"not {_short(getattr(first, digest))}, {getattr(first, records) or '?'} records)")
    return "other " + " and ".join(parts)


def _short(digest: str) -> str:
    return digest if digest == NO_DIGEST else digest.split(":", 1)[-1][:12]


def finish_parent(client: MlflowClient, parent_run_id: str, failed_reason: str = "") -> str | None:
    """End the parent run, tagged with its best candidate (lowest validation loss); return that run id.

    When the parent names its data (a sweep's frozen validation set and base training set), the
    best is chosen among the children on that data; a candidate on its own data is logged but not
    ranked against them. A parent without digests ranks all its children, and raises
    IncomparableRunsError (after ending the parent FAILED) if they were on different data.
    """
    tags = client.get_run(parent_run_id).data.tags
    rows = [row_from_run(r) for r in children(client, parent_run_id)]
    if tags.get(VALIDATION_DIGEST):
        rows = [r for r in rows if r.validation_digest == tags[VALIDATION_DIGEST]
                and r.train_digest in (tags.get(TRAIN_DIGEST, r.train_digest), NO_DIGEST)]
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


COLUMNS = [("rank", 4), ("run", 8), ("name", 14), ("version", 10), ("model", 18), ("r", 4), ("alpha", 5),
           ("dropout", 7), ("lr", 8), ("batch", 6), ("trained", 8), ("train loss", 10),
           ("val loss", 9), ("verdict", 8), ("status", 8)]


def _cells(r: RunRow) -> list[str]:
    batch = f"{r.micro_batch}x{r.grad_accum}" if r.micro_batch else "-"
    # What it trained (a sweep's budget, a preflight's mini-run, the full run); never the spec's plan.
    length = f"{r.trained_steps} st" if r.trained else "no"
    val = _fmt(r.val_loss) + ("*" if r.val_scope == MINI_SCOPE and r.val_loss is not None else "")
    status = f"superseded by {r.superseded_by[:8]}" if r.superseded_by else r.status
    return [_fmt(r.rank), r.run_id[:8], _fmt(r.name)[:32], _fmt(r.dataset_version), _fmt(r.model_id), _fmt(r.r),
            _fmt(r.alpha), _fmt(r.dropout), _fmt(r.lr), batch, length, _fmt(r.final_train_loss), val,
            _fmt(r.verdict), status]


def format_table(groups: list[RunGroup], experiment: str) -> str:
    """The groups as plain text, one table per (training, validation) data pair."""
    if not groups:
        return f"no candidate runs in experiment '{experiment}'\n"
    out = [f"experiment '{experiment}': {sum(len(g.runs) for g in groups)} candidate run(s) "
           f"in {len(groups)} data group(s)"]
    if len(groups) > 1:
        out.append("runs in different groups were trained or scored on different data: "
                   "they are ranked only within their group")
    for g in groups:
        out += ["", f"train {_short(g.train_digest)} ({g.train_records or '?'} records), validation "
                    f"{_short(g.validation_digest)} ({g.validation_records or '?'} records): {len(g.runs)} run(s)"
                + (f"; not ranked with the first group: {g.differs}" if g.differs else "")]
        table = [[name for name, _ in COLUMNS]] + [_cells(r) for r in g.runs]
        widths = [max(w, *(len(row[i]) for row in table)) for i, (_, w) in enumerate(COLUMNS)]
        out += ["  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip() for row in table]
    if any(r.val_scope == MINI_SCOPE and r.val_loss is not None for g in groups for r in g.runs):
        out += ["", "* a preflight's loss on the mini-run's one validation batch: shown, never ranked"]
    if any(r.superseded_by for g in groups for r in g.runs):
        out += ["superseded: an earlier preflight or full run of the same spec and data; the newer run is "
                "listed above it (compare any of them with --compare and the ids shown)"]
    return "\n".join(out) + "\n"
