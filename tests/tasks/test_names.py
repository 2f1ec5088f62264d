"""Run names and artifact keys say what they gate, and fit Prefect's key rules."""
from __future__ import annotations

import hashlib
import re

from tests.support.paths import ROOT
from tunegate.tasks.names import candidate_artifact_key, report_artifact_key, run_name, slug

KEY = re.compile(r"^[a-z0-9-]+$")  # Prefect artifact keys: lowercase letters, digits and dashes


def test_a_run_name_is_the_flow_the_spec_and_a_digest_of_its_bytes():
    spec = ROOT / "examples" / "quickstart.yaml"
    digest = hashlib.sha256(spec.read_bytes()).hexdigest()[:8]
    assert run_name("preflight", str(spec)) == f"preflight-quickstart-{digest}"


def test_a_missing_spec_still_names_the_run_after_it():
    assert run_name("sweep", "no/such/My Spec.yaml") == "sweep-my-spec"


def test_keys_are_per_spec_file_and_valid_prefect_keys(tmp_path):
    a, b = tmp_path / "a" / "Quick_Start.v2.yaml", tmp_path / "b" / "Quick_Start.v2.yaml"
    keys = {report_artifact_key(a), report_artifact_key(b), candidate_artifact_key(a, "44136fa355b3")}
    assert len(keys) == 3 and all(KEY.match(k) for k in keys)
    assert report_artifact_key(a).startswith("tunegate-report-quick-start-v2-")


def test_slug_never_returns_an_empty_key():
    assert slug("___") == "spec" and slug("x" * 80) == "x" * 40
