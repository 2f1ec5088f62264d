"""One validation set per experiment: the experiment keeps the digest of the validation data it
was first used with, and refuses a flow run scored on any other.

    claim_validation(client, experiment_id, "tunegate", "3f2a...", "validation.jsonl")
    # UsageError: experiment 'tunegate' scores its runs on validation data 3f2a9c01b7de; ...

The source: never compare runs whose validation data changed. A sweep keeps its candidates on one
frozen set (TG390, TG391); this keeps every preflight, sweep and full run of an experiment on one,
so a later run on an edited validation file is never listed beside the old ones without a word:
it is refused, naming both digests, until it names an experiment of its own (`tracking.experiment`).
`tunegate runs` also ranks only runs on the same digests (`runs_table`). An experiment made before
this tag existed is claimed by its next run; one tagged with a digest of the fingerprint's first
version (SHA-256, tunegate.dataset.fingerprint) is tagged again with the new one when the
validation data, hashed in that first version, is still the data it was tagged with.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from tunegate.errors import UsageError

if TYPE_CHECKING:
    from mlflow import MlflowClient

VALIDATION_TAG = "tunegate.validation_digest"  # on the experiment: the digest its runs are scored on


def claim_validation(client: MlflowClient, experiment_id: str, experiment: str, digest: str,
                     validation_file: str = "", in_version: Callable[[str], str | None] | None = None) -> None:
    """Tag the experiment with `digest` on first use; raise UsageError when it holds another one.

    `in_version(held)` is the validation data's digest in the fingerprint version of the digest the
    experiment holds (None when `digest` is of that version): the data is the same when it is `held`.
    """
    from tunegate.tracking.runs import store_lock

    with store_lock(client):  # two first runs at once: one claims, the other is then compared
        held = client.get_experiment(experiment_id).tags.get(VALIDATION_TAG)
        if held is None:
            client.set_experiment_tag(experiment_id, VALIDATION_TAG, digest)
            return
        if held != digest and in_version is not None and in_version(held) == held:
            client.set_experiment_tag(experiment_id, VALIDATION_TAG, digest)  # the same data, the new version's digest
            return
    if held != digest:
        raise UsageError(refusal(experiment, held, digest, validation_file))


def refusal(experiment: str, held: str, digest: str, validation_file: str = "") -> str:
    """The refusal's message: both digests, and the experiment name to set instead."""
    what = f"this spec's validation data{f' ({validation_file})' if validation_file else ''}"
    return (f"MLflow experiment '{experiment}' scores its runs on validation data with digest {_short(held)}, but "
            f"{what} has digest {_short(digest)}: runs on different validation sets are never compared, so they "
            f"do not share an experiment. Name a new experiment for this validation set (tracking.experiment: "
            f"{experiment}-{_short(digest)[:8]}), or restore the validation file the experiment was scored on.")


def _short(digest: str) -> str:
    return digest.split(":", 1)[-1][:12]
