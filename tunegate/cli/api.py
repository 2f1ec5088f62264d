"""`tunegate api`: the shared local Prefect API of this Prefect home (tunegate.local_api.shared).

    tunegate api            # is one running: its URL, pid, and how long it has been up
    tunegate api stop       # stop it now, unless a command is using it

The flow commands (sweep, preflight, launch) start it when none runs and no server is configured;
it stops by itself TUNEGATE_LOCAL_API_IDLE_S (600) s after the last command.
"""
from __future__ import annotations

import argparse
import json
import sys
import time


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("api", help="show or stop the shared local Prefect API",
                       description="Show the local Prefect API the flow commands share on this Prefect home "
                                   "(PREFECT_HOME, ~/.prefect by default), or stop it. It stops by itself "
                                   "TUNEGATE_LOCAL_API_IDLE_S (default 600) seconds after the last command "
                                   "that used it; 0 gives each command an API of its own instead.")
    p.add_argument("action", nargs="?", choices=["status", "stop"], default="status",
                   help="status (the default): say whether one runs; stop: stop it unless a command uses it")
    p.add_argument("--json", action="store_true", help="write the answer as JSON")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """0 when the answer is what was asked (one runs, or it stopped or none ran); 1 when none runs
    (status) or a command is using it (stop)."""
    from tunegate.local_api.shared import running, stop_unused
    from tunegate.local_api.state import Place, age_s

    place = Place.of_environment()
    if args.action == "stop":
        record, stopped = stop_unused(place)
        state = "none" if record is None else "stopped" if stopped else "in use"
    else:
        record = running(place)
        state = "running" if record is not None else "none"
    answer = {"state": state, "home": str(place.folder.parent), "url": record and record.url,
              "pid": record and record.pid, "up_s": record and round(age_s(record))}
    if args.json:
        sys.stdout.write(json.dumps(answer, indent=2) + "\n")
    else:
        sys.stdout.write(_line(answer) + "\n")
    if args.action == "stop":
        return 1 if state == "in use" else 0
    return 0 if state == "running" else 1


def _line(answer: dict) -> str:
    where = f"on Prefect home {answer['home']}"
    if answer["state"] == "none":
        return f"no local Prefect API runs {where}"
    up = time.strftime("%H:%M:%S", time.gmtime(answer["up_s"]))
    said = {"running": "runs", "stopped": "stopped", "in use": "is in use by a running command, left running"}
    return f"the local Prefect API {answer['url']} (pid {answer['pid']}, up {up}) {said[answer['state']]} {where}"
