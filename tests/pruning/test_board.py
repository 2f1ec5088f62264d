"""The board a sweep's candidates report to: one SQLite file, shared by processes, one sweep's rows apart."""
from __future__ import annotations

import multiprocessing

import pytest

from tunegate.pruning import PruneBoard


def _report_many(path: str, name: str) -> None:
    board = PruneBoard(path, "sweep")
    board.begin(name)
    for step in range(1, 41):
        board.report(name, step, float(step))
    board.end(name, "completed", 40)


def test_candidates_in_parallel_processes_all_land_on_the_board(tmp_path):
    path = str(tmp_path / ".tunegate" / "prune" / "spec.sqlite")  # its folder is made on first use
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_report_many, args=(path, f"c{i}")) for i in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
    assert [p.exitcode for p in procs] == [0] * 4
    board = PruneBoard(path, "sweep")
    assert sorted(board.at_step(40, exclude="nobody", completed_only=True)) == [40.0] * 4
    assert board.own("c2") == {s: float(s) for s in range(1, 41)}


def test_a_retried_candidate_starts_over(tmp_path):
    board = PruneBoard(tmp_path / "b.sqlite", "sweep")
    board.report("c", 2, 1.0)
    board.end("c", "pruned", 2)
    board.begin("c")
    assert board.own("c") == {}
    assert board.at_step(2, exclude="x", completed_only=False) == []


def test_each_sweep_reads_only_its_own_rows(tmp_path):
    one, two = PruneBoard(tmp_path / "b.sqlite", "one"), PruneBoard(tmp_path / "b.sqlite", "two")
    one.report("c", 2, 1.0)
    one.end("c", "completed", 2)
    assert two.at_step(2, exclude="x", completed_only=True) == []
    assert one.at_step(2, exclude="x", completed_only=True) == [1.0]


def test_an_ending_that_is_not_completed_or_pruned_is_refused(tmp_path):
    with pytest.raises(ValueError, match="completed"):
        PruneBoard(tmp_path / "b.sqlite", "s").end("c", "finished", 2)
