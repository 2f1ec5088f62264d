"""A planning figure needs neither the data nor the run machine's packages: `tunegate estimate` on a
QLoRA config without bitsandbytes here, or on a config whose Hub dataset is not cached, gives memory
and tokens/s, and names what is missing (issue 32)."""
from __future__ import annotations

import json
import os
import subprocess
import sys

from tests.support.paths import DATA, ROOT
from tunegate.gate import check

AXOLOTL = DATA / "configs" / "axolotl"


def tunegate(*args: str, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tunegate", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=120, env={**os.environ, "HF_HUB_OFFLINE": "1", **env})


def test_a_qlora_config_is_estimated_on_a_machine_without_bitsandbytes():
    run = tunegate("estimate", str(AXOLOTL / "qlora-alpaca.yml"), "--json")
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout)["model"]["method"] == "qlora"


def test_a_config_whose_hub_dataset_is_not_cached_gets_memory_and_speed_and_no_hours(tmp_path):
    run = tunegate("estimate", str(AXOLOTL / "lora-hub-datasets.yml"), "--json", HF_HUB_CACHE=str(tmp_path))
    assert run.returncode == 0, run.stderr
    doc = json.loads(run.stdout)
    assert doc["memory"]["peak_gib"] > 0 and doc["throughput"]["tokens_per_s"] > 0
    assert (doc["tokens"]["source"], doc["hours"], doc["cost_usd"]) == ("none", None, None)
    assert "TG142" in run.stderr and "hours are unknown" in run.stderr
    text = tunegate("estimate", str(AXOLOTL / "lora-hub-datasets.yml"), HF_HUB_CACHE=str(tmp_path)).stdout
    assert "hours                      unknown" in text


def test_in_the_gate_the_estimate_runs_beside_the_missing_data_and_says_the_hours_are_unknown(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))
    report = check(AXOLOTL / "lora-hub-datasets.yml")
    assert [s.status for s in report.stages] == ["passed", "failed", "skipped", "passed"]
    [unknown] = [f for f in report.stage("estimate").findings if f.code == "TG425"]
    assert unknown.severity == "info" and "train and validation" in unknown.message
    assert "hours unknown" in report.stage("estimate").stats["summary"]


def test_a_later_stages_finding_names_the_imported_configs_own_key_and_line():
    [refused] = [f for f in check(AXOLOTL / "gemma2-sdp-attention.yml").findings if f.code == "TG417"]
    assert (refused.key, refused.line, refused.column) == ("sdp_attention", 28, 1)
    assert "training.attention" not in refused.message + refused.hint


def test_advise_without_the_data_judges_savings_on_nominal_tokens_and_says_so(tmp_path):
    run = tunegate("advise", str(AXOLOTL / "lora-hub-datasets.yml"), "--no-llm", "--json", HF_HUB_CACHE=str(tmp_path))
    assert run.returncode == 0, run.stderr
    advice = json.loads(run.stdout)["advice"]
    assert advice["hours_before"] > 0 and advice["peak_gib_before"] > 0
    assert "nominal 100,000,000 training tokens" in run.stderr and "do not plan with them" in run.stderr
