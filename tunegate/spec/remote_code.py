"""`trust_remote_code` without a pinned revision (TG114): an error only where the repo has code to run.

    remote_code_finding(spec, config, "config.json")   # (severity, message, fix) or None

transformers runs a repo's own Python only for the classes its config.json maps in `auto_map`
(`AutoConfig`, `AutoModelForCausalLM`, ...). Mixtral, Llama, Qwen and the other models transformers
ships name none, so `trust_remote_code: true` (axolotl's examples set it often) runs nothing there:
a warning. Where the config maps custom code, unpinned code would run with the user's credentials:
an error. The spec stage reads the config from this disk (a local folder, a config tunegate ships);
the estimate, which also reads the Hub cache and the Hub, says the error there when only it finds
the config (`tunegate.estimate.stage`).
"""
from __future__ import annotations

from typing import Any

from tunegate.report import Severity
from tunegate.spec.model import Spec

UNPINNED_REMOTE_CODE = "TG114"
_PIN = ("Pin model.revision to the commit sha you reviewed: remote code runs with your credentials.")


def custom_classes(config: dict[str, Any]) -> list[str]:
    """The classes a config.json maps to the repo's own code (`auto_map`), sorted; [] for none."""
    mapped = config.get("auto_map")
    return sorted(str(k) for k in mapped) if isinstance(mapped, dict) else []


def remote_code_finding(spec: Spec, classes: list[str] | None, where: str | None) -> tuple[Severity, str, str] | None:
    """(severity, message, fix) for trust_remote_code without a revision; None when not both.

    `classes` are those the model's config maps to its own code (`custom_classes`; None: the config
    is not readable here), `where` where the config was read.
    """
    if not spec.model.trust_remote_code or spec.model.revision:
        return None
    if classes:
        return ("error", f"model.trust_remote_code is true without a pinned model.revision, and the model's "
                f"config ({where}) maps {', '.join(classes)} to the repo's own Python code (auto_map), which "
                "would run unpinned", _PIN)
    said = (f"its config ({where}) names no custom code (no auto_map), so nothing of the repo runs"
            if classes is not None else "its config.json is not on this disk, so whether the repo has code of "
            "its own (auto_map) is not known here; the estimate says so if it reads the config")
    return ("warning", f"model.trust_remote_code is true without a pinned model.revision; {said}",
            "Remove trust_remote_code if the model needs no code of its own; otherwise " + _PIN[0].lower() + _PIN[1:])
