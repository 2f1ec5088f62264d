"""The pad token an axolotl config names (special_tokens.pad_token) is used, and must exist."""
from __future__ import annotations

from tests.support.minirun import DATA
from tunegate.gate import check


def test_a_pad_token_the_tokenizer_lacks_stops_the_mini_run_before_any_model_loads(tiny_cache, tmp_path):
    spec = (DATA / "good.yaml").read_text().replace("model:\n  id: tunegate/tiny-llama",
                                                    'model:\n  id: tunegate/tiny-llama\n  pad_token: "<|pad_me|>"')
    for name in ("train.jsonl", "validation.jsonl"):
        (tmp_path / name).write_bytes((DATA / name).read_bytes())
    (tmp_path / "spec.yaml").write_text(spec)
    report = check(tmp_path / "spec.yaml", mini_run=True)
    [finding] = [f for f in report.findings if f.stage == "mini-run" and f.severity == "error"]
    assert (finding.code, finding.key) == ("TG551", "model.pad_token")
    assert "'<|pad_me|>' is not a token" in finding.message
    assert "load_s" not in report.stage("mini-run").stats


def tokenizer_naming_a_pad_it_lacks(tiny_cache, folder):
    """A model folder whose tokenizer_config.json names a pad token the vocabulary has not: transformers
    adds it on load, with an id one past the model's embedding."""
    import json

    from tunegate.training.tiny_model import make_variant

    make_variant(tiny_cache, folder, pad=None)
    config = json.loads((folder / "tokenizer_config.json").read_text())
    config["pad_token"] = "<|pad|>"
    (folder / "tokenizer_config.json").write_text(json.dumps(config))
    return folder


def test_a_pad_token_added_on_load_past_the_embedding_is_named_with_its_fix(tiny_cache, tmp_path):
    from tests.support.minirun import finding, load_spec, run_stage

    folder = tokenizer_naming_a_pad_it_lacks(tiny_cache, tmp_path / "model")
    result, _ = run_stage(load_spec("good", **{"model.id": str(folder)}))
    pad = finding(result, "TG534")
    assert (pad.severity, pad.key) == ("error", "model.pad_token")
    assert "token id 768 ('<|pad|>', the tokenizer's pad token)" in pad.message
    assert "has only 768 rows" in pad.message
    assert "model.pad_token" in pad.hint and "resize_token_embeddings" in pad.hint


def test_naming_a_pad_token_the_vocabulary_has_fixes_it(tiny_cache, tmp_path):
    from tests.support.minirun import codes, load_spec, run_stage

    folder = tokenizer_naming_a_pad_it_lacks(tiny_cache, tmp_path / "model")
    result, _ = run_stage(load_spec("good", **{"model.id": str(folder), "model.pad_token": "<unk>"}))
    assert result.status == "passed" and "TG534" not in codes(result), result.findings
