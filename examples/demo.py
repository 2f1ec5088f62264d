"""The tunegate demo on the embedded defaults: `make demo` (or `python examples/demo.py`).

The whole story on the built-in tiny model, each step through the real `tunegate` command line:
a broken spec rejected in a fraction of a second, a good one approved by the full preflight
(mini-run included), a 3-candidate sweep where the gate rejects the diverging candidate before
it trains, a tiny full run launched from the approval, and the MLflow table of it all.
"""
from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent


def step(n: int, title: str, *args: str, expect: int) -> None:
    print(f"\n=== [{n}/5] {title}\n$ tunegate {' '.join(args)}", flush=True)
    start = time.perf_counter()
    rc = subprocess.run([sys.executable, "-m", "tunegate", *args], cwd=ROOT, env=_env()).returncode
    print(f"(exit code {rc}, {time.perf_counter() - start:.1f} s)", flush=True)
    if rc != expect:
        raise SystemExit(f"demo step '{title}' exited {rc}, expected {expect}")


def _env() -> dict[str, str]:
    env = dict(os.environ)
    # The demo's Prefect state stays beside the examples, not in ~/.prefect.
    env.setdefault("PREFECT_HOME", str(HERE / ".tunegate" / "prefect"))
    Path(env["PREFECT_HOME"]).mkdir(parents=True, exist_ok=True)
    env.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    env.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
    env.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")  # the report says what matters
    return env


def main() -> None:
    step(1, "A broken spec is rejected at once, with every problem and its fix",
         "check", "examples/broken.yaml", expect=1)
    step(2, "A good spec passes every stage, mini-run included, and is tracked in MLflow",
         "preflight", "examples/quickstart.yaml", expect=0)
    step(3, "A 3-candidate sweep: each candidate is gated before it may train",
         "sweep", "examples/sweep.yaml", expect=0)
    step(4, "The full run starts only from the approval that matches the files",
         "launch", "examples/quickstart.yaml", expect=0)
    step(5, "Every candidate in MLflow, ranked only against the same validation set",
         "runs", "--spec", "examples/quickstart.yaml", expect=0)
    print("\nDemo finished. Browse the runs with:\n"
          f"  {Path(sys.executable).parent / 'mlflow'} ui --backend-store-uri sqlite:///{HERE / 'mlflow.db'}\n"
          "and open http://127.0.0.1:5000")


if __name__ == "__main__":
    main()
