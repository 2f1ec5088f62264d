"""MLflow starts without pandas and scipy, and everything tunegate logs still reaches the store.

Each case runs in a fresh interpreter: in the test process MLflow (and pandas) are long imported.
"""
from __future__ import annotations

import json
import subprocess
import sys
import threading

import pytest

from tests.support.paths import ROOT
from tunegate.processes.mlflow_import import NOT_FOR_TRACKING, _Refused

pytest.importorskip("pandas")  # with pandas absent there is nothing to leave out


def _fresh(script: str, *args: str) -> dict:
    done = subprocess.run([sys.executable, "-c", script, *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


STARTS = """
import json, sys
from tunegate.processes.mlflow_import import import_mlflow
import_mlflow()
loaded = sorted(m for m in ("mlflow", "pandas", "scipy") if m in sys.modules)
hdfs = sys.modules["mlflow.store.artifact.hdfs_artifact_repo"]  # pyarrow's file systems: not left out
import importlib.util
whole = hasattr(hdfs, "HadoopFileSystem") or importlib.util.find_spec("pyarrow") is None
import pandas  # afterwards it imports as usual
print(json.dumps({"loaded": loaded, "pandas_after": pandas.__name__, "hdfs": whole}))
"""


def test_mlflow_is_imported_without_pandas_or_scipy_which_import_as_usual_afterwards():
    found = _fresh(STARTS)
    assert found == {"loaded": ["mlflow"], "pandas_after": "pandas", "hdfs": True}


KEPT = """
import json, sys
import pandas
from tunegate.processes.mlflow_import import import_mlflow
import_mlflow()
import mlflow.models
print(json.dumps({"signature": hasattr(mlflow.models, "ModelSignature")}))
"""


def test_where_pandas_is_already_imported_mlflow_starts_with_it_as_usual():
    assert _fresh(KEPT) == {"signature": True}


LOGS = """
import json, sys
from pathlib import Path
from tunegate.processes.mlflow_import import import_mlflow
import_mlflow()
from tests.support.tracking import EXPERIMENT, approved_record
from tunegate.tracking.candidate_log import log_candidate
from tunegate.tracking.runs import start_parent
from tunegate.tracking.store import ensure_experiment, ensure_store, open_client, sqlite_uri
uri = sqlite_uri(Path(sys.argv[1]) / "mlflow.db")
ensure_store(uri)
client = open_client(uri)
ensure_experiment(client, EXPERIMENT, uri)
parent = start_parent(client, EXPERIMENT, "flow-1")
record = approved_record(n_steps=3)
result = log_candidate(client, parent, record)
run = client.get_run(result.run_id)
print(json.dumps({"loaded": sorted(m for m in ("pandas", "scipy") if m in sys.modules),
                  "losses": len(client.get_metric_history(result.run_id, "mini_run/loss")),
                  "params": set(record.params) <= set(run.data.params),
                  "datasets": sorted(i.dataset.name for i in run.inputs.dataset_inputs),
                  "artifacts": sorted(a.path for a in client.list_artifacts(result.run_id))}))
"""


def test_a_candidate_logs_its_metrics_params_datasets_and_artifacts_with_mlflow_so_started(tmp_path):
    found = _fresh(LOGS, str(tmp_path))
    assert found["loaded"] == [] and found["losses"] == 3 and found["params"]
    assert found["datasets"] and found["artifacts"]


NEEDS_ONE = """
import json, sys
from tunegate.processes import mlflow_import
mlflow_import.NOT_FOR_TRACKING = ("pandas", "scipy", "fastapi")  # MLflow 3.17 cannot start without FastAPI
mlflow_import.import_mlflow()
import mlflow.models
print(json.dumps({"pandas": "pandas" in sys.modules, "signature": hasattr(mlflow.models, "ModelSignature")}))
"""


def test_an_mlflow_that_cannot_start_without_a_refused_package_is_imported_whole_as_it_is():
    assert _fresh(NEEDS_ONE) == {"pandas": True, "signature": True}


def test_the_refusal_holds_for_the_importing_thread_alone():
    refused = _Refused(NOT_FOR_TRACKING, threading.get_ident())
    with pytest.raises(ModuleNotFoundError, match="left out while MLflow starts"):
        refused.find_spec("pandas.core.frame")
    assert refused.find_spec("numpy") is None
    elsewhere: list = []
    other = threading.Thread(target=lambda: elsewhere.append(refused.find_spec("pandas")))
    other.start()
    other.join()
    assert elsewhere == [None]
