"""The design card's top-level tasks/: tunegate.tasks.report_tasks's Prefect tasks, under the same names.

    from tasks.report_tasks import publish_report_task    # in a flow run from the repository's root

A thin shim on purpose, as flows/ is over tunegate.flows: the tasks live inside the tunegate
package, never in a top-level `tasks` package installed beside a user's own modules of that name.
"""
from tunegate.tasks.report_tasks import publish_report_task, publish_sweep_task

__all__ = ["publish_report_task", "publish_sweep_task"]
