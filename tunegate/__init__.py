"""tunegate: a fail-fast preflight gate for LLM fine-tuning.

    from tunegate import check
    report = check("examples/quickstart.yaml")
"""
from tunegate.gate import check
from tunegate.report import Finding, GateReport, StageResult

__all__ = ["Finding", "GateReport", "StageResult", "check"]
__version__ = "0.1.0"
