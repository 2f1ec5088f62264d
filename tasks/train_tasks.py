"""The design card's top-level tasks/: tunegate.tasks.train_tasks's Prefect tasks, under the same names.

    from tasks.train_tasks import full_training_task    # in a flow run from the repository's root

A thin shim on purpose, as flows/ is over tunegate.flows: the tasks live inside the tunegate
package, never in a top-level `tasks` package installed beside a user's own modules of that name.
"""
from tunegate.tasks.train_tasks import full_training_task, verify_approval_task

__all__ = ["full_training_task", "verify_approval_task"]
