"""The candidate record: allowlisted params, stable candidate ids, names of secrets but never values."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest
from pydantic import ValidationError

from tests.support.tracking import ROOT_DIR, approved_record, base_spec, report, with_changes
from tunegate.tracking.record import (
    PARAM_ALLOWLIST,
    CandidateRecord,
    candidate_id,
    params_from_spec,
    record_from_report,
)


def test_params_come_only_from_the_allowlist():
    params = params_from_spec(base_spec())
    assert set(params) <= set(PARAM_ALLOWLIST)
    assert params["lora.r"] == 16 and params["training.learning_rate"] == 2e-4
    assert params["lora.target_modules"] == "q_proj,k_proj,v_proj,o_proj"
    assert not any(key.startswith(("advisor.", "tracking.")) for key in params)


def test_unset_fields_are_left_out_of_the_params():
    params = params_from_spec(base_spec())
    assert "model.revision" not in params and "training.epochs" not in params


def test_a_record_rejects_a_param_outside_the_allowlist():
    record = approved_record()
    with pytest.raises(ValidationError, match="not in the allowlist"):
        CandidateRecord.model_validate({**record.model_dump(), "params": {"advisor.api_key_env": "X"}})


def test_a_record_accepts_only_env_var_names_as_secrets_without_echoing_the_value():
    record = approved_record()
    with pytest.raises(ValidationError, match="environment variable NAMES only") as err:
        CandidateRecord.model_validate({**record.model_dump(), "secret_env_names": ["sk-live-abc123def456"]})
    assert "sk-live-abc123def456" not in str(err.value)


def test_record_from_report_carries_the_data_digests_and_the_verdict():
    record = approved_record()
    assert record.verdict == "approved" and record.failing_codes == [] and record.reason == ""
    assert record.params["data.validation_digest"] == report().fingerprints["validation"]["digest"]
    assert record.params["data.train_records"] == 3
    assert record.params["spec.digest"] == report().fingerprints["spec"]["digest"]
    assert [d.role for d in record.datasets] == ["train", "validation"]


def test_a_rejected_report_gives_its_error_codes_and_the_failed_stage():
    record = record_from_report(report("rejected"), base_spec())
    assert record.verdict == "rejected" and record.failing_codes == ["TG204"]
    assert record.reason == "rejected by the gate at stage 'dataset': TG204"


def test_candidate_id_changes_with_any_param_or_digest():
    params = params_from_spec(base_spec())
    digests = {"train": "sha256:aa", "validation": "sha256:bb"}
    base = candidate_id(params, digests)
    assert candidate_id(params, digests) == base
    assert candidate_id({**params, "lora.r": 8}, digests) != base
    assert candidate_id(params, {**digests, "validation": "sha256:bc"}) != base
    assert candidate_id(params, digests, salt="code-v2") != base


def test_candidate_id_is_independent_of_key_order():
    params = params_from_spec(base_spec())
    digests = {"train": "a", "validation": "b"}
    assert candidate_id(dict(reversed(params.items())), dict(reversed(digests.items()))) == \
        candidate_id(params, digests)


def test_candidate_id_is_stable_across_processes_with_different_hash_seeds():
    code = ("from tests.support.tracking import approved_record, base_spec, with_changes;"
            "print(approved_record(with_changes(base_spec(), lora={'r': 8})).candidate_id)")
    ids = set()
    for seed in ("0", "1", "12345"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        out = subprocess.run([sys.executable, "-c", code], cwd=ROOT_DIR, env=env, capture_output=True,
                             text=True, check=True)
        ids.add(out.stdout.strip())
    assert ids == {approved_record(with_changes(base_spec(), lora={"r": 8})).candidate_id}
