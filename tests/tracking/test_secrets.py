"""An API key, in the environment or pasted into the spec, never reaches the MLflow store or artifacts."""
from __future__ import annotations

from pathlib import Path

from tests.support.tracking import (
    DATA,
    EXPERIMENT,
    approved_record,
    base_spec,
    report,
    with_changes,
)
from tunegate.report import GateReport
from tunegate.spec.check import read_spec
from tunegate.tracking.candidate_log import log_candidate
from tunegate.tracking.record import record_from_report
from tunegate.tracking.redaction import MASK
from tunegate.tracking.runs import start_parent

CANARY_ENV = "sk-canary-env-7f3a9c2e51b04d8e"  # in the env var the spec names
CANARY_OPENAI = "sk-canary-openai-0c9d8e7f6a5b"  # in OPENAI_API_KEY
CANARY_PASTED = "sk-canary-pasted-b41e6f0a9d27c3"  # pasted into advisor.api_key_env by mistake


def _pasted_key_candidate(tmp_path: Path):
    """A spec with the key pasted where its variable NAME belongs, through the real spec stage."""
    text = (DATA / "spec.yaml").read_text().replace("TUNEGATE_TEST_ADVISOR_KEY", CANARY_PASTED)
    text = text.replace("train: train.jsonl", f"train: {DATA / 'train.jsonl'}")
    text = text.replace("validation: validation.jsonl", f"validation: {DATA / 'validation.jsonl'}")
    path = tmp_path / "input" / "pasted.yaml"  # outside the scanned store: the user's own file
    path.parent.mkdir()
    path.write_text(text)
    spec_result, _ = read_spec(path)
    assert "TG116" in spec_result.totals_by_code  # the gate rejects it, and says so without the value
    gate = GateReport.from_stages([spec_result], spec=str(path), fingerprints=report().fingerprints)
    spec = with_changes(base_spec(), advisor={"api_key_env": CANARY_PASTED}, lora={"r": 2})
    return record_from_report(gate, spec)


def _files_holding(root: Path, secret: str) -> list[str]:
    """Every file of the store folder (mlflow.db and any -wal/-journal, artifacts) holding `secret`."""
    needle = secret.encode()
    return [str(p) for p in root.rglob("*")
            if p.is_file() and "input" not in p.parts and needle in p.read_bytes()]


def test_no_canary_key_reaches_the_store_or_the_artifacts(client, store_uri, tmp_path, monkeypatch):
    monkeypatch.setenv("TUNEGATE_TEST_ADVISOR_KEY", CANARY_ENV)
    monkeypatch.setenv("OPENAI_API_KEY", CANARY_OPENAI)
    parent = start_parent(client, EXPERIMENT, "flow-secrets")
    # Upstream leaks that the tracking layer must still stop: a key inside the advice and a reason.
    leaky = approved_record(advice={"note": f"used key {CANARY_ENV}", CANARY_OPENAI: "as a key"})
    errored = approved_record(with_changes(base_spec(), lora={"r": 4}), verdict="error",
                              reason=f"advisor call failed: 401 for key {CANARY_OPENAI}")
    pasted = _pasted_key_candidate(tmp_path)
    assert CANARY_PASTED not in pasted.model_dump_json()  # the record is a Prefect parameter
    results = [log_candidate(client, parent, r) for r in (leaky, errored, pasted)]
    assert [r.status for r in results] == ["FINISHED", "FAILED", "FAILED"]
    advice = Path(client.download_artifacts(results[0].run_id, "advice.json", str(tmp_path / "dl")))
    assert MASK in advice.read_text()  # the leak was there, and was masked
    store_files = [p.name for p in tmp_path.rglob("*") if p.is_file()]
    assert "mlflow.db" in store_files and "report.json" in store_files
    for canary in (CANARY_ENV, CANARY_OPENAI, CANARY_PASTED):
        assert _files_holding(tmp_path, canary) == []


def test_params_never_include_the_advisor_section(client, monkeypatch):
    monkeypatch.setenv("TUNEGATE_TEST_ADVISOR_KEY", CANARY_ENV)
    parent = start_parent(client, EXPERIMENT, "flow-params")
    run = client.get_run(log_candidate(client, parent, approved_record()).run_id)
    assert not [k for k in run.data.params if k.startswith("advisor.")]
    assert CANARY_ENV not in str(run.data)


DB_PASSWORD = "pg-canary-3b7d1e9f0a"  # PGPASSWORD: how a team's database password reaches libpq
SERVER_PASSWORD = "mlflow-canary-c4a8e2f61d"  # MLFLOW_TRACKING_PASSWORD: a tracking server's basic auth


def test_no_tracking_credential_reaches_the_store_or_the_artifacts(client, tmp_path, monkeypatch):
    monkeypatch.setenv("PGPASSWORD", DB_PASSWORD)
    monkeypatch.setenv("MLFLOW_TRACKING_PASSWORD", SERVER_PASSWORD)
    parent = start_parent(client, EXPERIMENT, "flow-db-secrets")
    leaky = approved_record(verdict="error", reason=f"psycopg: password {DB_PASSWORD} / {SERVER_PASSWORD} refused")
    assert log_candidate(client, parent, leaky).status == "FAILED"
    for canary in (DB_PASSWORD, SERVER_PASSWORD):
        assert _files_holding(tmp_path, canary) == []


def test_a_password_in_the_tracking_uri_is_masked_in_messages():
    from tunegate.tracking.redaction import uri_password, uri_without_password

    uri = f"postgresql://team:{DB_PASSWORD}@db.internal:5432/mlflow"
    assert uri_password(uri) == DB_PASSWORD
    assert uri_without_password(uri) == f"postgresql://team:{MASK}@db.internal:5432/mlflow"
    assert uri_without_password("http://127.0.0.1:5000") == "http://127.0.0.1:5000"
