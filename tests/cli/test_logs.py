"""Library chatter goes to the log file (and to stderr only with --verbose), with credentials masked."""
from __future__ import annotations

import logging
import os
import subprocess
import sys
import warnings

import pytest

from tunegate.cli.logs import route_library_output


@pytest.fixture
def log_path(tmp_path, monkeypatch):
    path = tmp_path / "logs" / "tunegate.log"
    monkeypatch.setenv("TUNEGATE_LOG_FILE", str(path))
    yield path
    logging.captureWarnings(False)


def _flush() -> None:
    for handler in logging.getLogger().handlers:
        handler.flush()


def test_a_library_warning_lands_in_the_log_file_not_on_stderr(log_path, capsys):
    route_library_output(verbose=False)
    with warnings.catch_warnings():
        warnings.simplefilter("always")
        warnings.warn("`torch_dtype` is deprecated! Use `dtype` instead!", FutureWarning, stacklevel=1)
    logging.getLogger("mlflow.store.db.utils").info("Creating initial MLflow database tables...")
    _flush()
    assert capsys.readouterr().err == ""
    text = log_path.read_text()
    assert "FutureWarning: `torch_dtype` is deprecated!" in text and "Creating initial MLflow database tables" in text


def test_verbose_also_shows_them_on_stderr(log_path, capsys):
    route_library_output(verbose=True)
    logging.getLogger("prefect").info("Starting temporary server on http://127.0.0.1:8530")
    assert "Starting temporary server" in capsys.readouterr().err


def test_credential_values_from_the_environment_are_masked_in_the_log(log_path, monkeypatch):
    monkeypatch.setenv("SOME_PROVIDER_API_KEY", "sk-canary-logfile-0123456789")
    route_library_output(verbose=False)
    logging.getLogger("openai").warning("request failed with key %s", "sk-canary-logfile-0123456789")
    _flush()
    text = log_path.read_text()
    assert "sk-canary-logfile" not in text and "request failed with key [REDACTED]" in text


def test_nothing_is_written_when_nothing_is_logged(log_path):
    route_library_output(verbose=False)
    _flush()
    assert not log_path.exists()  # the file opens on the first record, so a clean `check` leaves none


def test_a_second_routing_captures_warnings_again_after_they_were_swapped(log_path):
    route_library_output(verbose=False)  # an earlier main() in the same process
    with warnings.catch_warnings(record=True) as displaced:  # swaps showwarning, as pytest does per test
        route_library_output(verbose=False)
        warnings.simplefilter("always")
        warnings.warn("canary FutureWarning", FutureWarning, stacklevel=1)
    _flush()
    assert displaced == [] and "FutureWarning: canary FutureWarning" in log_path.read_text()


def test_torch_profiler_lines_stay_off_stderr_unless_verbose(log_path, monkeypatch, tmp_path):
    """Kineto prints `USDT: ... profiler_start` from C++ past logging; routing sets its level before torch loads."""
    import os
    import subprocess
    import sys

    monkeypatch.delenv("KINETO_LOG_LEVEL", raising=False)
    probe = ("import sys\nfrom tunegate.cli.logs import route_library_output\n"
             "route_library_output(verbose=sys.argv[1] == 'verbose')\n"
             "import torch\nfrom torch.profiler import profile, ProfilerActivity\n"
             "with profile(activities=[ProfilerActivity.CPU]):\n    torch.ones(3) * 2\n")
    runs = {mode: subprocess.run([sys.executable, "-c", probe, mode], capture_output=True, text=True, timeout=120,
                                 env={**os.environ, "TUNEGATE_LOG_FILE": str(tmp_path / "log")})
            for mode in ("quiet", "verbose")}
    assert "profiler_start" not in runs["quiet"].stderr
    assert "profiler_start" in runs["verbose"].stderr  # the probe does reach the profiler's output


def test_routing_loads_no_tracking_code_until_a_record_needs_masking(tmp_path):
    # The masking Redactor lives in the tracking package (~50 ms of imports): a check that logs
    # nothing must not pay for it, and a record logged later is still masked.
    import subprocess
    import sys

    from tests.support.paths import ROOT

    code = ("import logging, sys\nfrom tunegate.cli.logs import route_library_output\n"
            "route_library_output(verbose=False)\nbefore = 'tunegate.tracking' in sys.modules\n"
            "logging.getLogger('openai').warning('key %s', 'sk-canary-lazy-0123456789')\n"
            "print(before, 'tunegate.tracking' in sys.modules)")
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "SOME_API_KEY": "sk-canary-lazy-0123456789",
           "TUNEGATE_LOG_FILE": str(tmp_path / "t.log"), "PYTHONPATH": str(ROOT)}
    run = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True,
                         timeout=60, check=True)
    assert run.stdout.split() == ["False", "True"]
    text = (tmp_path / "t.log").read_text()
    assert "sk-canary-lazy" not in text and "key [REDACTED]" in text


def test_an_mlflow_imported_before_the_routing_still_logs_to_the_file_only(tmp_path):
    # A caller (a notebook, a test module) that imported MLflow first leaves MLflow's own stderr handler.
    path = tmp_path / "tunegate.log"
    code = ("import logging, mlflow; from tunegate.cli.logs import route_library_output; "
            "route_library_output(verbose=False); "
            "logging.getLogger('mlflow.store.db.utils').warning('Creating initial MLflow database tables...')")
    env = {**os.environ, "TUNEGATE_LOG_FILE": str(path)}
    env.pop("MLFLOW_CONFIGURE_LOGGING", None)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "Creating initial MLflow" not in done.stderr
    assert "Creating initial MLflow database tables" in path.read_text()


def test_routing_loads_no_file_handler_code_until_a_record_is_written(tmp_path):
    # logging.handlers imports socket, pickle and queue (~5-8 ms of a rejection that logs nothing).
    from tests.support.paths import ROOT

    code = ("import logging, sys\nfrom tunegate.cli.logs import route_library_output\n"
            "route_library_output(verbose=False)\nbefore = 'logging.handlers' in sys.modules\n"
            "logging.getLogger('prefect').warning('a first record')\n"
            "print(before, 'logging.handlers' in sys.modules)")
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "TUNEGATE_LOG_FILE": str(tmp_path / "logs" / "t.log"),
           "PYTHONPATH": str(ROOT)}
    run = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True,
                         timeout=60, check=True)
    assert run.stdout.split() == ["False", "True"]
    assert "WARNING prefect: a first record" in (tmp_path / "logs" / "t.log").read_text()


def test_the_log_file_still_rotates_at_its_size_cap_keeping_two_old_files(log_path, monkeypatch):
    from tunegate.cli import logs

    monkeypatch.setattr(logs, "MAX_BYTES", 2000)
    route_library_output(verbose=False)
    for n in range(200):
        logging.getLogger("mlflow").warning("chatter line %d", n)
    _flush()
    names = sorted(p.name for p in log_path.parent.iterdir())
    assert names == ["tunegate.log", "tunegate.log.1", "tunegate.log.2"]
    assert all(p.stat().st_size <= 2000 for p in log_path.parent.iterdir())
    assert "chatter line 199" in log_path.read_text()
