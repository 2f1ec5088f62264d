"""`tunegate runs`: the experiment table, grouped by training and validation data, ranked only within a group."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys

from tests.support.tracking import (
    DATA,
    EXPERIMENT,
    ROOT_DIR,
    approved_record,
    base_spec,
    other_validation,
    record_from_report,
    report,
    with_changes,
)
from tunegate.tracking.candidate_log import log_candidate
from tunegate.tracking.runs import start_parent

OTHER = "sha256:" + "9" * 64
FLOWS = ROOT_DIR / "tests" / "data" / "flows"


def _tunegate(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tunegate", "runs", *args], cwd=ROOT_DIR,
                          capture_output=True, text=True, timeout=120)


def _sweep(client) -> dict[str, str]:
    """Three candidates on the frozen validation set, one rejected, and one scored on other data."""
    parent = start_parent(client, EXPERIMENT, "flow-1")
    ids = {}
    for r, loss in ((4, 1.9), (8, 1.4), (16, 1.7)):
        ids[f"r{r}"] = log_candidate(client, parent, approved_record(with_changes(base_spec(), lora={"r": r}),
                                                                     val_loss=loss)).run_id
    ids["rejected"] = log_candidate(client, parent, record_from_report(
        report("rejected"), with_changes(base_spec(), lora={"r": 2}))).run_id
    other = other_validation(approved_record(with_changes(base_spec(), lora={"r": 32}), val_loss=0.9), OTHER)
    ids["other"] = log_candidate(client, start_parent(client, EXPERIMENT, "flow-2"), other).run_id
    return ids


def test_the_table_ranks_by_validation_loss_within_a_validation_group(client, store_uri):
    ids = _sweep(client)
    out = _tunegate("--tracking-uri", store_uri, "--experiment", EXPERIMENT)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0] == f"experiment '{EXPERIMENT}': 5 candidate run(s) in 2 data group(s)"
    assert "ranked only within their group" in lines[1]
    header = next(line for line in lines if line.startswith("rank"))
    for column in ("name", "version", "model", "r", "alpha", "dropout", "lr", "batch", "trained", "train loss",
                   "val loss", "verdict"):
        assert column in header
    rows = [line.split() for line in lines if line[:1].isdigit() or line.startswith("-  ")]
    frozen = [row for row in rows if row[1] in {ids[k][:8] for k in ("r4", "r8", "r16", "rejected")}]
    assert [(row[0], row[1]) for row in frozen] == [("1", ids["r8"][:8]), ("2", ids["r16"][:8]),
                                                    ("3", ids["r4"][:8]), ("-", ids["rejected"][:8])]
    name, *cells = frozen[0][2:]
    assert name.startswith("candidate-")  # these records carry no name of their own
    # "trained": what the run logged it trained (run.trained_steps); these logged none, so never the
    # spec's max_steps, which is a plan.
    assert ["support-v1", "tunegate/tiny-llama", "8", "32.0", "0.05", "0.0002", "4x2", "no", "1.2", "1.4",
            "approved", "FINISHED"] == cells
    # The run scored on other validation data is alone in its group: rank 1 there, not above r8.
    assert [row[:2] for row in rows if row[1] == ids["other"][:8]] == [["1", ids["other"][:8]]]


def test_json_output_holds_one_group_per_validation_digest(client, store_uri):
    ids = _sweep(client)
    out = _tunegate("--tracking-uri", store_uri, "--experiment", EXPERIMENT, "--json")
    doc = json.loads(out.stdout)
    groups = {g["validation_digest"]: g["runs"] for g in doc["groups"]}
    assert {g["train_digest"] for g in doc["groups"]} == {approved_record().dataset("train").digest}
    frozen = approved_record().validation_digest
    assert set(groups) == {frozen, OTHER}
    assert [(r["run_id"], r["rank"]) for r in groups[frozen]] == [
        (ids["r8"], 1), (ids["r16"], 2), (ids["r4"], 3), (ids["rejected"], None)]
    assert groups[frozen][0]["val_loss"] == 1.4 and groups[frozen][0]["dataset_version"] == "support-v1"


def test_comparing_runs_across_validation_digests_is_refused(client, store_uri):
    ids = _sweep(client)
    out = _tunegate("--tracking-uri", store_uri, "--compare", ids["r8"], ids["other"])
    assert out.returncode == 1
    assert "refusing to rank runs on different validation data (2 validation digests" in out.stderr
    assert ids["other"][:8] in out.stderr and "both their training and validation data" in out.stderr


def test_comparing_runs_on_one_validation_digest_ranks_them(client, store_uri):
    ids = _sweep(client)
    out = _tunegate("--tracking-uri", store_uri, "--compare", ids["r4"], ids["r8"], "--json")
    assert out.returncode == 0, out.stderr
    runs = json.loads(out.stdout)["groups"][0]["runs"]
    assert [(r["run_id"], r["rank"]) for r in runs] == [(ids["r8"], 1), (ids["r4"], 2)]


def test_the_spec_names_the_store_and_experiment(client, store_uri, tmp_path):
    _sweep(client)
    spec = tmp_path / "spec.yaml"
    for name in ("train.jsonl", "validation.jsonl"):
        shutil.copy(DATA / name, tmp_path / name)
    spec.write_text((DATA / "spec.yaml").read_text() + f"tracking:\n  experiment: {EXPERIMENT}\n")
    out = _tunegate("--spec", str(spec))  # mlflow.db beside the spec is the default store
    assert out.returncode == 0, out.stderr
    assert "5 candidate run(s)" in out.stdout


def test_a_missing_store_is_a_usage_error_and_is_not_created(tmp_path):
    out = _tunegate("--tracking-uri", f"sqlite:///{tmp_path}/nothing.db")
    assert out.returncode == 2 and "no MLflow store at" in out.stderr
    assert not (tmp_path / "nothing.db").exists()


def test_an_empty_experiment_says_so(client, store_uri):
    out = _tunegate("--tracking-uri", store_uri, "--experiment", "empty")
    assert out.returncode == 0 and out.stdout == "no candidate runs in experiment 'empty'\n"


def test_the_table_ends_with_how_to_open_the_runs_in_the_mlflow_ui(client, store_uri):
    _sweep(client)
    out = _tunegate("--tracking-uri", store_uri, "--experiment", EXPERIMENT)
    experiment_id = client.get_experiment_by_name(EXPERIMENT).experiment_id
    assert out.stdout.endswith(f"\nopen in the MLflow UI: mlflow ui --backend-store-uri {store_uri} --port 5000\n"
                               f"  then http://127.0.0.1:5000/#/experiments/{experiment_id}/runs"
                               "?workflowType=machine_learning&compareRunsMode=CHART\n")


def _on_train(train_file, r: int, val_loss: float):
    """An approved candidate whose training data is `train_file` (real digest and record count)."""
    from tunegate.dataset.fingerprint import fingerprint_file

    base = report("approved")
    prints = {**base.fingerprints, "train": fingerprint_file(train_file).model_dump()}
    return record_from_report(base.model_copy(update={"fingerprints": prints}),
                              with_changes(base_spec(), lora={"r": r}), val_loss=val_loss)


def test_runs_trained_on_other_data_are_ranked_apart_and_say_why(client, store_uri):
    # issue 11: a run on a 60-record subset (tests/data/flows/train_subset_60.jsonl) sat in one ranking
    # with runs on all 85 records
    full, subset = FLOWS / "train.jsonl", FLOWS / "train_subset_60.jsonl"
    parent = start_parent(client, EXPERIMENT, "flow-1")
    ids = {r: log_candidate(client, parent, _on_train(full, r, loss)).run_id for r, loss in ((4, 1.9), (8, 1.4))}
    ids[16] = log_candidate(client, parent, _on_train(subset, 16, 1.1)).run_id  # lower loss, other data
    out = _tunegate("--tracking-uri", store_uri, "--experiment", EXPERIMENT)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0] == f"experiment '{EXPERIMENT}': 3 candidate run(s) in 2 data group(s)"
    heads = [line for line in lines if line.startswith("train ")]
    assert "(85 records), validation" in heads[0] and "2 run(s)" in heads[0]
    assert "(60 records), validation" in heads[1]
    assert "not ranked with the first group: other training data (" in heads[1]
    assert "60 records, not " in heads[1] and "85 records)" in heads[1]
    ranks = {line.split()[1]: line.split()[0] for line in lines if line[:1].isdigit()}
    assert ranks == {ids[8][:8]: "1", ids[4][:8]: "2", ids[16][:8]: "1"}  # r16 tops only its own group


def test_comparing_runs_on_other_training_data_is_refused(client, store_uri):
    full, subset = FLOWS / "train.jsonl", FLOWS / "train_subset_60.jsonl"
    parent = start_parent(client, EXPERIMENT, "flow-1")
    a = log_candidate(client, parent, _on_train(full, 4, 1.9)).run_id
    b = log_candidate(client, parent, _on_train(subset, 8, 1.1)).run_id
    out = _tunegate("--tracking-uri", store_uri, "--compare", a, b)
    assert out.returncode == 1 and "refusing to rank runs on different training data" in out.stderr
