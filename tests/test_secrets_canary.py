"""With a canary API key in the environment, it reaches the advisor's Authorization header and nowhere else.

A user's whole path runs as they run it, each step its own process (`python -m tunegate preflight`,
`sweep`, `launch`), Prefect in ephemeral mode on a private home, every logger at DEBUG (Prefect's,
the root logger's, openai's own OPENAI_LOG) and the libraries' records also shipped to Prefect's
database. The advisor is ON and talks to a real OpenAI-compatible server on 127.0.0.1, so the key
is really used. Afterwards every byte the run left behind is searched: the MLflow store and its
artifacts, Prefect's database (with -wal/-shm) and result storage, tunegate's reports and
candidate specs, the full run's output folder, and the captured stdout/stderr.
"""
from __future__ import annotations

import json
import re
import shutil
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.support.advisor_server import AdvisorServer, Reply
from tests.support.cli_flow import cli_env, run_cli
from tests.support.paths import DATA

pytestmark = pytest.mark.slow

SECRETS_DATA = DATA / "secrets"
KEY_ENV = "TUNEGATE_CANARY_ADVISOR_KEY"  # the spec's advisor.api_key_env
KEY = "sk-canary-advisor-3c7e91d0f4a2b85e"
OPENAI_KEY = "sk-canary-openai-5b0d2e8f71c4a96d"
DATA_CANARY = "CANARY-DATASET-8d41c0e7b2"  # in the first record of train.jsonl
ADVICE = {"summary": "Compile the model; the rest of the configuration fits the hardware.",
          "suggestions": [{"setting": "training.compile", "current": False, "proposed": True,
                           "rationale": "Fuses elementwise kernels.", "expected_time_saving": 0.1,
                           "risks": "a slower first step", "monitor": "step time"}]}
# Every logger at DEBUG, and the libraries' records also sent to Prefect's log table.
DEBUG_LOGGING = {"PREFECT_LOGGING_LEVEL": "DEBUG", "PREFECT_LOGGING_ROOT_LEVEL": "DEBUG",
                 "PREFECT_LOGGING_EXTRA_LOGGERS": "tunegate,openai,httpx,mlflow", "OPENAI_LOG": "debug"}
STEPS = {"preflight": ["preflight", "{spec}", "--json"], "sweep": ["sweep", "{spec}", "--json"],
         "launch": ["launch", "{spec}"]}


@dataclass
class UserPath:
    root: Path  # holds work/ (spec, data, everything tunegate writes), prefect-home/, logs/
    exit_codes: dict[str, int]
    requests: list[dict[str, Any]]  # what the advisor server received

    def text(self, relative: str) -> str:
        return (self.root / relative).read_text()


def _files_holding(root: Path, needle: str) -> list[str]:
    data = needle.encode()
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file() and data in p.read_bytes())


@pytest.fixture(scope="module")
def user_path(tiny_cache, tmp_path_factory: pytest.TempPathFactory) -> UserPath:
    """preflight (advisor on), sweep, launch: each as its own CLI process, with the canary keys set."""
    root = tmp_path_factory.mktemp("secrets")
    work, logs = root / "work", root / "logs"
    shutil.copytree(SECRETS_DATA, work)
    logs.mkdir()
    env = cli_env(root / "prefect-home", **{KEY_ENV: KEY, "OPENAI_API_KEY": OPENAI_KEY}, **DEBUG_LOGGING)
    spec = work / "spec.yaml"
    with AdvisorServer([Reply(content=json.dumps(ADVICE))]) as server:
        spec.write_text(spec.read_text().replace("http://127.0.0.1:9/v1", server.base_url))
        codes = {name: run_cli([a.format(spec=spec) for a in args], env, logs / f"{name}.out", logs / f"{name}.err")
                 for name, args in STEPS.items()}
    return UserPath(root, codes, server.requests)


def test_the_whole_path_runs_and_the_advisor_answer_is_used(user_path):
    assert user_path.exit_codes == {"preflight": 0, "sweep": 0, "launch": 0}, user_path.exit_codes
    report = json.loads(user_path.text("logs/preflight.out"))
    assert report["facts"]["advice"]["source"] == "rules+llm"


def test_the_key_travels_only_in_the_authorization_header(user_path):
    (request,) = user_path.requests
    headers = {k.lower(): v for k, v in request["headers"].items()}
    assert headers["authorization"] == f"Bearer {KEY}"
    assert KEY not in request["body"] and OPENAI_KEY not in request["body"]


def test_no_dataset_content_or_path_reaches_the_advisor(user_path):
    (request,) = user_path.requests
    for private in (DATA_CANARY, "train.jsonl", "validation.jsonl", str(user_path.root)):
        assert private not in request["body"]


def test_every_place_the_scan_covers_was_written(user_path):
    root = user_path.root
    for expected in ("work/mlflow.db", "work/.tunegate/reports/spec.json", "work/out/full/adapter/COMPLETE",
                     "work/out/full/train_result.json", "prefect-home/prefect.db", "logs/sweep.out"):
        assert (root / expected).is_file(), expected
    for pattern in ("work/mlartifacts/**/advice.json", "work/mlartifacts/**/report.json",
                    "work/.tunegate/candidates/spec-*.yaml", "prefect-home/storage/*"):
        assert list(root.glob(pattern)), pattern
    with sqlite3.connect(f"file:{root / 'prefect-home' / 'prefect.db'}?mode=ro", uri=True) as conn:
        (debug_rows,), = conn.execute("SELECT count(*) FROM log WHERE level <= 10")
    assert debug_rows > 0  # DEBUG records reached Prefect's log table
    # openai logged at DEBUG, into the library log file (stderr shows only our output without --verbose)
    assert re.search(r"DEBUG openai", user_path.text("prefect-home/tunegate.log"))
    # The scan finds what is there: the dataset canary, in the user's own data file only.
    assert _files_holding(root, DATA_CANARY) == ["work/train.jsonl"]


@pytest.mark.parametrize("key", [KEY, OPENAI_KEY], ids=["spec-named-key", "OPENAI_API_KEY"])
def test_the_key_is_written_nowhere(user_path, key):
    # The random tail alone is searched for, so a key cut short is caught too.
    assert _files_holding(user_path.root, key[-16:]) == []
