"""An out-of-memory on any rank is reported as one (issue 31): each failed rank writes its result.

Only rank 0 wrote the run's result, so an OOM on rank 3 reached the user as rank 0's view of the
broken collective (a crash) or as no result at all.
"""
from __future__ import annotations


def _write(path, result):
    path.parent.mkdir(parents=True, exist_ok=True)
    result.write(path)


def test_an_out_of_memory_on_another_rank_is_reported_as_an_out_of_memory(tmp_path):
    from tunegate.fullrun.launcher import _outcome
    from tunegate.fullrun.result import CRASHED, OUT_OF_MEMORY, failed, rank_result_path

    result = tmp_path / "train_result.json"
    # rank 0 saw only the collective break; rank 3 ran out of memory (only rank 0 wrote before: "errored")
    _write(result, failed(CRASHED, "training crashed: DistBackendError: NCCL communicator was aborted"))
    _write(rank_result_path(result, 3), failed(OUT_OF_MEMORY, "out of memory: CUDA out of memory"))
    told = _outcome(result, 1, False, None, [])
    assert told.codes == [OUT_OF_MEMORY] and told.reason.startswith("on rank 3: out of memory")


def test_a_rank_failure_is_read_when_rank_0_wrote_nothing_and_a_completed_run_stands(tmp_path):
    from tunegate.fullrun.launcher import _outcome
    from tunegate.fullrun.result import CANNOT_START, TrainResult, failed, rank_result_path

    result = tmp_path / "train_result.json"
    _write(rank_result_path(result, 1), failed(CANNOT_START, "the spec cannot be read"))
    assert _outcome(result, 1, False, None, []).reason == "on rank 1: the spec cannot be read"
    _write(result, TrainResult(status="completed"))
    assert _outcome(result, 0, False, None, []).ok


def test_a_failed_rank_writes_its_result_beside_the_runs(tmp_path, monkeypatch):
    from tunegate.fullrun.result import rank_result_path
    from tunegate.fullrun.trainer import main

    monkeypatch.setenv("RANK", "2")
    result = tmp_path / "train_result.json"
    assert main(["--spec", str(tmp_path / "missing.yaml"), "--result", str(result)]) == 1
    assert not result.exists() and rank_result_path(result, 2).is_file()
