"""Stage 0, the spec: one YAML file, read once, validated by pydantic, every problem a finding.

    parsed = parse_spec("examples/quickstart.yaml")   # ParsedSpec: path, digest, result, spec
    spec = load_spec("examples/quickstart.yaml")       # a Spec, or a UsageError listing the errors

The schema is `model.py` (its sections' strict base `section.py`; `gate.overlap`, which a check
of bare data files needs without the rest, `overlap_settings.py`); pydantic's errors as findings
`schema_errors.py`; cross-field rules `rules.py`; the YAML reader `yaml_loader.py`; the GPU catalog
`gpus.py`; a sweep's search space `search_space.py`; a split's files `path_names.py`. Other tools'
configs (axolotl, TRL) are read by the importers in `importers/`.
"""
from __future__ import annotations

from tunegate.front_door import front_door

# Each name's module, imported on first use (tunegate.front_door).
_HOME = {**dict.fromkeys(["ParsedSpec", "load_spec", "parse_spec", "read_spec"], "tunegate.spec.check"),
         **dict.fromkeys(["Spec", "json_schema"], "tunegate.spec.model")}

__all__ = ["ParsedSpec", "Spec", "json_schema", "load_spec", "parse_spec", "read_spec"]
__getattr__ = front_door(__name__, _HOME)
