"""Progress of long steps, on stderr, for a person at a terminal; nothing anywhere else.

    from tunegate import progress

    with progress.step("reading train.jsonl", total=size, unit="bytes", poll=reader.bytes_read):
        ...                                   # the bar follows poll() ten times a second
    with progress.step("mini-run", total=steps, unit="steps"):
        progress.note("step 3/4 loss 6.6396", advance=1)   # the innermost step of this thread

Off unless the CLI turns it on (`progress.enable(sys.stderr)`), which it does only when stderr is
a terminal and `--quiet` was not given: stdout stays the report alone (`--json` is one JSON
document), and a CI log or a pipe never gets carriage returns. A step shows only once it has
run for `DELAY_S` (a fast `tunegate check` prints its report and nothing else) and disappears
when it ends. Off, a step costs one attribute check: the data stages call it in their loops.
A child process the gate reads the output of (a forked mini-run) relays its notes as marked
lines (`relay`), which the gate shows as its own (`relayed`).
"""
from __future__ import annotations

from tunegate.front_door import front_door

# Each name's module, imported on first use (tunegate.front_door).
_HOME = dict.fromkeys(["DELAY_S", "RELAYED", "Step", "disable", "drawer_threads", "enable", "enabled", "held_for_fork",
                       "note", "relay", "relayed", "step"], "tunegate.progress.board")

__all__ = ["DELAY_S", "RELAYED", "Step", "disable", "drawer_threads", "enable", "enabled", "held_for_fork", "note",
           "relay", "relayed", "step"]
__getattr__ = front_door(__name__, _HOME)
