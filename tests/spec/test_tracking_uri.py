"""tracking.mlflow_uri names a team's server or database; its password belongs in the environment."""
from __future__ import annotations

from tests.support.paths import DATA
from tunegate.spec.check import read_spec

SPECS = DATA / "spec"


def test_a_password_in_the_tracking_uri_is_rejected_at_its_key_without_echoing_it():
    result, _ = read_spec(SPECS / "tracking_password.yaml")
    found = [f for f in result.findings if f.code == "TG165"]
    assert [(f.severity, f.key, f.line) for f in found] == [("error", "tracking.mlflow_uri", 7)]
    assert "PGPASSWORD" in found[0].hint
    assert "Tr0ub4dor-team-db" not in result.model_dump_json()


def test_a_tracking_uri_without_a_password_passes():
    result, spec = read_spec(SPECS / "tracking_team.yaml")
    assert "TG165" not in {f.code for f in result.findings}
    assert spec.tracking.mlflow_uri == "postgresql://mlflow@db.internal:5432/mlflow"
