"""prefect.yaml: every deployment loads its flow, its parameters fit the flow, its settings hold.

No server: these read prefect.yaml and import the entrypoints, as `prefect deploy` does.
"""
from __future__ import annotations

import asyncio
import json
import re
import subprocess
import sys
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
import yaml

from tests.support.paths import ROOT

PREFECT_YAML = ROOT / "prefect.yaml"
DEPLOYMENTS: list[dict[str, Any]] = yaml.safe_load(PREFECT_YAML.read_text(encoding="utf-8"))["deployments"]
BY_NAME = {d["name"]: d for d in DEPLOYMENTS}
NAMES = list(BY_NAME)
# The flow each deployment runs: `prefect deployment run <flow>/<deployment>` relies on these names.
FLOW_OF = {"preflight": "preflight", "nightly-sweep": "sweep", "mini-run": "mini-run", "full-run": "full-run",
           "sweep-candidate": "sweep-candidate"}
SPECS = sorted({p["spec_path"] for d in DEPLOYMENTS if "spec_path" in (p := d.get("parameters") or {})})
SECRET_WORDS = ("key", "token", "secret", "password")


def _flow(name: str):
    from prefect.flows import load_flow_from_entrypoint

    return load_flow_from_entrypoint(BY_NAME[name]["entrypoint"])


def _schema(name: str) -> dict[str, Any]:
    from prefect.utilities.callables import parameter_schema

    return parameter_schema(_flow(name)).model_dump_for_openapi()


def test_prefect_yaml_declares_the_five_deployments_on_the_cpu_and_gpu_pools():
    pools = {d["name"]: d["work_pool"]["name"] for d in DEPLOYMENTS}
    assert pools == {"preflight": "cpu", "nightly-sweep": "cpu", "mini-run": "gpu", "full-run": "gpu",
                     "sweep-candidate": "gpu"}
    assert all(d["work_pool"]["work_queue_name"] == "default" for d in DEPLOYMENTS)


@pytest.mark.parametrize("name", NAMES)
def test_entrypoint_loads_the_flow_the_deployment_is_named_for(name):
    assert _flow(name).name == FLOW_OF[name]


@pytest.mark.parametrize("name", NAMES)
def test_deployment_parameters_pass_the_schema_the_server_enforces(name):
    from prefect.utilities.schema_tools.validation import validate

    params = BY_NAME[name].get("parameters") or {}
    # The server checks run parameters against this schema (enforce_parameter_schema is on by default).
    assert validate(params, _schema(name), raise_on_error=True) == []
    assert set(_flow(name).validate_parameters(params)) >= set(params)


@pytest.mark.parametrize("name", NAMES)
def test_every_required_flow_parameter_has_a_value_in_the_deployment(name):
    # A scheduled run, or a bare `prefect deployment run`, passes only what the deployment holds.
    required = set(_schema(name).get("required", []))
    assert sorted(required - set(BY_NAME[name].get("parameters") or {})) == []


def test_gpu_deployments_run_one_at_a_time():
    gpu = {d["name"]: d.get("concurrency_limit") for d in DEPLOYMENTS if d["work_pool"]["name"] == "gpu"}
    assert gpu == {"mini-run": 1, "full-run": 1, "sweep-candidate": 1}


def test_nightly_sweep_fires_once_a_day_at_two_utc_and_is_the_only_scheduled_deployment():
    from prefect.server.schemas.schedules import CronSchedule

    scheduled = {d["name"]: d["schedules"] for d in DEPLOYMENTS if d.get("schedules")}
    assert list(scheduled) == ["nightly-sweep"]
    (entry,) = scheduled["nightly-sweep"]
    assert entry["active"] is True
    schedule = CronSchedule(cron=entry["cron"], timezone=entry["timezone"])  # raises on a bad cron or zone
    dates = asyncio.run(schedule.get_dates(n=3, start=datetime(2030, 1, 1, 12, tzinfo=timezone.utc)))
    assert [(d.hour, d.minute) for d in dates] == [(2, 0)] * 3
    assert [b - a for a, b in zip(dates, dates[1:])] == [timedelta(days=1)] * 2


@pytest.mark.parametrize("spec", SPECS)
def test_spec_a_deployment_names_exists_and_passes_the_static_gate(spec):
    assert (ROOT / spec).is_file()
    proc = subprocess.run([sys.executable, "-m", "tunegate", "check", spec, "--json"], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    report = json.loads(proc.stdout)
    assert report["gates_passed"] is True and report["not_run"] == {"mini-run": "not run"}  # static only
    assert {s["name"]: s["status"] for s in report["stages"]} == {
        "spec": "passed", "dataset": "passed", "overlap": "passed", "estimate": "passed"}


@pytest.mark.parametrize("name", NAMES)
def test_no_deployment_or_flow_parameter_looks_like_a_secret(name):
    # Prefect stores parameters in plain text: a key must come from the worker's environment.
    names = set(BY_NAME[name].get("parameters") or {}) | set(_schema(name)["properties"])
    assert [p for p in sorted(names) if any(w in p.lower() for w in SECRET_WORDS)] == []


def test_every_deployment_the_docs_tell_users_to_run_is_declared():
    declared = {f"{FLOW_OF[n]}/{n}" for n in NAMES}
    texts = [PREFECT_YAML, ROOT / "deployments" / "README.md", *sorted((ROOT / "flows").glob("*.py"))]
    named = {m for path in texts for m in re.findall(r"(?:deployment run|mini_run_deployment=)\s*([\w-]+/[\w-]+)",
                                                     path.read_text(encoding="utf-8"))}
    assert named, "no `prefect deployment run` line found: the scan is broken"
    assert sorted(named - declared) == []
