"""A command that cannot run as asked says so in one line with the fix, before Prefect starts.

Measured before: `tunegate sweep quickstart.yaml` (no `sweep:` section) printed 69 lines with two
tracebacks, after 20 s of Prefect start-up, before the usage error.
"""
from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.paths import DATA, ROOT

FLOWS = DATA / "flows"


def tunegate(args: list[str], log: Path) -> tuple[subprocess.CompletedProcess, float]:
    start = time.perf_counter()
    run = subprocess.run([sys.executable, "-m", "tunegate", *args], cwd=ROOT, capture_output=True, text=True,
                         timeout=120, env={**_env(), "TUNEGATE_LOG_FILE": str(log)})
    return run, time.perf_counter() - start


def _env() -> dict[str, str]:
    import os

    return {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_")}


def _one_error_line(run: subprocess.CompletedProcess) -> str:
    lines = run.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("tunegate: error: "), run.stderr
    assert "Traceback" not in run.stdout + run.stderr
    return lines[0]


def test_sweep_of_a_spec_without_a_sweep_section_is_one_line_before_prefect_starts(tmp_path):
    log = tmp_path / "tunegate.log"
    run, seconds = tunegate(["sweep", "examples/quickstart.yaml"], log)
    assert run.returncode == 2 and run.stdout == ""
    line = _one_error_line(run)
    assert "has no 'sweep:' section" in line and "tunegate preflight examples/quickstart.yaml" in line
    assert not log.exists() or "Starting temporary server" not in log.read_text()
    assert seconds < 20  # Prefect's ephemeral API alone takes 10-20 s to start here


def test_a_grid_sweep_without_a_grid_names_the_key_to_set(tmp_path):
    run, _ = tunegate(["sweep", str(FLOWS / "three.yaml"), "--strategy", "grid"], tmp_path / "log")
    assert run.returncode == 2
    assert "sweep.strategy is 'grid' but the spec lists no candidates (set sweep.grid)" in _one_error_line(run)


@pytest.mark.parametrize("command", ["check", "preflight", "sweep", "launch", "estimate", "advise"])
def test_a_spec_that_does_not_exist_is_one_line(command, tmp_path):
    run, _ = tunegate([command, "no/such/spec.yaml"], tmp_path / "log")
    assert run.returncode == 2
    assert _one_error_line(run) == "tunegate: error: spec file not found: no/such/spec.yaml"


@pytest.mark.parametrize("command", ["preflight", "sweep", "launch", "estimate", "advise", "lint", "fingerprint"])
def test_a_missing_argument_is_argparse_usage_with_exit_2(command, tmp_path):
    run, _ = tunegate([command], tmp_path / "log")
    assert run.returncode == 2 and "the following arguments are required" in run.stderr
    assert "Traceback" not in run.stderr


def test_a_prefect_home_that_is_not_a_folder_is_one_line_naming_it_not_an_internal_error(tmp_path):
    # Before: "tunegate: internal error: RuntimeError: Prefect's local API exited with code 3 while
    # starting ... This is a bug in tunegate", after uvicorn's traceback on the terminal (exit 3).
    home = tmp_path / "prefect-home"
    home.write_text("a file, not a folder\n")
    run = subprocess.run([sys.executable, "-m", "tunegate", "preflight", "examples/quickstart.yaml"], cwd=ROOT,
                         capture_output=True, text=True, timeout=180,
                         env={**_env(), "PREFECT_HOME": str(home), "TUNEGATE_LOG_FILE": str(tmp_path / "log")})
    assert run.returncode == 2
    line = _one_error_line(run)
    assert "unable to open database file" in line and f"PREFECT_HOME ({home}) must be a folder" in line


@pytest.mark.parametrize(("cache", "args"), [
    ("a file", ["check", "examples/quickstart.yaml", "--mini-run"]),
    ("a folder under a file", ["check", "examples/quickstart.yaml", "--mini-run"]),
    ("a file", ["preflight", "examples/quickstart.yaml"]),  # said before the flow starts
    ("a file", ["sweep", str(FLOWS / "three.yaml")]),
])
def test_a_cache_that_cannot_be_a_folder_is_a_usage_error_not_a_verdict_on_the_model(cache, args, tmp_path):
    """Measured before: TUNEGATE_CACHE naming a file rejected the spec with TG508 'model.id cannot be
    loaded' and told the user to download the model: a verdict caused by this machine's setting."""
    (tmp_path / "afile").write_text("not a folder")
    root = tmp_path / "afile" if cache == "a file" else tmp_path / "afile" / "cache"
    start = time.perf_counter()
    run = subprocess.run([sys.executable, "-m", "tunegate", *args], cwd=ROOT, capture_output=True, text=True,
                         timeout=300,
                         env={**_env(), "TUNEGATE_CACHE": str(root), "TUNEGATE_LOG_FILE": str(tmp_path / "log")})
    assert run.returncode == 2, run.stdout + run.stderr
    line = _one_error_line(run)
    assert f"TUNEGATE_CACHE={root}" in line and "not a folder" in line
    assert "point TUNEGATE_CACHE at a folder" in line
    assert "TG508" not in run.stdout + run.stderr
    assert time.perf_counter() - start < 120
