"""The design card's top-level tasks/: tunegate.tasks.sweep_tasks's Prefect tasks, under the same names.

    from tasks.sweep_tasks import evaluate_candidate_task    # in a flow run from the repository's root

A thin shim on purpose, as flows/ is over tunegate.flows: the tasks live inside the tunegate
package, never in a top-level `tasks` package installed beside a user's own modules of that name.
"""
from tunegate.tasks.sweep_tasks import evaluate_candidate_task, propose_task, run_candidate_deployment_task

__all__ = ["evaluate_candidate_task", "propose_task", "run_candidate_deployment_task"]
