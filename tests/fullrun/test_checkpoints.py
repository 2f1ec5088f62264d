"""Which checkpoint `--resume` continues from (tunegate.fullrun.checkpoints): the newest one the
Trainer finished writing, never one a kill left half-written (transformers' own choice would take
the highest number, and resuming from it fails: seen in CI, an empty `checkpoint-4` beside a whole
`checkpoint-2`)."""
from __future__ import annotations

import json
from pathlib import Path

from tunegate.fullrun.checkpoints import last_whole_checkpoint


def _whole(folder: Path, step: int) -> Path:
    path = folder / f"checkpoint-{step}"
    path.mkdir(parents=True)
    for name in ("adapter_model.safetensors", "optimizer.pt", "scheduler.pt", "rng_state.pth"):
        (path / name).write_bytes(b"\0" * 16)
    (path / "trainer_state.json").write_text(json.dumps({"global_step": step, "log_history": []}))
    return path


def test_the_newest_whole_checkpoint_is_taken(tmp_path):
    _whole(tmp_path, 2)
    newest = _whole(tmp_path, 10)
    assert last_whole_checkpoint(tmp_path) == newest  # by step, not by name order ("10" < "2")


def test_a_checkpoint_folder_the_kill_left_empty_is_skipped_and_named(tmp_path):
    whole = _whole(tmp_path, 2)
    (tmp_path / "checkpoint-4").mkdir()
    skipped: list[str] = []
    assert last_whole_checkpoint(tmp_path, skipped.append) == whole
    assert skipped == ["checkpoint-4: no trainer_state.json (the run was stopped while saving it)"]


def test_a_trainer_state_cut_short_is_not_whole(tmp_path):
    whole = _whole(tmp_path, 2)
    (_whole(tmp_path, 4) / "trainer_state.json").write_text('{"global_step": 4, "log_hist')
    assert last_whole_checkpoint(tmp_path) == whole


def test_a_trainer_state_of_another_step_is_not_whole(tmp_path):
    whole = _whole(tmp_path, 2)
    (_whole(tmp_path, 4) / "trainer_state.json").write_text(json.dumps({"global_step": 2}))
    assert last_whole_checkpoint(tmp_path) == whole


def test_no_whole_checkpoint_or_no_folder_means_step_zero(tmp_path):
    (tmp_path / "checkpoint-2").mkdir()
    assert last_whole_checkpoint(tmp_path) is None
    assert last_whole_checkpoint(tmp_path / "missing") is None


def test_other_folders_beside_the_checkpoints_are_not_checkpoints(tmp_path):
    whole = _whole(tmp_path, 2)
    (tmp_path / "checkpoint-9-old").mkdir()
    (tmp_path / "runs").mkdir()
    assert last_whole_checkpoint(tmp_path) == whole
