"""Two questions, answered apart: will the config run on the trainer it is written for, and can
`tunegate launch` run it? What the run machine needs is listed with where it must hold (issue 32)."""
from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys

from tests.support.paths import DATA, ROOT
from tunegate.gate import check

AXOLOTL = DATA / "configs" / "axolotl"
NO_BNB = importlib.util.find_spec("bitsandbytes") is None
SEVERITY = re.compile(r" (TG\d{3}) (error|warning|info): ")


def tunegate(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tunegate", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=120)


def test_the_shipped_lora_1b_passes_check_on_a_machine_without_bitsandbytes():
    run = tunegate("check", str(AXOLOTL / "lora-1b.yml"), "--json")
    report = json.loads(run.stdout)
    assert run.returncode == 0 and report["gates_passed"], run.stdout
    assert report["config_trainer"] == {"trainer": "axolotl", "passed": True, "reasons": []}
    assert report["tunegate_launch"]["passed"] is True
    [bnb] = [r for r in report["requirements"] if r["need"] == "bitsandbytes"]
    assert (bnb["where"], bnb["key"], bnb["met_here"]) == ("run machine", "optimizer", not NO_BNB)


def test_deepspeed_passes_for_axolotl_and_fails_for_tunegate_launch_with_the_reason():
    report = check(AXOLOTL / "lora-deepspeed-zero1.yml")
    assert report.gates_passed and report.config_trainer.passed
    assert report.tunegate_launch.passed is False and not report.approved_for_full_run
    [reason] = report.tunegate_launch.reasons
    assert ":34:1 (deepspeed) TG160 " in reason


def test_a_tunegate_specs_own_trainer_is_tunegate_launch():
    report = check(DATA / "flows" / "good.yaml")
    assert report.config_trainer.trainer == report.tunegate_launch.trainer == "tunegate launch"
    assert report.config_trainer.passed and report.tunegate_launch.passed


def test_the_terminal_shows_both_verdicts_and_the_run_machines_needs_errors_first():
    text = tunegate("check", str(AXOLOTL / "lora-dora.yml")).stdout
    assert "✓ axolotl: every check that ran passed" in text
    assert "✗ tunegate launch: not approved as checked (1 reason(s): TG147 above)" in text
    assert "the run machine needs" in text and "- flash-attn for the flash_attention_2 kernel" in text
    assert SEVERITY.findall(text.split("[2/")[0]) == [("TG147", "warning")]
    dropout = SEVERITY.findall(tunegate("check", str(AXOLOTL / "lora-1b-bad-dropout.yml")).stdout.split("[2/")[0])
    order = [s for _, s in dropout]  # TG103 on line 24 first, then the TG140 (and TG161) notes of no line
    assert order[0] == "error" and order == sorted(order, key=["error", "warning", "info"].index)


def test_launch_refuses_what_tunegate_cannot_run_saying_why():
    run = tunegate("launch", str(AXOLOTL / "lora-dora.yml"))
    assert run.returncode == 1
    assert "tunegate launch cannot run this config" in run.stderr and "(peft_use_dora) TG147" in run.stderr
    assert "train it with axolotl" in run.stderr


def test_the_mini_run_refuses_what_launch_cannot_run_and_only_tunegate_launch_fails(tmp_path):
    body = (AXOLOTL / "lora-deepspeed-zero1.yml").read_text()
    config = tmp_path / "tiny-deepspeed.yml"
    config.write_text(body.replace("base_model: meta-llama/Llama-3.1-8B", "base_model: tunegate/tiny-llama")
                      .replace("../data/", f"{DATA / 'configs' / 'data'}/"))
    report = check(config, mini_run=True)
    mini = report.stage("mini-run")
    assert [f.code for f in mini.findings if f.severity == "error"] == ["TG560"]
    assert "TG160" in mini.findings[0].message and not report.approved_for_full_run
    assert report.config_trainer.passed and not report.tunegate_launch.passed


def test_data_that_cannot_be_had_here_fails_the_gate_but_not_the_configs_own_trainer():
    # axolotl downloads teknium/GPT4-LLM-Cleaned and splits val_set_size off at random; this machine has
    # no Hub (TG142) and tunegate wants a frozen validation file (TG141): the gate did not check the data
    # and rejects, tunegate launch cannot run it, axolotl can.
    report = check(AXOLOTL / "lora-1b-upstream.yml")
    assert {f.code for f in report.findings if f.severity == "error"} == {"TG141", "TG142"}
    assert not report.gates_passed and report.config_trainer.passed and report.config_trainer.reasons == []
    assert not report.tunegate_launch.passed
    assert sorted(re.search(r" (TG\d{3}) ", r).group(1) for r in report.tunegate_launch.reasons) == ["TG141", "TG142"]
