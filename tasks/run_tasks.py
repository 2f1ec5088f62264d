"""The design card's top-level tasks/: tunegate.tasks.run_tasks's Prefect tasks, under the same names.

    from tasks.run_tasks import tag_flow_run_task    # in a flow run from the repository's root

A thin shim on purpose, as flows/ is over tunegate.flows: the tasks live inside the tunegate
package, never in a top-level `tasks` package installed beside a user's own modules of that name.
"""
from tunegate.tasks.run_tasks import tag_flow_run_task

__all__ = ["tag_flow_run_task"]
