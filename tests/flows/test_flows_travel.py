"""Every flow can be sent to Dask and Ray workers.

With `sweep.task_runner: dask` or `ray`, Prefect sends the running flow with each task it submits
(the flow run's context), and cloudpickle copies a flow's function by value, with every module
global the function names. A global holding a thread lock (the fork server, the standby
trainers) made every Dask and Ray sweep fail before its first candidate ("Could not serialize
object of type LLGExpr"; Ray: the flow run's context "was found to be non-serializable").
"""
from __future__ import annotations

import cloudpickle
import pytest

from tunegate.flows.full_run import full_run
from tunegate.flows.mini_run import mini_run
from tunegate.flows.preflight import preflight
from tunegate.flows.sweep import sweep, sweep_candidates


@pytest.mark.parametrize("flow", [sweep_candidates, sweep, preflight, mini_run, full_run], ids=lambda f: f.name)
def test_a_flow_pickles_as_a_task_runner_sends_it(flow):
    copy = cloudpickle.loads(cloudpickle.dumps(flow))
    assert copy.name == flow.name
