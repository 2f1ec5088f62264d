"""Stage 0, the spec: one YAML file, read once, validated by pydantic, every problem a finding.

    parsed = parse_spec("examples/quickstart.yaml")   # ParsedSpec: path, digest, result, spec
    spec = load_spec("examples/quickstart.yaml")       # a Spec, or a UsageError listing the errors

The schema is `model.py`; pydantic's errors as findings `schema_errors.py`; cross-field rules
`rules.py`; the YAML reader `yaml_loader.py`; the GPU catalog `gpus.py`; a sweep's search space
`search_space.py`. Other tools' configs (axolotl, TRL) are read by the importers in `importers/`.
"""
from tunegate.spec.check import ParsedSpec, load_spec, parse_spec, read_spec
from tunegate.spec.model import Spec, json_schema

__all__ = ["ParsedSpec", "Spec", "json_schema", "load_spec", "parse_spec", "read_spec"]
