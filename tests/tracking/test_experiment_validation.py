"""One validation set per experiment: the first run's validation digest is the experiment's; a
preflight or sweep on another is refused, naming both digests and the experiment to name instead."""
from __future__ import annotations

import pytest

from tests.support.paths import DATA
from tunegate.errors import UsageError
from tunegate.tracking import ensure_experiment
from tunegate.tracking.experiment_data import VALIDATION_TAG, claim_validation


def test_the_first_run_claims_the_experiment_and_the_same_digest_is_welcome(client, store_uri):
    exp = ensure_experiment(client, "support", store_uri)
    claim_validation(client, exp, "support", "sha256:" + "a" * 64)
    claim_validation(client, exp, "support", "sha256:" + "a" * 64)
    assert client.get_experiment(exp).tags[VALIDATION_TAG] == "sha256:" + "a" * 64


def test_another_digest_is_refused_naming_both_and_the_experiment_to_name(client, store_uri):
    exp = ensure_experiment(client, "support", store_uri)
    claim_validation(client, exp, "support", "a" * 64)
    with pytest.raises(UsageError) as refused:
        claim_validation(client, exp, "support", "b" * 64, "validation.jsonl")
    message = str(refused.value)
    assert "'support'" in message and "a" * 12 in message and "b" * 12 in message
    assert "(validation.jsonl)" in message and f"tracking.experiment: support-{'b' * 8}" in message
    assert client.get_experiment(exp).tags[VALIDATION_TAG] == "a" * 64  # the experiment keeps its own


@pytest.mark.slow
def test_a_preflight_and_a_sweep_on_an_edited_validation_file_are_refused_before_they_run(prefect_api, workdir):
    from tunegate.flows.preflight import preflight
    from tunegate.flows.sweep import sweep
    from tunegate.fullrun.forks import FORKS

    first = preflight(str(workdir / "good.yaml"), mini_run=False, advisor=False, return_state=True)
    assert first.is_completed(), first.message
    with open(workdir / "validation.jsonl", "a", encoding="utf-8") as f:
        f.write('{"messages": [{"role": "user", "content": "new"}, {"role": "assistant", "content": "row"}]}\n')
    for state in (preflight(str(workdir / "good.yaml"), mini_run=False, advisor=False, return_state=True),
                  sweep(str(workdir / "good.yaml"), return_state=True)):
        assert state.is_failed()
        error = state.result(raise_on_failure=False)
        assert isinstance(error, UsageError) and "tracking.experiment: tunegate-" in str(error)
    assert not (workdir / ".tunegate" / "candidates").exists()  # no candidate was gated or trained
    assert not FORKS.running()  # the fork server the sweep started ahead is stopped: nothing will take it


def test_an_experiment_tagged_with_a_first_version_digest_takes_the_new_one_for_the_same_data(client, store_uri):
    from tunegate.dataset.fingerprint import SHA256, algorithm_of, fingerprint_file

    data = DATA / "overlap" / "disjoint_validation.jsonl"
    exp = ensure_experiment(client, "support", store_uri)
    claim_validation(client, exp, "support", fingerprint_file(data, SHA256).digest)  # before BLAKE3
    new = fingerprint_file(data).digest
    claim_validation(client, exp, "support", new, "validation.jsonl",
                     lambda held: fingerprint_file(data, algorithm_of(held)).digest)
    assert client.get_experiment(exp).tags[VALIDATION_TAG] == new


def test_an_experiment_tagged_with_a_first_version_digest_of_other_data_is_still_refused(client, store_uri):
    from tunegate.dataset.fingerprint import SHA256, algorithm_of, fingerprint_file

    data, other = DATA / "overlap" / "disjoint_validation.jsonl", DATA / "overlap" / "records.jsonl"
    exp = ensure_experiment(client, "support", store_uri)
    held = fingerprint_file(other, SHA256).digest
    claim_validation(client, exp, "support", held)
    with pytest.raises(UsageError):
        claim_validation(client, exp, "support", fingerprint_file(data).digest, "validation.jsonl",
                         lambda held: fingerprint_file(data, algorithm_of(held)).digest)
    assert client.get_experiment(exp).tags[VALIDATION_TAG] == held
