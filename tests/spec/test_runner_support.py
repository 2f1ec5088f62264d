"""The spec stage names a sweep runner this install cannot start, at its key, before any data stage.

TG167 is checked on a real install without Ray: a copy of this interpreter's site-packages without
ray and prefect-ray (links to every other entry), where `tunegate check` runs as a user runs it.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
from pathlib import Path

from tests.support.paths import DATA, ROOT
from tunegate.spec.check import read_spec

SPECS = DATA / "spec"
WITHOUT = ("ray", "prefect_ray", "prefect-ray")


def _errors(name: str) -> dict[str, object]:
    result, _ = read_spec(SPECS / name)
    return {f.code: f for f in result.findings if f.severity == "error"}


def _site_without_ray(folder: Path) -> Path:
    site = Path(sysconfig.get_paths()["purelib"])
    for entry in site.iterdir():
        if not entry.name.lower().replace("-", "_").startswith(("ray", "prefect_ray")) and entry.suffix != ".pth":
            (folder / entry.name).symlink_to(entry)
    return folder


def _check_without_ray(tmp_path: Path, spec: Path) -> subprocess.CompletedProcess:
    site = _site_without_ray(tmp_path / "site")
    boot = (f"import sys; sys.path[:0] = [{str(ROOT)!r}, {str(site)!r}]; "
            "from tunegate.cli.main import main; sys.exit(main(sys.argv[1:]))")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return subprocess.run([sys.executable, "-S", "-c", boot, "check", str(spec), "--json"], env=env,
                          capture_output=True, text=True, timeout=120)


def test_a_ray_sweep_without_ray_installed_is_rejected_at_sweep_task_runner(tmp_path):
    (tmp_path / "site").mkdir()
    done = _check_without_ray(tmp_path, SPECS / "ray_runner.yaml")
    assert done.returncode == 1, done.stderr[-2000:]
    found = [f for f in json.loads(done.stdout)["findings"] if f["code"] == "TG167"]
    assert [(f["key"], f["line"], f["severity"]) for f in found] == [("sweep.task_runner", 6, "error")]
    assert "prefect-ray and ray" in found[0]["message"] and "tunegate[ray]" in found[0]["hint"]


def test_the_same_spec_passes_the_rule_where_ray_is_installed():
    import importlib.util

    assert importlib.util.find_spec("prefect_ray"), "tunegate[all] installs tunegate[ray]"
    assert "TG167" not in _errors("ray_runner.yaml")


def test_a_gpu_per_candidate_on_the_threads_runner_is_rejected_at_its_key():
    found = _errors("gpu_on_threads.yaml")["TG168"]
    assert (found.key, found.line) == ("sweep.gpu_per_candidate", 7)
    assert "task_runner: dask or ray" in found.hint


def test_a_gpu_per_candidate_defaults_to_the_mini_runs_device():
    from tunegate.spec.model import Spec
    from tunegate.spec.runner_support import gpu_per_candidate

    def spec(device: str, **sweep) -> Spec:
        return Spec.model_validate({"data": {"train": "t.jsonl", "validation": "v.jsonl"}, "sweep": sweep,
                                    "gate": {"mini_run": {"device": device}}})

    assert [gpu_per_candidate(spec(d)) for d in ("cuda", "auto", "cpu")] == [True, False, False]
    assert gpu_per_candidate(spec("cpu", gpu_per_candidate=True))
    assert not gpu_per_candidate(spec("cuda", gpu_per_candidate=False))
