"""The sweep flow: data stages once, every candidate gated, rejected ones logged, none aborts it."""
from __future__ import annotations

from pathlib import Path

import pytest

from tunegate.fullrun.forked_jobs import FORKED
from tunegate.fullrun.token_cache import KEPT_TOKENS
from tunegate.fullrun.trainer import KEPT_BASE

pytestmark = pytest.mark.slow


def test_sweep_scores_good_candidates_and_logs_the_diverging_one_as_rejected(prefect_api, tiny_cache, workdir):
    from mlflow import MlflowClient

    from tunegate.flows.sweep import sweep

    state = sweep(str(workdir / "good.yaml"), return_state=True)
    assert state.is_completed(), state.message
    summary = state.result()
    good, diverging = summary["outcomes"]
    assert good["approved"] and good["val_loss"] > 0
    assert not diverging["approved"] and diverging["reason"]
    assert summary["best"]["overrides"] == {"lora.r": 4, "lora.alpha": 8}
    client = MlflowClient(f"sqlite:///{workdir / 'mlflow.db'}")
    exp = client.get_experiment_by_name("tunegate").experiment_id
    parent = client.search_runs([exp], "tags.`tunegate.kind` = 'parent'")[0]
    children = client.search_runs([exp], "tags.`tunegate.kind` = 'candidate'")
    assert {c.info.status for c in children} == {"FINISHED", "FAILED"}
    assert parent.data.tags["tunegate.best_run"] == good["run_id"]
    assert any(a.path == "best_spec.yaml" for a in client.list_artifacts(parent.info.run_id))
    # its training ran in the child of the fork server that ran its mini-run (tunegate.fullrun.forks), on the
    # base that mini-run loaded, and wrote no checkpoint: nothing resumes a candidate
    trained = Path(good["spec_path"]).with_name(f"{Path(good['spec_path']).stem}-train")
    log = (trained / "train.log").read_text()
    assert log.startswith(FORKED) and f"\n{KEPT_BASE}\n" in log
    assert not (trained / "checkpoints").exists() and (trained / "adapter").is_dir()
    assert not list(trained.parent.glob("tokens-*"))  # the encoded copy of the data did not outlive the sweep


def test_rerun_of_a_finished_sweep_reuses_every_candidate_in_the_same_parent(prefect_api, tiny_cache, workdir):
    from mlflow import MlflowClient

    from tunegate.flows.sweep import sweep

    first = sweep(str(workdir / "good.yaml"), return_state=True).result()
    second = sweep(str(workdir / "good.yaml"), return_state=True).result()
    assert [o["run_id"] for o in second["outcomes"]] == [o["run_id"] for o in first["outcomes"]]
    assert all(o["reused"] for o in second["outcomes"])
    client = MlflowClient(f"sqlite:///{workdir / 'mlflow.db'}")
    exp = client.get_experiment_by_name("tunegate").experiment_id
    (parent,) = client.search_runs([exp], "tags.`tunegate.kind` = 'parent'")  # continued, no empty second one
    assert parent.info.run_name == "sweep good 2 candidates" and parent.info.status == "FINISHED"
    children = client.search_runs([exp], f"tags.`mlflow.parentRunId` = '{parent.info.run_id}'")
    assert {c.info.run_id for c in children} == {o["run_id"] for o in second["outcomes"]}


def test_nomad_sweep_treats_the_diverging_region_as_infeasible_and_finds_a_feasible_best(
        prefect_api, tiny_cache, workdir):
    from mlflow import MlflowClient

    from tunegate.flows.sweep import sweep

    state = sweep(str(workdir / "nomad.yaml"), return_state=True)
    assert state.is_completed(), state.message
    summary = state.result()
    rejected = [o for o in summary["outcomes"] if not o["approved"]]
    assert len(summary["outcomes"]) == 5
    # out of scale (TG535), NaN in fp16 (TG516), or, at lr 1, rejected by the spec stage (TG125)
    assert rejected and all(set(o["codes"]) & {"TG125", "TG516", "TG535"} for o in rejected)
    best = summary["best"]["overrides"]["training.learning_rate"]
    assert best < 1.0 and summary["best"]["val_loss"] > 0
    client = MlflowClient(f"sqlite:///{workdir / 'mlflow.db'}")
    exp = client.get_experiment_by_name("tunegate").experiment_id
    failed = client.search_runs([exp], "tags.`tunegate.kind` = 'candidate' and attributes.status = 'FAILED'")
    assert len(failed) == len(rejected)
    assert any(code in failed[0].data.tags["tunegate.failure_reason"] for code in ("TG125", "TG516", "TG535"))
    # the trained candidates' data was encoded once: each later one read it back; none of it is left
    trained = [Path(o["spec_path"]) for o in summary["outcomes"] if o["approved"]]
    kept = [KEPT_TOKENS in path.with_name(f"{path.stem}-train").joinpath("train.log").read_text() for path in trained]
    assert len(kept) >= 2 and kept.count(False) == 1
    assert not list(trained[0].parent.glob("tokens-*"))


@pytest.fixture(scope="module")
def leaky_sweep(prefect_api, tiny_cache, tmp_path_factory):
    """tests/data/flows/leaky.yaml swept once: its outcomes and its MLflow runs."""
    import shutil

    from mlflow import MlflowClient

    from tests.support.flows import FLOWS_DATA
    from tunegate.flows.sweep import sweep

    folder = tmp_path_factory.mktemp("leaky") / "flows"
    shutil.copytree(FLOWS_DATA, folder)
    with pytest.MonkeyPatch.context() as patch:
        _watch_candidates(patch)
        state = sweep(str(folder / "leaky.yaml"), return_state=True)
    assert state.is_completed(), state.message
    client = MlflowClient(f"sqlite:///{folder / 'mlflow.db'}")
    exp = client.get_experiment_by_name("tunegate").experiment_id
    runs = client.search_runs([exp])
    return state.result(), {r.info.run_name: r for r in runs}


_SEEN: list[tuple[str, str, int, float]] = []  # (what, candidate key, thread, when) in the leaky sweep


def _watch_candidates(patch: pytest.MonkeyPatch) -> None:
    """Note when each candidate's gate starts, its job takes and gives back its slot, its logging ends."""
    import threading
    import time

    from tunegate.sweep import evaluate, job_slots
    from tunegate.sweep.candidates import candidate_key

    def note(what: str, key: str) -> None:
        _SEEN.append((what, key, threading.get_ident(), time.monotonic()))

    gate, log = evaluate.gate_candidate, evaluate._log
    take, end = job_slots.Claim.take_slot, job_slots.Claim.end

    def gate_noted(parsed, *args, **kwargs):
        note("gate starts", "")
        return gate(parsed, *args, **kwargs)

    def log_noted(session, report, spec, base, overrides, measured):
        logged = log(session, report, spec, base, overrides, measured)
        note("logged", candidate_key(overrides))
        return logged

    def take_noted(claim):
        take(claim)
        note("job starts", claim._key)

    def end_noted(claim):
        if claim.slot_taken:
            note("job ends", claim._key)
        end(claim)

    patch.setattr(evaluate, "gate_candidate", gate_noted)
    patch.setattr(evaluate, "_log", log_noted)
    patch.setattr(job_slots.Claim, "take_slot", take_noted)
    patch.setattr(job_slots.Claim, "end", end_noted)


def test_jobs_run_one_at_a_time_in_the_sweeps_order_the_next_gated_while_one_is_logged(leaky_sweep):
    from tunegate.sweep.candidates import candidate_key

    jobs = [(what, key) for what, key, _, _ in _SEEN if what in ("job starts", "job ends")]
    first = candidate_key({"lora.r": 4, "lora.alpha": 8})
    second = candidate_key({"data.train": "train_subset_60.jsonl"})
    # max_parallel 1: never two jobs at once; r4-a8 and train=train_subset_60 ran a mini-run, in that order
    assert jobs == [("job starts", first), ("job ends", first), ("job starts", second), ("job ends", second)]
    first_thread = next(thread for what, key, thread, _ in _SEEN if what == "job starts" and key == first)
    first_logged = next(when for what, key, _, when in _SEEN if what == "logged" and key == first)
    gated_meanwhile = [when for what, _, thread, when in _SEEN if what == "gate starts" and thread != first_thread]
    assert min(gated_meanwhile) < first_logged  # the next candidate did not wait for the first's logging


def test_the_leaky_candidate_is_rejected_never_trained_and_logs_its_own_data(leaky_sweep):
    summary, runs = leaky_sweep
    leaky = summary["outcomes"][1]
    assert not leaky["approved"] and "TG301" in leaky["codes"] and leaky["val_loss"] is None
    run = runs["train=leaky_train"]
    assert run.info.status == "FAILED" and "stage 'overlap'" in run.data.tags["tunegate.failure_reason"]
    assert run.data.params["data.train_records"] == "105"
    assert run.data.params["data.train_digest"] != runs["r4-a8"].data.params["data.train_digest"]
    assert "run.trained_steps" not in run.data.params  # it trained nothing


def test_every_candidate_has_a_named_run_with_its_verdict_a_spec_rejected_one_too(leaky_sweep):
    summary, runs = leaky_sweep
    assert len(summary["outcomes"]) == 5
    assert {"sweep leaky 5 candidates", "r4-a8", "train=leaky_train", "train=train_subset_60", "r=true",
            "validation=validation_other"} == set(runs)
    rejected = runs["r=true"]
    assert rejected.info.status == "FAILED" and rejected.data.tags["tunegate.verdict"] == "rejected"
    assert "TG102" in rejected.data.tags["tunegate.failing_codes"] and rejected.data.params["lora.r"] == "True"
    other = runs["validation=validation_other"]
    assert "TG391" in other.data.tags["tunegate.failing_codes"]


def test_the_trained_budget_is_logged_as_such_with_sortable_verdict_and_data_columns(leaky_sweep):
    _, runs = leaky_sweep
    good = runs["r4-a8"]
    assert good.data.params["run.trained_steps"] == "2"  # sweep.train_steps, not the spec's max_steps 6
    assert good.data.params["training.max_steps"] == "6" and good.data.params["run.kind"] == "sweep candidate"
    assert good.data.metrics["gate/approved_for_full_run"] == 1.0 and "val/loss" in good.data.metrics
    assert good.data.tags["tunegate.val_scope"] == "validation set"
    assert runs["r=true"].data.metrics["gate/approved_for_full_run"] == 0.0
    assert {"data.train_digest", "data.validation_digest"} <= set(good.data.params)


def test_a_candidate_on_other_training_data_is_trained_but_not_ranked_against_the_others(leaky_sweep):
    summary, runs = leaky_sweep
    subset = summary["outcomes"][2]
    assert subset["approved"] and subset["own_data"] == ["data.train"]
    assert runs["train=train_subset_60"].data.params["data.train_records"] == "60"
    assert summary["best"]["overrides"] == {"lora.r": 4, "lora.alpha": 8}  # the only one on the base's data
    assert runs["sweep leaky 5 candidates"].data.tags["tunegate.best_run"] == runs["r4-a8"].info.run_id
