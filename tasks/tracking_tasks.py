"""The design card's top-level tasks/: tunegate.tasks.tracking_tasks's Prefect tasks, under the same names.

    from tasks.tracking_tasks import chart_candidates_task    # in a flow run from the repository's root

A thin shim on purpose, as flows/ is over tunegate.flows: the tasks live inside the tunegate
package, never in a top-level `tasks` package installed beside a user's own modules of that name.
"""
from tunegate.tasks.tracking_tasks import (
    chart_candidates_task,
    claim_experiment_task,
    close_tracking_task,
    log_candidate_task,
    open_tracking_task,
)

__all__ = ["chart_candidates_task", "claim_experiment_task", "close_tracking_task", "log_candidate_task",
           "open_tracking_task"]
