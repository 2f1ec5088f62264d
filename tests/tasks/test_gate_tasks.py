"""The gate's Prefect tasks: the static stages cached on content, never on paths or times alone."""
from __future__ import annotations


def test_static_stages_are_cached_on_content_and_rerun_when_data_changes(prefect_api, workdir):
    from prefect import flow

    from tunegate.tasks.gate_tasks import parse_spec_task, static_gate_task

    @flow
    def twice(spec: str):
        parsed = parse_spec_task(spec)
        return [static_gate_task(parsed, return_state=True) for _ in range(2)]

    first, second = twice(str(workdir / "good.yaml"))
    assert second.name == "Cached"
    with open(workdir / "validation.jsonl", "a") as f:
        f.write('{"messages": [{"role": "user", "content": "new"}, {"role": "assistant", "content": "row"}]}\n')
    (third, _) = twice(str(workdir / "good.yaml"))
    assert third.name != "Cached"


def test_a_result_cached_by_other_tunegate_code_is_not_reused(prefect_api, workdir, monkeypatch):
    from prefect import flow

    from tunegate.tasks import gate_tasks
    from tunegate.tasks.gate_tasks import parse_spec_task, static_gate_task

    @flow
    def once(spec: str):
        return static_gate_task(parse_spec_task(spec), return_state=True)

    assert once(str(workdir / "good.yaml")).name != "Cached"
    assert once(str(workdir / "good.yaml")).name == "Cached"
    monkeypatch.setattr(gate_tasks, "code_digest", lambda: "another tunegate")  # an upgrade, a changed rule
    assert once(str(workdir / "good.yaml")).name != "Cached"


def test_the_code_digest_covers_the_package_and_is_stable():
    from tunegate.tasks.gate_tasks import code_digest

    first = code_digest()
    code_digest.cache_clear()
    assert code_digest() == first and len(first) == 64
