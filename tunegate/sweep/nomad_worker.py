"""Runs PyNomad.optimize in its own process and asks its parent to evaluate every point.

Started by `tunegate.sweep.nomad_search.run_nomad` as `python nomad_worker.py` (by file path, so it
imports nothing from tunegate and works whatever copy of tunegate the parent runs). NOMAD is a C++
library that ends the process on some inputs (a segfault on an invalid start point, an abort on a
broken parameter); here that ends this worker, and the parent reports it as an error.

Protocol, one JSON document per line:
    parent -> worker (stdin):   {"x0": [...], "lower": [...], "upper": [...], "params": [...]}
    worker -> parent (fd 1):    {"points": [[x1, x2, ...], ...]}     a block to evaluate
    parent -> worker (stdin):   {"outputs": [[ok, "f c1 c2"], ...]}  one per point, same order
    worker -> parent (fd 1):    {"result": {...}}                    PyNomad.optimize's dict
NOMAD's own printing goes to stderr: file descriptor 1 carries only the protocol.
"""
from __future__ import annotations

import json
import os
import sys


def _channel():
    """The protocol's output: the original stdout; C-level and Python prints move to stderr."""
    out = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return out


def _ask(out, points: list[list[float]]) -> list[list]:
    out.write(json.dumps({"points": points}) + "\n")
    out.flush()
    line = sys.stdin.readline()
    if not line:  # the parent is gone: nobody will ever answer
        os._exit(3)
    return json.loads(line)["outputs"]


def _coords(x) -> list[float]:
    return [x.get_coord(i) for i in range(x.size())]


def main() -> None:
    out = _channel()
    problem = json.loads(sys.stdin.readline())
    import PyNomad

    def one(x) -> int:
        (ok, bbo), = _ask(out, [_coords(x)])
        if ok:
            x.setBBO(bbo.encode("utf-8"))
        return int(ok)

    def block(b) -> list[bool]:
        xs = [b.get_x(k) for k in range(b.size())]
        answers = _ask(out, [_coords(x) for x in xs])
        for x, (ok, bbo) in zip(xs, answers):
            if ok:
                x.setBBO(bbo.encode("utf-8"))
        return [bool(ok) for ok, _ in answers]

    bb = block if problem.get("block") else one
    result = PyNomad.optimize(bb, problem["x0"], problem["lower"], problem["upper"], problem["params"])
    out.write(json.dumps({"result": result}) + "\n")
    out.flush()


if __name__ == "__main__":
    main()
