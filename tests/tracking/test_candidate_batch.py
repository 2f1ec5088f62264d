"""A candidate's params, metrics and tags reach the store in one request, with the same contents."""
from __future__ import annotations

from mlflow.entities import Metric, Param, RunTag

from tests.support.tracking import EXPERIMENT, approved_record
from tunegate.tracking.candidate_log import batches, log_candidate, metric_points, run_tags
from tunegate.tracking.runs import start_parent


class _CountingClient:
    """The real client, with its log_batch requests counted."""

    def __init__(self, client):
        self._client, self.requests = client, []

    def __getattr__(self, name):
        return getattr(self._client, name)

    def log_batch(self, run_id, **entities):
        self.requests.append({k: len(v) for k, v in entities.items()})
        return self._client.log_batch(run_id, **entities)


def test_a_candidate_is_logged_with_one_log_batch_holding_every_param_metric_and_tag(client):
    counting = _CountingClient(client)
    parent = start_parent(client, EXPERIMENT, "flow-1")
    record = approved_record(n_steps=5)
    result = log_candidate(counting, parent, record)
    assert counting.requests == [{"params": len(record.params), "metrics": len(metric_points(record)),
                                  "tags": len(run_tags(record))}]
    run = client.get_run(result.run_id)
    assert set(record.params) <= set(run.data.params) and set(run_tags(record)) <= set(run.data.tags)
    assert len(client.get_metric_history(result.run_id, "mini_run/loss")) == 5


def test_past_mlflows_limits_the_entities_split_over_the_fewest_requests_in_order():
    params = [Param(f"p{i}", "1") for i in range(150)]
    metrics = [Metric(f"m{i}", 1.0, 0, 0) for i in range(1900)]
    tags = [RunTag(f"t{i}", "x") for i in range(30)]
    chunks = batches(params, metrics, tags)
    assert [{k: len(v) for k, v in c.items()} for c in chunks] == [
        {"params": 100, "tags": 30, "metrics": 870}, {"params": 50, "tags": 0, "metrics": 950},
        {"params": 0, "tags": 0, "metrics": 80}]
    assert [m for c in chunks for m in c["metrics"]] == metrics and [p for c in chunks for p in c["params"]] == params
