"""Parse once, hand it on: how often a whole preflight and a whole sweep read the spec and the data.

The counts wrap the real functions (the code under them runs unchanged): the spec's one
validation (`tunegate.spec.check._validate_text`), the dataset stage's strict reader, and the one
lenient reader every later stage uses (`tunegate.dataset.records.open_stream`).
"""
from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow


@pytest.fixture
def reads(monkeypatch):
    """Counters of spec parses and of data-file reads per reader and file name."""
    from tunegate.dataset import jsonl_reader, records
    from tunegate.spec import check

    counted: Counter[str] = Counter()

    def spy(owner, name, key):
        real = getattr(owner, name)

        def wrapper(*args, **kwargs):
            counted[key(*args)] += 1
            return real(*args, **kwargs)
        monkeypatch.setattr(owner, name, wrapper)

    spy(check, "_validate_text", lambda path, *_: f"spec:{Path(path).name}")
    spy(records, "open_stream", lambda path: f"lenient:{Path(path).name}")
    spy(jsonl_reader.JsonlReader, "_open", lambda reader: f"strict:{reader.path.name}")
    return counted


def test_a_cli_preflight_parses_the_spec_twice_and_reads_train_through_two_readers(
        prefect_api, tiny_cache, workdir, reads, monkeypatch):
    from tunegate.cli.main import main
    from tunegate.fullrun import forks
    from tunegate.sweep import start_ahead

    # The reads are counted in this process: its mini-run here, not in a fork server's child
    # (tests/cli/test_preflight_processes.py checks that one's verdict), whatever an earlier test left.
    monkeypatch.setattr(start_ahead, "start_mini_run_ahead", lambda parsed: False)
    monkeypatch.setattr(forks, "FORKS", forks.ForkServer())

    assert main(["preflight", str(workdir / "good.yaml"), "--json"]) == 0
    assert reads["spec:good.yaml"] == 2  # the CLI's guard before Prefect starts, the flow's first task
    assert reads["strict:train.jsonl"] == 1  # the dataset stage
    # the mini-run's token audit, through the one lenient reader (the near-duplicate pass rides
    # along the dataset stage's read since issue 15; it read train a second time before)
    assert reads["lenient:train.jsonl"] == 1
    assert {key.split(":")[0] for key in reads} == {"spec", "strict", "lenient"}


def test_a_three_candidate_sweep_parses_the_base_once_and_each_candidate_once(prefect_api, tiny_cache, workdir,
                                                                             reads):
    from tunegate.flows.sweep import sweep

    state = sweep(str(workdir / "three.yaml"), return_state=True)
    assert state.is_completed(), state.message
    assert len(state.result()["outcomes"]) == 3
    assert reads["spec:three.yaml"] == 1
    candidates = {k: n for k, n in reads.items() if k.startswith("spec:three-")}
    assert len(candidates) == 3 and set(candidates.values()) == {1}
    assert reads["strict:train.jsonl"] == 1  # the data stages ran once for the whole sweep
