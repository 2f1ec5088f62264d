"""Where the mini-run's steady steps spend their time: torch.profiler's split by kind of work.

    profiler = StepProfiler(place)          # the mini-run's device
    with profiler.step(n):                  # steps 2 and 3 are recorded (step 1 is warm-up)
        ...one optimizer step...
    facts = profiler.split()                # ProfileFacts: matmul, attention, optimizer, data, other, idle

On a GPU the shares are of the profiled wall time spent in CUDA kernels of each kind, and idle
is the time no kernel ran; on the CPU they are of the CPU ops' own time, idle the Python and
framework overhead between ops. The device is recorded with the split, and a CPU split is never
mixed with GPU figures. Profiling is measurement, not a check: if the profiler fails the split is
simply missing (the mini-run's verdict never depends on it).
"""
from __future__ import annotations

import contextlib
import time
from collections import defaultdict
from collections.abc import Iterable, Iterator
from functools import lru_cache
from typing import Any

from tunegate.facts import ProfileFacts
from tunegate.training import runtime
from tunegate.training.device import RunPlace

DATA_RANGE, OPTIMIZER_RANGE = "tunegate.data", "tunegate.optimizer"
# Steps profiled after the warm-up step: enough for a steady split, few enough that the profiler's
# own cost (large for the tiny model's small CPU ops) stays a small part of the mini-run.
PROFILED_STEPS = 2
# Substrings of op and kernel names, by kind (PyTorch's aten ops; cuBLAS/CUTLASS and flash kernels;
# cuBLAS's Hopper GEMMs are named nvjet_*, e.g. nvjet_tst_128x256_64x4_2x1_v_bz_coopB_TNT, issue 31).
_MATMUL = ("aten::mm", "aten::addmm", "aten::bmm", "aten::matmul", "aten::linear", "aten::baddbmm",
           "gemm", "cutlass", "cublas", "sm80_xmma", "sm90_xmma", "wgmma", "nvjet")
_ATTENTION = ("scaled_dot_product", "flash", "efficient_attention", "fmha", "attention", "aten::_softmax")
_KINDS = ("matmul", "attention", "optimizer", "data", "other")
# The utility ops torch.profiler leaves out of its events (torch/autograd/profiler_util.py, _filter_name):
# left out here too, so their time stays their parent's own time, as in events().
_LEFT_OUT = frozenset({"[memory]", "[OutOfMemory]", "profiler::_record_function_enter",
                       "profiler::_record_function_enter_new", "profiler::_record_function_exit",
                       "aten::is_leaf", "aten::output_nr", "aten::_version"})


def kind_of(name: str, ranges: set[str]) -> str:
    """The kind of work one op or kernel does, from its name and the tunegate ranges it ran inside."""
    if OPTIMIZER_RANGE in ranges:
        return "optimizer"
    if DATA_RANGE in ranges:
        return "data"
    lowered = name.lower()
    if any(k in lowered for k in _MATMUL):
        return "matmul"
    return "attention" if any(k in lowered for k in _ATTENTION) else "other"


def _ranges(event: Any) -> set[str]:
    found, parent = set(), getattr(event, "cpu_parent", None)
    while parent is not None:
        if parent.name in (DATA_RANGE, OPTIMIZER_RANGE):
            found.add(parent.name)
        parent = getattr(parent, "cpu_parent", None)
    if event.name in (DATA_RANGE, OPTIMIZER_RANGE):
        found.add(event.name)
    return found


def _counted(name: str) -> bool:
    """Whether an op's time counts as work: tunegate's ranges and the profiler's step markers only
    hold other ops."""
    return name not in (DATA_RANGE, OPTIMIZER_RANGE) and not name.startswith("ProfilerStep")


def busy_us(events: list[Any], on_gpu: bool) -> dict[str, float]:
    """Microseconds per kind: the kernels each op launched on a GPU, each op's own time on a CPU."""
    totals = dict.fromkeys(_KINDS, 0.0)
    for event in events:
        if not _counted(event.name):
            continue
        kind = kind_of(event.name, _ranges(event))
        if on_gpu:
            for kernel in getattr(event, "kernels", []) or []:
                totals[kind_of(kernel.name, _ranges(event)) if kind == "other" else kind] += kernel.duration
        else:
            totals[kind] += event.self_cpu_time_total
    return totals


def cpu_busy_us(profiles: Iterable[Any]) -> dict[str, float]:
    """`busy_us(events, on_gpu=False)` of the profiles' events, from the profiler's raw records.

    `profile.events()` builds a FunctionEvent per op (~0.35 s for two steps of the tiny model, more
    than the steps took); this nests the same ops the way torch does (per thread, by start, a
    child inside its parent's time) and sums each op's own time by kind: the same totals. Each
    op's kind is looked up once per name and ranges (`_kind`): two steps of the tiny model hold
    ~6,000 ops of a few dozen names, and every job of a sweep splits them (23 -> 13 ms, 2026-12-07).
    """
    totals = dict.fromkeys(_KINDS, 0.0)
    for profile in profiles:
        threads: dict[int, list[tuple[int, int, str]]] = defaultdict(list)
        records = profile.profiler.kineto_results.events()
        if not records:
            continue
        hidden = getattr(type(records[0]), "is_hidden_event", None)  # not in every torch
        cpu = _cpu_device(records[0])
        for event in records:
            name = event.name()
            if (name in _LEFT_OUT or (hidden is not None and hidden(event)) or event.is_async()
                    or event.device_type() != cpu or event.start_thread_id() != event.end_thread_id()):
                continue  # not in events(), or in it with no own CPU time and never a parent
            threads[event.start_thread_id()].append((event.start_ns(), event.end_ns(), name))
        for ops in threads.values():
            ops.sort(key=lambda op: (op[0], -op[1]))  # stable: ties keep the profiler's order, as in torch
            _add_own_times(ops, totals)
    return totals


def _cpu_device(record: Any) -> Any:
    """The value a CPU op's `device_type()` has in this torch (an enum member; its name says CPU)."""
    kind = record.device_type()
    return kind if kind.name == "CPU" else type(kind).__members__["CPU"]


@lru_cache(maxsize=4096)
def _kind(name: str, ranges: frozenset[str]) -> str | None:
    """`kind_of` an op whose time counts as work (`_counted`), else None."""
    return kind_of(name, ranges) if _counted(name) else None


def _add_own_times(ops: list[tuple[int, int, str]], totals: dict[str, float]) -> None:
    """Each op's time less its children's, in microseconds, into its kind (one thread's ops, sorted)."""
    open_ops: list[list[Any]] = []  # [end, name, tunegate ranges it ran inside, its children's ns, start]

    def close(op: list[Any]) -> None:
        end, name, ranges, children, start = op
        kind = _kind(name, ranges)
        if kind is not None:
            totals[kind] += (end - start - children) / 1000

    for start, end, name in ops:
        while open_ops and (start >= open_ops[-1][0] or end > open_ops[-1][0]):  # not inside it
            close(open_ops.pop())
        ranges = open_ops[-1][2] if open_ops else frozenset()
        if open_ops:
            open_ops[-1][3] += end - start
        if name in (DATA_RANGE, OPTIMIZER_RANGE):
            ranges = ranges | {name}
        open_ops.append([end, name, ranges, 0, start])
    while open_ops:
        close(open_ops.pop())


def shares(totals: dict[str, float], wall_us: float) -> dict[str, float]:
    """Shares of wall time per kind, plus idle (the rest); scaled down if the kinds overlap."""
    busy = sum(totals.values())
    scale = min(1.0, wall_us / busy) if busy else 1.0
    out = {k: round(v * scale / wall_us, 4) for k, v in totals.items()} if wall_us else dict.fromkeys(totals, 0.0)
    out["idle"] = round(max(0.0, 1.0 - sum(out.values())), 4)
    return out


class StepProfiler:
    """torch.profiler over the mini-run's steps after the first; the split of their time."""

    def __init__(self, place: RunPlace, gpu_name: str | None = None):
        self.place, self.gpu_name = place, gpu_name
        self.profile: Any = None
        self.wall_s, self.steps, self.failed = 0.0, 0, ""

    @contextlib.contextmanager
    def step(self, number: int) -> Iterator[None]:
        """Profile this step unless it is the first (kernel selection and allocator warm-up) or the
        PROFILED_STEPS steps after it are already profiled."""
        if number == 1 or self.failed or self.steps >= PROFILED_STEPS:
            yield
            return
        import torch

        activities = [torch.profiler.ProfilerActivity.CPU]
        if self.place.device == "cuda":
            activities.append(torch.profiler.ProfilerActivity.CUDA)
        try:
            prof = torch.profiler.profile(activities=activities)
            prof.__enter__()
        except Exception as exc:  # noqa: BLE001  (a profiler that cannot start leaves no split)
            self.failed = f"{type(exc).__name__}: {exc}"
            yield
            return
        start = time.perf_counter()
        try:
            yield
        finally:
            if self.place.device == "cuda":
                torch.cuda.synchronize()
            self.wall_s += time.perf_counter() - start
            self.steps += 1
            prof.__exit__(None, None, None)
            self.profile = (self.profile or []) + [prof]

    def split(self) -> ProfileFacts | None:
        """The profiled steps' split, or None when nothing was profiled (one step, or a failure)."""
        if not self.profile or not self.wall_s:
            return None
        try:
            s = shares(self._busy_us(), self.wall_s * 1e6)
        except Exception:  # noqa: BLE001
            return None
        return ProfileFacts(device=self.place.device, gpu=self.gpu_name if self.place.device == "cuda" else None,
                            steps=self.steps, wall_s=round(self.wall_s, 4), **s,
                            peak_memory_bytes=_peak_memory(self.place.device))

    def _busy_us(self) -> dict[str, float]:
        """A GPU's kernels are found through events(); a CPU's ops need only their own times, from
        the raw records where this torch has them as torch 2.13 does."""
        if self.place.device != "cuda":
            try:
                return cpu_busy_us(self.profile)
            except (AttributeError, TypeError):  # another torch's records: its events() then
                pass
        return busy_us([e for p in self.profile for e in p.events()], self.place.device == "cuda")


def _peak_memory(device: str) -> int | None:
    """The CUDA allocator's high-water mark on a GPU, the process's peak RSS on a CPU (labelled by device)."""
    return runtime.peak_memory(device)["peak_memory_bytes"]


def data_range() -> Any:
    """The profiler range host-to-device copies of a batch run in."""
    import torch

    return torch.profiler.record_function(DATA_RANGE)


def optimizer_range() -> Any:
    """The profiler range gradient clipping and the optimizer step run in."""
    import torch

    return torch.profiler.record_function(OPTIMIZER_RANGE)
