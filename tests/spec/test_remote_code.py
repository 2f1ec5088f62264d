"""trust_remote_code without a pinned revision (TG114) is an error only where the model's config maps
custom code (auto_map); a model transformers ships, such as Mixtral, runs none of its repo's code."""
from __future__ import annotations

from tests.support.paths import DATA
from tunegate.spec.check import read_spec

CONFIGS = DATA / "estimate" / "configs"


def _tg114(tmp_path, model: str, revision: str | None = None):
    pin = f", revision: {revision}" if revision else ""
    (tmp_path / "spec.yaml").write_text(
        f"model: {{id: '{model}', trust_remote_code: true{pin}}}\ndata: {{train: t.jsonl, validation: v.jsonl}}\n")
    result, _ = read_spec(tmp_path / "spec.yaml")
    return [f for f in result.findings if f.code == "TG114"], result


def test_a_config_that_maps_custom_code_without_a_revision_is_an_error_at_the_key(tmp_path):
    [found], result = _tg114(tmp_path, str(CONFIGS / "phi-2-msft"))
    assert (found.severity, found.key, result.status) == ("error", "model.trust_remote_code", "failed")
    assert "AutoModelForCausalLM" in found.message and "auto_map" in found.message


def test_mixtral_names_no_custom_code_so_it_is_a_warning(tmp_path):
    [found], result = _tg114(tmp_path, "mistralai/Mixtral-8x7B-v0.1")
    assert found.severity == "warning" and result.status == "passed"
    assert "names no custom code" in found.message


def test_a_config_not_on_this_disk_is_a_warning_that_says_so(tmp_path):
    [found], _ = _tg114(tmp_path, "acme/unlisted-model")
    assert found.severity == "warning" and "not on this disk" in found.message


def test_a_pinned_revision_needs_no_finding(tmp_path):
    assert _tg114(tmp_path, str(CONFIGS / "phi-2-msft"), revision="a" * 40)[0] == []
