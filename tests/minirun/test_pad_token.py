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
