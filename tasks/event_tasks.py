"""The design card's top-level tasks/: tunegate.tasks.event_tasks's Prefect tasks, under the same names.

    from tasks.event_tasks import emit_preflight_event_task    # in a flow run from the repository's root

A thin shim on purpose, as flows/ is over tunegate.flows: the tasks live inside the tunegate
package, never in a top-level `tasks` package installed beside a user's own modules of that name.
"""
from tunegate.tasks.event_tasks import emit_preflight_event_task

__all__ = ["emit_preflight_event_task"]
