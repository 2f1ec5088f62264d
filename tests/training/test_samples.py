"""render_samples: what `tunegate samples` prints, and the usage errors a tokenizer it cannot use gives."""
from __future__ import annotations

import json

import pytest

from tests.support.minirun import load_spec
from tests.support.paths import DATA
from tunegate.errors import UsageError
from tunegate.training.samples import render_samples


def test_the_text_opens_with_the_split_and_its_token_counts(tiny_cache):
    spec = load_spec("good")
    text = render_samples(spec, "validation", n=2, seed=0)
    assert text.startswith("2 of ") and f" records of {spec.data.validation} (tokens p50 " in text.splitlines()[0]
    assert text.count("\n── record ") == 2 and "⟦" in text


def test_the_json_has_one_entry_per_sample_with_its_segments(tiny_cache):
    doc = json.loads(render_samples(load_spec("good"), n=3, as_json=True))
    assert doc["max_seq_len"] == load_spec("good").training.max_seq_len
    assert [s["why"] for s in doc["samples"]] == ["shortest", "median", "longest"]
    assert all(any(seg["trained"] for seg in s["segments"]) for s in doc["samples"])


def test_the_samples_of_a_split_of_two_files_say_which_file_each_record_is_in(tiny_cache):
    halves = [DATA / "splits" / "minirun_train_first.jsonl", DATA / "splits" / "minirun_train_second.jsonl"]
    spec = load_spec("good", **{"data.train": halves})
    text = render_samples(spec, n=3, seed=0)
    assert f" records of {halves[0]} + {halves[1]} (tokens p50 " in text.splitlines()[0]
    assert "(minirun_train_first.jsonl line 5, shortest)" in text
    doc = json.loads(render_samples(spec, n=3, as_json=True))
    assert [(s["file"], s["line"]) for s in doc["samples"]][0] == ("minirun_train_first.jsonl", 5)


def test_a_tokenizer_without_chat_template_is_a_usage_error(tiny_cache, tmp_path):
    from tunegate.training.tiny_model import make_variant

    folder = make_variant(tiny_cache, tmp_path / "m", chat_template=False)
    with pytest.raises(UsageError, match="has no chat template: nothing to render"):
        render_samples(load_spec("good", **{"model.id": str(folder)}))


def test_a_pad_token_the_vocabulary_lacks_is_a_usage_error(tiny_cache):
    with pytest.raises(UsageError, match=r"^model.pad_token '<\|pad_me\|>' is not a token of this tokenizer$"):
        render_samples(load_spec("good", **{"model.pad_token": "<|pad_me|>"}))


def test_a_model_that_cannot_be_loaded_is_a_usage_error(tmp_path):
    with pytest.raises(UsageError, match="the tokenizer of model.id .*no-such-model.* cannot be loaded: "):
        render_samples(load_spec("good", **{"model.id": str(tmp_path / "no-such-model")}))
