"""tunegate: a fail-fast preflight gate for LLM fine-tuning.

    from tunegate import check
    report = check("examples/quickstart.yaml")
"""
from __future__ import annotations

from typing import Any

__all__ = ["Finding", "GateReport", "StageResult", "check"]
__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    # Loaded on first use (PEP 562): `tunegate --version`, `--help` and the log set-up need neither
    # pydantic nor the gate, and the CLI decides how pydantic starts before anything imports it.
    if name == "check":
        from tunegate.gate import check

        return check
    if name in ("Finding", "GateReport", "StageResult"):
        from tunegate import report

        return getattr(report, name)
    raise AttributeError(f"module 'tunegate' has no attribute {name!r}")
