"""Events name files relative to the project root (plus the root's digest), and a worker resolves
them in its own checkout: a trigger sent from CI never names a folder only the CI runner has.

A "project" here is a copy of examples/ beside a prefect.yaml, as a repository checkout holds them;
the CI runner and the worker each have their own copy, at different places.
"""
from __future__ import annotations

import json
import shutil

import pytest

from tests.support.paths import EXAMPLES, ROOT
from tunegate.events.paths import on_this_checkout, project_root, root_digest
from tunegate.events.payload import dataset_event, preflight_event
from tunegate.gate import check


def checkout(folder):
    """A checkout of the project: prefect.yaml at its root, the examples below it."""
    folder.mkdir(parents=True)
    shutil.copyfile(ROOT / "prefect.yaml", folder / "prefect.yaml")
    shutil.copytree(EXAMPLES, folder / "examples", ignore=shutil.ignore_patterns("mlflow.db*", ".tunegate"))
    return folder


def test_an_event_names_the_spec_and_data_relative_to_the_project_root_with_its_digest(tmp_path):
    ci = checkout(tmp_path / "runner" / "work" / "repo")
    spec = ci / "examples" / "quickstart.yaml"
    report = check(spec)
    sent = dataset_event(spec, {r: report.fingerprints[r] for r in ("train", "validation")},
                         report.fingerprints["spec"]["digest"])
    assert project_root(spec) == ci
    assert sent.payload["spec_path"] == "examples/quickstart.yaml"
    assert sent.payload["data"]["train"]["file"] == "examples/data/train.jsonl"
    assert sent.payload["project_root_digest"] == root_digest(ci)
    assert str(tmp_path) not in json.dumps(sent.model_dump())  # no folder of the runner travels


def test_the_approval_names_the_report_relative_to_the_root_whatever_the_senders_working_folder(tmp_path,
                                                                                                 monkeypatch):
    ci = checkout(tmp_path / "ci")
    monkeypatch.chdir(ci / "examples")
    report = check("quickstart.yaml")
    sent = preflight_event(report, "quickstart.yaml", ".tunegate/reports/quickstart.json")
    assert sent.payload["spec_path"] == "examples/quickstart.yaml"
    assert sent.payload["report_file"] == "examples/.tunegate/reports/quickstart.json"


def test_two_checkouts_send_the_same_paths_and_different_root_digests(tmp_path):
    one, two = checkout(tmp_path / "one"), checkout(tmp_path / "two")
    prints = {"train": {"digest": "a" * 64, "records": 1}}
    a = dataset_event(one / "examples" / "quickstart.yaml", prints).payload
    b = dataset_event(two / "examples" / "quickstart.yaml", prints).payload
    assert a["spec_path"] == b["spec_path"] and a["project_root_digest"] != b["project_root_digest"]


def test_a_worker_resolves_the_path_in_its_own_checkout(tmp_path, monkeypatch):
    checkout(tmp_path / "ci")
    worker = checkout(tmp_path / "worker")
    monkeypatch.chdir(worker)  # a deployment's flow runs in the folder prefect deploy ran in
    assert on_this_checkout("examples/quickstart.yaml", "spec") == worker / "examples" / "quickstart.yaml"


@pytest.mark.slow
def test_a_worker_without_the_file_fails_the_flow_run_naming_it_and_where_it_looked(prefect_api, tmp_path,
                                                                                  monkeypatch):
    from tunegate.flows.preflight import preflight

    worker = checkout(tmp_path / "worker")
    (worker / "examples" / "quickstart.yaml").unlink()  # this checkout is behind the sender's
    monkeypatch.chdir(worker)
    state = preflight("examples/quickstart.yaml", mini_run=False, advisor=False, return_state=True)
    assert state.is_failed()
    assert "examples/quickstart.yaml is not in this checkout" in state.message
    assert str(worker / "examples" / "quickstart.yaml") in state.message
