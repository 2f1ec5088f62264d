"""`--launch-best`: the sweep's winner written as a spec beside the sweep's, preflighted (its approval
binding that file and its data), and trained to the end by the gated full run, on the tiny model."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from tunegate.errors import UsageError
from tunegate.spec.check import parse_spec
from tunegate.sweep.winner import HEADER, winner_path, write_winner_spec


@pytest.fixture(scope="module")
def launched(prefect_api, tiny_cache, tmp_path_factory):
    """good.yaml's approved candidate alone, swept with launch_best."""
    import shutil

    from tests.support.flows import FLOWS_DATA
    from tunegate.flows.sweep import sweep

    folder = tmp_path_factory.mktemp("launch") / "flows"
    shutil.copytree(FLOWS_DATA, folder)
    spec = yaml.safe_load((folder / "good.yaml").read_text())
    spec["sweep"].update(candidates=spec["sweep"]["candidates"][:1], train_steps=2)  # {lora.r: 4, lora.alpha: 8}
    spec["training"]["max_steps"] = 2  # the winner's full run: 2 steps are enough to prove it trains
    (folder / "good.yaml").write_text(yaml.safe_dump(spec))
    state = sweep(str(folder / "good.yaml"), launch_best=True, return_state=True)
    return state, folder


@pytest.mark.slow
def test_the_winner_is_written_preflighted_and_trained_to_the_end(launched):
    state, folder = launched
    assert state.is_completed(), state.message
    launch = state.result()["launch"]
    assert launch["completed"] and launch["preflight"] == "Completed" and launch["full_run"] == "Completed"
    assert Path(launch["spec_path"]) == folder / "good-best.yaml"
    assert (folder / "out" / "full" / "adapter" / "COMPLETE").is_file()  # the base's full_run.output_dir


@pytest.mark.slow
def test_the_winners_spec_is_the_base_with_its_overrides_and_no_sweep_section(launched):
    _, folder = launched
    text = (folder / "good-best.yaml").read_text()
    first = text.splitlines()[0]
    assert text.startswith(HEADER) and json.loads(first[first.index("{"):first.index("}") + 1]) == {
        "lora.r": 4, "lora.alpha": 8}
    data = yaml.safe_load(text)
    assert "sweep" not in data and (data["lora"]["r"], data["lora"]["alpha"]) == (4, 8)
    assert data["data"]["train"] == "train.jsonl"  # as the base wrote it: the file sits beside it


@pytest.mark.slow
def test_the_approval_binds_the_winners_exact_spec_and_data(launched):
    from tunegate.fullrun.approval import approved_report, report_path

    _, folder = launched
    report = json.loads(report_path(folder / "good-best.yaml").read_text())
    assert report["approved_for_full_run"] is True
    assert approved_report(parse_spec(folder / "good-best.yaml")).approved_for_full_run


@pytest.mark.slow
def test_the_full_run_is_tracked_in_the_sweeps_experiment(launched):
    from mlflow import MlflowClient

    _, folder = launched
    client = MlflowClient(f"sqlite:///{folder / 'mlflow.db'}")
    exp = client.get_experiment_by_name("tunegate").experiment_id
    names = {r.info.run_name: r.info.status for r in client.search_runs([exp])}
    assert names["full run good-best"] == "FINISHED" and names["preflight good-best"] == "FINISHED"


def test_a_file_of_the_winners_name_that_tunegate_did_not_write_is_never_overwritten(tmp_path, data_dir):
    import shutil

    shutil.copytree(data_dir / "flows", tmp_path / "flows")
    base = parse_spec(tmp_path / "flows" / "good.yaml")
    winner_path(base.path).write_text("# my own notes\n")
    with pytest.raises(UsageError, match="was not written by tunegate"):
        write_winner_spec(base, {"lora.r": 4})
    assert winner_path(base.path).read_text() == "# my own notes\n"


def test_a_sweep_with_no_winner_launches_nothing_and_says_why(data_dir):
    from tunegate.flows.sweep import _launched
    from tunegate.sweep.summary import summarise

    launch = _launched(parse_spec(data_dir / "flows" / "good.yaml"), summarise([], None), None)
    assert not launch.completed and "nothing to launch" in launch.message
