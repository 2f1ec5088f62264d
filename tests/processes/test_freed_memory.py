"""`give_back_freed` returns the heap's free pages to the system: what a phase freed in the middle of
the heap stops counting in the process's RSS."""
from __future__ import annotations

import platform
import subprocess
import sys
import textwrap

import pytest

from tests.support.paths import ROOT

glibc = pytest.mark.skipif(not sys.platform.startswith("linux") or platform.libc_ver()[0] != "glibc",
                           reason="glibc's malloc_trim")

# 400 blocks of 100 KB (below glibc's mmap threshold: on the heap), one more kept above them, so the
# freed blocks lie below a live one and glibc keeps them; a fresh interpreter, so no earlier test's
# allocations decide where they go. Prints the resident anonymous memory (KB) after the free and
# after give_back_freed.
FREE_THEN_GIVE_BACK = textwrap.dedent("""
    from tunegate.processes.freed_memory import give_back_freed

    def anon():
        for line in open("/proc/self/status"):
            if line.startswith("RssAnon:"):
                return int(line.split()[1])

    blocks = [bytearray(100_000) for _ in range(400)]
    for block in blocks:
        block[::4096] = b"x" * len(block[::4096])  # every page touched: resident
    pin = bytearray(100_000)
    del blocks
    freed = anon()
    give_back_freed()
    print(freed, anon())
""")


@glibc
def test_memory_freed_below_a_live_block_leaves_the_process_once_given_back():
    done = subprocess.run([sys.executable, "-c", FREE_THEN_GIVE_BACK], capture_output=True, text=True, cwd=ROOT,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    freed, given_back = (int(kb) for kb in done.stdout.split())
    assert freed - given_back > 30_000  # of the 40 MB freed, over 30 MB no longer resident


def test_giving_back_answers_whether_the_c_library_could():
    from tunegate.processes.freed_memory import give_back_freed

    assert give_back_freed() is (sys.platform.startswith("linux") and platform.libc_ver()[0] == "glibc")


# Blocks of 0.2 to 9 MB allocated in a fixed random order, the last three kept alive, as a training
# step's activations come and go; prints the minor page faults the loop took. A fresh interpreter
# each run: the setting lasts as long as the process.
ALLOCATE_AND_FREE = textwrap.dedent("""
    import random, resource, sys
    from tunegate.processes.freed_memory import keep_freed_blocks

    if sys.argv[1] == "keep":
        assert keep_freed_blocks()
    random.seed(0)
    sizes = [random.choice([200, 600, 1500, 3000, 9000]) << 10 for _ in range(400)]
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    held = []
    for size in sizes:
        held.append(bytearray(size))
        if len(held) > 3:
            held.pop(0)
    print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
""")


@glibc
def test_freed_blocks_kept_serve_the_next_allocations_without_fresh_pages():
    faults = {}
    for how in ("default", "keep"):
        done = subprocess.run([sys.executable, "-c", ALLOCATE_AND_FREE, how], capture_output=True, text=True,
                              cwd=ROOT, timeout=60)
        assert done.returncode == 0, done.stderr
        faults[how] = int(done.stdout)
    assert faults["keep"] * 4 < faults["default"]  # measured: 8,825 against 105,561


def test_keeping_freed_blocks_answers_whether_the_c_library_took_it():
    # in a process of its own: the setting would last for every later test of this one
    done = subprocess.run([sys.executable, "-c", "from tunegate.processes.freed_memory import keep_freed_blocks\n"
                           "print(keep_freed_blocks())"], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == str(sys.platform.startswith("linux") and platform.libc_ver()[0] == "glibc")
