"""prepare_tokenizer: the one set-up of the spec's tokenizer the mini-run, the full run and `samples` share."""
from __future__ import annotations

from tests.support.minirun import load_spec
from tunegate.training.tokenizer import PreparedTokenizer, TokenizerProblem, prepare_tokenizer

BROKEN_TEMPLATE = "{% for m in messages %}{{ m['content'] }}{% endfor %"  # the closing brace lost


def variant(tiny_cache, folder, **changes):
    from tunegate.training.tiny_model import make_variant

    return str(make_variant(tiny_cache, folder, **changes))


def test_the_tiny_model_tokenizer_is_used_as_it_is(tiny_cache):
    prepared = prepare_tokenizer(load_spec("good"))
    assert isinstance(prepared, PreparedTokenizer)
    assert prepared.path == str(tiny_cache) and prepared.tokenizer.pad_token == "<pad>"
    assert (prepared.substituted_pad, prepared.pad_is_own_eos) == (None, False)
    assert set(prepared.seconds) == {"resolve_s", "tokenizer_load_s"}


def test_a_tokenizer_without_pad_token_pads_with_its_unk_and_says_so(tiny_cache, tmp_path):
    prepared = prepare_tokenizer(load_spec("good", **{"model.id": variant(tiny_cache, tmp_path / "m", pad=None)}))
    assert prepared.substituted_pad == "unk token '<unk>'" and prepared.tokenizer.pad_token == "<unk>"
    assert not prepared.pad_is_own_eos  # the unk pads, not the EOS


def test_a_pad_that_is_the_eos_is_named(tiny_cache, tmp_path):
    prepared = prepare_tokenizer(load_spec("good", **{"model.id": variant(tiny_cache, tmp_path / "m", pad="eos")}))
    assert prepared.substituted_pad is None and prepared.pad_is_own_eos


def test_the_spec_pad_token_is_used_when_the_vocabulary_has_it(tiny_cache):
    prepared = prepare_tokenizer(load_spec("good", **{"model.pad_token": "<unk>"}))
    assert prepared.tokenizer.pad_token == "<unk>" and prepared.substituted_pad is None


def test_a_model_id_that_cannot_be_loaded_is_a_problem_not_a_raise(tmp_path):
    problem = prepare_tokenizer(load_spec("good", **{"model.id": str(tmp_path / "no-such-model")}))
    assert isinstance(problem, TokenizerProblem) and problem.kind == "cannot_load"
    assert isinstance(problem.error, (OSError, ValueError)) and "tokenizer_load_s" not in problem.seconds


def test_a_tokenizer_without_chat_template_is_a_problem(tiny_cache, tmp_path):
    folder = variant(tiny_cache, tmp_path / "m", chat_template=False)
    problem = prepare_tokenizer(load_spec("good", **{"model.id": folder}))
    assert (problem.kind, problem.error) == ("no_chat_template", None)
    assert set(problem.seconds) == {"resolve_s", "tokenizer_load_s"}


def test_a_pad_token_the_vocabulary_lacks_is_a_problem(tiny_cache):
    problem = prepare_tokenizer(load_spec("good", **{"model.pad_token": "<|pad_me|>"}))
    assert problem.kind == "pad_token"
    assert str(problem.error) == "model.pad_token '<|pad_me|>' is not a token of this tokenizer"


def test_a_template_that_does_not_parse_is_a_problem_only_when_asked(tiny_cache, tmp_path):
    from transformers import AutoTokenizer

    folder = variant(tiny_cache, tmp_path / "m")
    tokenizer = AutoTokenizer.from_pretrained(folder)
    tokenizer.chat_template = BROKEN_TEMPLATE
    tokenizer.save_pretrained(folder)
    spec = load_spec("good", **{"model.id": folder})
    problem = prepare_tokenizer(spec, check_template_syntax=True)
    assert problem.kind == "template_syntax" and problem.error.lineno == 1
    assert isinstance(prepare_tokenizer(spec), PreparedTokenizer)
