"""How long the fork server takes to report a job's end: its loop alone, with jobs that end at once.

    python benchmarks/fork_server_reap.py --jobs 20 --against /work/wt-c8c

A sweep waits for each candidate's job to end (`tunegate.fullrun.forks.ForkedJob.wait`), which the
fork server reports once it has reaped the child. This starts `tunegate.fullrun.fork_server.serve`
on a socket pair, without the training stack, and asks it for `--jobs` jobs of no known kind, one
after the other: each child prints its first line and ends with exit 1 at once. For each it times
from the moment the job's output closes (the child is gone) to the server's `exit` reply. With
--against, the same from another checkout. Prints the median and the largest, and the load average.
"""
from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SERVE = ("import socket, sys\nfrom tunegate.fullrun import fork_server\n"
         "fork_server.serve(socket.socket(fileno=int(sys.argv[1])))\n")


def latencies(root: Path, jobs: int) -> list[float]:
    ours, theirs = socket.socketpair()
    server = subprocess.Popen([sys.executable, "-c", SERVE, str(theirs.fileno())], pass_fds=(theirs.fileno(),),
                              cwd=root, env={**os.environ, "PYTHONPATH": str(root)})  # cwd: its own tunegate first
    theirs.close()
    buffer = b""

    def reply() -> dict:
        nonlocal buffer
        while b"\n" not in buffer:
            buffer += ours.recv(1 << 16)
        line, buffer = buffer.split(b"\n", 1)
        return json.loads(line)

    found = []
    try:
        for job in range(jobs):
            read, write = os.pipe()
            request = {"job": str(job), "kind": "no-such-kind", "args": {}, "env": {}}
            socket.send_fds(ours, [json.dumps(request).encode() + b"\n"], [write])
            os.close(write)
            assert "pid" in reply()
            while os.read(read, 1 << 16):  # the job's output, until the child is gone
                pass
            gone = time.perf_counter()
            assert reply().get("exit") == 1
            found.append(time.perf_counter() - gone)
            os.close(read)
    finally:
        ours.close()
        server.wait(60)
    return found


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=20)
    ap.add_argument("--against", type=Path, help="another checkout, measured the same way")
    args = ap.parse_args()
    print(f"python {sys.version.split()[0]}, load average {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    for root in [ROOT, *([args.against.resolve()] if args.against else [])]:
        found = latencies(root, args.jobs)
        print(f"  {root}: the exit reported {statistics.median(found) * 1e3:.1f} ms after the job ended "
              f"(median of {len(found)}; largest {max(found) * 1e3:.1f} ms)")
    print(f"load average after: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
