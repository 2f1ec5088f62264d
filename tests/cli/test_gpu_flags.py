"""Which GPU: `--gpu NAME` and `--gpus N` on check, estimate and advise set it for any spec or config,
validated against the catalog; a config that names none gets a finding saying what was assumed."""
from __future__ import annotations

import json
import os
import subprocess
import sys

from tests.support.paths import DATA, ROOT
from tunegate.gate import check
from tunegate.spec.check import parse_spec

AXOLOTL, TRL = DATA / "configs" / "axolotl", DATA / "configs" / "trl"


def tunegate(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tunegate", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=120, env={**os.environ, "HF_HUB_OFFLINE": "1"})


def test_a_config_that_names_no_gpu_says_which_the_estimate_assumed():
    [assumed] = [f for f in check(AXOLOTL / "qlora-alpaca.yml").findings if f.code == "TG426"]
    assert assumed.severity == "info" and "assumes 1 x A100-80GB" in assumed.message and "--gpu" in assumed.hint


def test_gpu_and_gpus_set_the_hardware_of_a_config_and_the_assumption_goes():
    run = tunegate("check", str(TRL / "sft.yaml"), "--gpu", "L4", "--gpus", "2", "--json")
    report = json.loads(run.stdout)
    assert report["facts"]["estimate"]["hardware"] == {"gpu": "L4", "count": 2}
    assert "TG426" not in {f["code"] for f in report["findings"]}
    assert report["stages"][0]["stats"]["hardware_from_flags"] == {"gpu": "L4", "count": 2}


def test_the_gpu_name_is_matched_as_the_catalog_matches_it_and_an_unknown_one_is_a_usage_error():
    estimate = json.loads(tunegate("estimate", str(AXOLOTL / "qlora-alpaca.yml"), "--gpu", "h100-80gb", "--json").stdout)
    assert estimate["hardware"]["gpu"] == "H100-SXM"  # the catalog's name for it
    run = tunegate("estimate", str(AXOLOTL / "qlora-alpaca.yml"), "--gpu", "X9000")
    assert run.returncode == 2 and "tunegate gpus" in run.stderr


def test_bf16_auto_on_a_gpu_without_bf16_is_fp16_as_axolotl_reads_it():
    parsed = parse_spec(AXOLOTL / "qlora-alpaca.yml", hardware={"gpu": "T4"})
    assert parsed.spec.training.precision == "fp16" and parsed.spec.hardware.gpu == "T4"
    assert "TG110" not in {f.code for f in parsed.result.findings}


def test_a_spec_keeps_its_own_gpu_unless_the_flag_replaces_it():
    spec = DATA / "flows" / "good.yaml"
    assert parse_spec(spec).spec.hardware.gpu == "A100-80GB"
    assert parse_spec(spec, hardware={"gpu": "L4", "count": 4}).spec.hardware.model_dump(
        include={"gpu", "count"}) == {"gpu": "L4", "count": 4}
    [no_bf16] = [f for f in parse_spec(spec, hardware={"gpu": "T4"}).result.findings if f.code == "TG110"]
    assert no_bf16.severity == "error"  # the spec says bf16 itself: judged on the GPU the flag names


def test_advise_takes_the_gpu_flags_too():
    run = tunegate("advise", str(AXOLOTL / "qlora-alpaca.yml"), "--no-llm", "--gpu", "A10G", "--json")
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout)["advice"]["peak_gib_before"] > 0
