"""On a GPU the mini-run runs on the run machine: a package the run needs and this machine lacks is an
error there (TG561), never of the static stages; what tunegate's trainer cannot run is TG560 anywhere."""
from __future__ import annotations

from pathlib import Path

import pytest

from tunegate.minirun.stage import _launch_findings
from tunegate.report import FindingCollector
from tunegate.spec.model import Spec
from tunegate.stage import GateContext

BNB = {"need": "bitsandbytes", "kind": "package", "reason": "model.quantization 4bit", "key": "model.quantization",
       "where": "run machine", "met_here": False, "install": "pip install 'tunegate[qlora]'"}


def _findings(cuda: bool, monkeypatch, **ctx_fields) -> list:
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: cuda)  # a simulated GPU machine
    spec = Spec.model_validate({"data": {"train": "t.jsonl", "validation": "v.jsonl"}})
    ctx = GateContext(Path("cfg.yml"), spec, {}, 20, mini_run=True, **ctx_fields)
    out, stats = FindingCollector("mini-run"), {}
    _launch_findings(ctx, out, stats)
    assert stats["launch_only"] == ["TG560", "TG561"]
    return [(f.code, f.severity, f.key) for f in out.kept]


def test_a_missing_run_machine_package_is_an_error_where_the_mini_run_has_a_gpu(monkeypatch):
    assert _findings(True, monkeypatch, requirements=[BNB]) == [("TG561", "error", "model.quantization")]


def test_off_a_gpu_the_mini_run_is_not_the_run_machine_and_says_nothing_of_it(monkeypatch):
    assert _findings(False, monkeypatch, requirements=[BNB]) == []


@pytest.mark.parametrize("cuda", [True, False])
def test_what_tunegate_launch_cannot_run_is_refused_on_any_machine(cuda, monkeypatch):
    refused = ["cfg.yml:34:1 (deepspeed) TG160 deepspeed 'zero2' is not run by tunegate's trainer"]
    assert _findings(cuda, monkeypatch, launch_refusals=refused) == [("TG560", "error", None)]
