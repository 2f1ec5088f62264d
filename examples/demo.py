"""The tunegate demo on the embedded defaults: `make demo` (or `python examples/demo.py`).

Each step runs the real `tunegate` command line and shows what an engineer would see.
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def step(title: str, *args: str, expect: int) -> None:
    print(f"\n=== {title}\n$ tunegate {' '.join(args)}", flush=True)
    rc = subprocess.run([sys.executable, "-m", "tunegate", *args], cwd=HERE.parent).returncode
    print(f"(exit code {rc})", flush=True)
    if rc != expect:
        raise SystemExit(f"demo step '{title}' exited {rc}, expected {expect}")


def main() -> None:
    step("A good spec passes the static gate", "check", "examples/quickstart.yaml", expect=0)
    step("A broken spec is rejected with every problem and its fix", "check", "examples/broken.yaml",
         expect=1)
    print("\nDemo finished.")


if __name__ == "__main__":
    main()
