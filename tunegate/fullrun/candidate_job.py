"""A sweep candidate's mini-run and short training in one forked child: one process per candidate.

    python: run_job("candidate", {"mini_run": {...}, "decision": PATH})   # in a child of the fork server

Issue 33 measured each candidate running two jobs, each a forked child that loaded the model,
tokenised and warmed torch up (its first steps, the first Trainer, the optimizer's first step)
before training. One process per candidate cut a 6-candidate sweep of the tiny model from 18.6 to
17.1 CPU s (a candidate 1.8 -> 1.5 s; benchmarks/sweep_overhead.py, 3 paired rounds). This child
runs the mini-run (`mini_run_job`: the same report, written the same way), prints MINI_RUN_DONE,
and waits for the sweep's decision, one JSON line through the FIFO args["decision"]
(`tunegate.fullrun.held_jobs` writes it once the candidate's merged report is read; a FIFO, so the
environment never reaches the disk): {"argv": null} ends it, {"argv": [...], "env": {...}} trains
there, as `python -m tunegate.fullrun.trainer ARGV` in a fresh child would.

What a fresh child would start the training with is put back first: the job's environment, torch's
intra-op threads (the mini-run sets its own), its RNGs (the trainer seeds them all), and the
memory marks: on CUDA the allocator's cache emptied and its peaks reset, so the training's measured
peak is its own; off CUDA the process's peak RSS restarts (`reset_peak_rss`). The trainer still
reads its spec, tokeniser and data itself; the base model it takes as the mini-run loaded it, its
LoRA layers taken off (`tunegate.training.kept_base`: one load per candidate, the same numbers as a
second load). What it no longer pays is a second process, a second warm-up and a second load.
"""
from __future__ import annotations

import json
import os
import sys

MINI_RUN_DONE = "mini-run report written; waiting for the sweep's decision"


def candidate_job(args: dict) -> int:
    """The mini-run, then (if the sweep says so) the short training, in this process; its exit code."""
    import torch

    from tunegate.fullrun.forked_jobs import forked_line, mini_run_job
    from tunegate.training import kept_base

    kept_base.allow()  # the mini-run's base, its LoRA taken off, is what the training loads
    threads = torch.get_num_threads()
    # Open before the sweep may write (it does once it reads MINI_RUN_DONE); read and write, so
    # opening does not wait for the writer and reading waits for the line, never for an EOF.
    channel = os.open(args["decision"], os.O_RDWR)
    code = mini_run_job(args["mini_run"])
    if code != 0:  # no report (a usage error): the sweep reads why from the output and decides nothing
        os.close(channel)
        return code
    print(MINI_RUN_DONE, flush=True)
    decision = _decision(channel)
    if decision.get("argv") is None:
        return code
    _as_fresh(decision.get("env") or {}, threads)
    print(forked_line(), flush=True)  # train.log begins as a forked trainer's does
    from tunegate.fullrun.trainer import main as train_main

    return train_main(decision["argv"])


def _decision(channel: int) -> dict:
    """The sweep's decision: the line it writes (a sweep that never decides has died, and this
    child with its fork server)."""
    data = b""
    while not data.endswith(b"\n"):
        data += os.read(channel, 1 << 16)
    os.close(channel)
    return json.loads(data)


def _as_fresh(env: dict[str, str], threads: int) -> None:
    """Put back what a fresh child of the fork server starts its training with."""
    import gc

    import torch

    from tunegate import progress

    progress.relay(None)  # the training's output is its log, read as a fresh trainer's is
    if env:
        os.environ.clear()
        os.environ.update(env)
    if torch.get_num_threads() != threads:
        torch.set_num_threads(threads)
    gc.collect()  # the mini-run's model, optimizer and batches, before either mark restarts
    if "torch.cuda" in sys.modules and torch.cuda.is_initialized():
        # The blocks the mini-run's allocator still caches go back to the device, so the training's
        # peak reserved (and the context read beside it) starts from what is live: nothing of the mini-run.
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
    reset_peak_rss()


def reset_peak_rss() -> None:
    """Off CUDA the training's peak is the process's peak RSS (`runtime.peak_memory`): the heap the
    mini-run freed goes back to the system and the kernel's high-water mark restarts from here
    (Linux: /proc/self/clear_refs 5). What the mini-run left resident stays counted: ~0.01 GiB on
    the tiny model (a 3-candidate sweep logged 0.517-0.521 GiB against 0.507-0.510 from a child of
    its own, 2026-12-06), beside the ~0.4 GiB of the training stack both count."""
    from tunegate.processes.freed_memory import give_back_freed

    give_back_freed()
    try:
        with open("/proc/self/clear_refs", "w", encoding="ascii") as refs:
            refs.write("5")
    except OSError:
        pass  # not glibc, not Linux: the peak may count the mini-run's
