"""The design card's top-level tasks/: tunegate.tasks.gate_tasks's Prefect tasks, under the same names.

    from tasks.gate_tasks import advisor_task    # in a flow run from the repository's root

A thin shim on purpose, as flows/ is over tunegate.flows: the tasks live inside the tunegate
package, never in a top-level `tasks` package installed beside a user's own modules of that name.
"""
from tunegate.tasks.gate_tasks import advisor_task, mini_run_task, parse_spec_task, static_gate_task

__all__ = ["advisor_task", "mini_run_task", "parse_spec_task", "static_gate_task"]
