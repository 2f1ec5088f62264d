"""A static command's process ends after its exit handlers, without the interpreter's teardown."""
from __future__ import annotations

import subprocess
import sys
import textwrap

from tests.support.paths import EXAMPLES, ROOT

TRAIN = EXAMPLES / "data" / "train.jsonl"


def run(body: str) -> subprocess.CompletedProcess:
    script = textwrap.dedent("""
        import atexit, sys, threading, time
        from tunegate.cli.fast_exit import end_now
        atexit.register(lambda: print("handler ran", flush=True))
        print("report", end="")  # unflushed: ending the process must not lose it
    """) + textwrap.dedent(body)
    return subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=ROOT, timeout=60)


def test_ending_now_runs_every_exit_handler_and_keeps_the_output_and_the_code():
    done = run("end_now(3)\nprint('after end_now')\n")
    assert done.returncode == 3
    assert done.stdout == "reporthandler ran\n"


def test_the_process_ends_as_usual_while_another_thread_runs():
    for daemon in (False, True):  # a daemon thread's exit hooks (threading's) would be skipped too
        done = run(f"t = threading.Thread(target=time.sleep, args=(0.2,), daemon={daemon})\n"
                   "t.start()\nend_now(3)\nprint(' not ended')\n")
        assert done.returncode == 0
        assert done.stdout == "report not ended\nhandler ran\n"


def test_a_caller_of_main_keeps_its_own_exit_after_a_check():
    done = subprocess.run([sys.executable, "-c", "import sys\nfrom tunegate.cli.main import main\n"
                           f"code = main(['check', '--train', {str(TRAIN)!r}, '--json'])\n"
                           "print('returned', code, file=sys.stderr)\n"],
                          capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert done.returncode == 0 and "returned 0" in done.stderr and done.stdout.startswith("{")


def test_the_command_ends_with_the_checks_code_and_its_whole_report():
    done = subprocess.run([sys.executable, "-m", "tunegate", "check", "--train", str(TRAIN), "--json"],
                          capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert done.returncode == 0 and done.stdout.rstrip().endswith("}") and '"stages"' in done.stdout


def test_a_flow_command_ends_after_its_last_exit_handler_with_the_code_it_answered():
    # As `python -m tunegate`: the handler armed first runs last, after threading's exit hooks and
    # every later handler, and ends the process with the code appended once the command answered.
    script = textwrap.dedent("""
        import atexit, sys, threading, time
        sys.modules["__main__"].__spec__ = type("Spec", (), {"parent": "tunegate"})()
        from tunegate.cli.fast_exit import skip_teardown_at_exit
        code = skip_teardown_at_exit()
        atexit.register(lambda: print("later handler ran", flush=True))
        threading.Thread(target=time.sleep, args=(0.2,)).start()  # as Prefect's: joined first
        print("answer", end="")
        code.append(4)
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert done.returncode == 4
    assert done.stdout == "answerlater handler ran\n"


def test_a_flow_command_that_never_answered_exits_as_python_would():
    script = textwrap.dedent("""
        import sys
        sys.modules["__main__"].__spec__ = type("Spec", (), {"parent": "tunegate"})()
        from tunegate.cli.fast_exit import skip_teardown_at_exit
        skip_teardown_at_exit()
        raise SystemExit(7)
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert done.returncode == 7
