"""Which Prefect API a flow command uses, decided before Prefect is imported (tunegate.local_api.start).

The sweep's own runs (tests/cli/test_sweep_experience.py, tests/cli/test_signals.py) use it end
to end; here, in fresh processes, what decides whether it is used: a server configured anywhere
Prefect reads settings from wins over it, and the environment is left as it was.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import psutil
import pytest

from tests.support.paths import ROOT

PROBE = ("import os\n"
         "from tunegate.local_api import adopt_or_stop, start_local_api\n"
         "api = start_local_api()\n"
         "started = api is not None and api.pid\n"
         "api = adopt_or_stop(api)\n"
         "from prefect.settings import PREFECT_API_SSL_CERT_FILE, PREFECT_API_URL\n"
         "print(bool(started), api is not None, PREFECT_API_URL.value(), os.environ.get('PREFECT_API_URL'), started,\n"
         "      PREFECT_API_SSL_CERT_FILE.value())\n")


def _probe(home: Path, **env: str) -> list[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_")}
    done = subprocess.run([sys.executable, "-c", PROBE], cwd=ROOT, capture_output=True, text=True, timeout=120,
                          env={**clean, "PYTHONPATH": str(ROOT), "PREFECT_HOME": str(home), **env})
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.split()


def test_a_server_named_in_the_prefect_profile_wins_over_the_local_api(tmp_path):
    (tmp_path / "profiles.toml").write_text('active = "team"\n[profiles.team]\n'
                                            'PREFECT_API_URL = "http://127.0.0.1:9/api"\n', encoding="utf-8")
    started, kept, url, env, pid, bundle = _probe(tmp_path, TUNEGATE_LOCAL_API_IDLE_S="600")
    assert started == "True" and kept == "False"  # the shared API, started speculatively, then stopped
    assert url == "http://127.0.0.1:9/api" and env == "None"
    assert not bundle.endswith("one-root.pem")  # the configured server is verified with Prefect's own bundle
    assert not psutil.pid_exists(int(pid)) or psutil.Process(int(pid)).status() == psutil.STATUS_ZOMBIE
    assert not (tmp_path / "tunegate" / "local-api.json").exists()  # nothing left for the next command


@pytest.mark.nightly  # a fresh process importing Prefect (~2 s); the one above runs in `make test`
def test_a_server_in_the_environment_starts_no_local_api(tmp_path):
    started, kept, url, *_ = _probe(tmp_path, PREFECT_API_URL="http://127.0.0.1:9/api")
    assert started == "False" and kept == "False" and url == "http://127.0.0.1:9/api"


def test_without_a_configured_server_prefect_uses_the_local_api_and_a_one_root_bundle(tmp_path):
    started, kept, url, env, _, bundle = _probe(tmp_path)  # TUNEGATE_LOCAL_API_IDLE_S=0 (tests/conftest.py)
    assert started == "True" and kept == "True" and url == env and url.startswith("http://127.0.0.1:")
    # plain http on this machine: Prefect's clients load one root, not certifi's bundle, for their TLS context
    assert bundle.endswith("one-root.pem") and Path(bundle).read_bytes().count(b"BEGIN CERTIFICATE") == 1


@pytest.mark.nightly  # a fresh process importing Prefect and starting a local API (~5 s)
def test_a_bundle_the_environment_names_is_what_prefect_uses_beside_the_local_api(tmp_path):
    mine = tmp_path / "corporate-ca.pem"
    *_, bundle = _probe(tmp_path, PREFECT_API_SSL_CERT_FILE=str(mine))
    assert bundle == str(mine)
