"""The built-in `tunegate/tiny-llama`: a small random Llama and a byte-level BPE tokenizer, built offline.

    from tunegate.training.tiny_model import resolve_model_id
    path = resolve_model_id("tunegate/tiny-llama")   # builds once into the cache, then reuses it

The model hub cannot be reached from our machines, so tests and the demo use this model. It is
written with `save_pretrained` and loaded back through `AutoModelForCausalLM`/`AutoTokenizer`,
exactly the path a real model id or local folder takes. The cache folder is
`$TUNEGATE_CACHE/tiny-llama-VERSION` (default `~/.cache/tunegate`); two processes may build at once:
each builds in its own temporary folder and renames it into place, and the loser reuses the winner's.
"""
from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from tunegate.user_cache import cache_folder, cache_root

TINY_ID = "tunegate/tiny-llama"
# Bump when the recipe below changes so old caches are not reused.
VERSION = "v2"  # v2: the chat template renders tools, tool calls and reasoning
SEED = 0
CORPUS = Path(__file__).resolve().parents[1] / "data" / "tiny_corpus.txt"

BOS, EOS, PAD, UNK = "<s>", "</s>", "<pad>", "<unk>"
ROLE_TOKENS = ["<|system|>", "<|user|>", "<|assistant|>", "<|end|>"]

# The assistant turn sits inside {% generation %} so `return_assistant_tokens_mask` marks exactly
# the reply and its EOS (the model must learn to stop); role headers and other turns stay masked.
# Tool definitions go first and a reply's tool calls after its text, as tool-use templates (Qwen2.5,
# Llama 3.1) render them: without them a tool-call reply would be trained as an empty one (TG543).
# A reply's reasoning (reasoning_content or thinking) goes before its text in <think>, as Qwen3's.
CHAT_TEMPLATE = (
    "{{ bos_token }}"
    "{% if tools %}<|system|>\nTools:{% for tool in tools %}\n{{ tool | tojson }}{% endfor %}<|end|>\n{% endif %}"
    "{% for message in messages %}"
    "{% if message['role'] == 'assistant' %}"
    "<|assistant|>\n{% generation %}"
    "{% set thought = message.get('reasoning_content') or message.get('thinking') %}"
    "{% if thought %}<think>\n{{ thought }}\n</think>\n\n{% endif %}{{ message['content'] }}"
    "{% for call in message.get('tool_calls') or [] %}"
    "<call>{{ (call['function'] if call['function'] is defined else call) | tojson }}</call>{% endfor %}"
    "{{ eos_token }}{% endgeneration %}\n"
    "{% else %}"
    "<|{{ message['role'] }}|>\n{{ message['content'] }}<|end|>\n"
    "{% endif %}"
    "{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>\n{% endif %}"
)

# Sizes: big enough to have every module a real Llama has (q/k/v/o, gate/up/down, GQA with
# 2 KV heads), small enough that a training step on CPU takes milliseconds.
HIDDEN, LAYERS, HEADS, KV_HEADS, INTERMEDIATE = 64, 2, 4, 2, 128
TARGET_VOCAB = 768
MAX_POSITIONS = 4096  # RoPE has no hard limit; this only has to cover the specs' max_seq_len


def resolve_model_id(model_id: str) -> str:
    """Map the built-in id to its (built on demand) folder; any other id or path is returned as is."""
    if model_id == TINY_ID:
        return str(ensure_tiny_model())
    return model_id


def ensure_buildable() -> None:
    """UsageError now if the built-in model is not built yet and the user cache cannot take it (not
    a folder, or one this user cannot write in): a flow command says so before it starts."""
    if not (_built_in(cache_root()) / "config.json").is_file():
        cache_folder(writable=True)


def ensure_tiny_model(root: Path | None = None) -> Path:
    """Build the tiny model into the cache once and return its folder."""
    if root is None:
        ensure_buildable()  # a cache that cannot take it is a usage error, not a model that cannot load
    final = _built_in(root or cache_root())
    if (final / "config.json").is_file():
        return final
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".tiny-llama-build-", dir=final.parent))
    try:
        build_tiny_model(tmp)
        try:
            os.rename(tmp, final)  # atomic: readers see no folder or a complete one
        except OSError:
            if not (final / "config.json").is_file():  # not a lost race: a real error
                raise
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return final


def _built_in(root: Path) -> Path:
    """The built model's folder under a cache root."""
    return root / f"tiny-llama-{VERSION}"


def build_tiny_model(dest: Path) -> Path:
    """Train the tokenizer, initialise the model with a fixed seed, and save both into `dest`."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    tokenizer = build_tokenizer()
    config = LlamaConfig(
        vocab_size=_round_up(len(tokenizer), 64), hidden_size=HIDDEN, intermediate_size=INTERMEDIATE,
        num_hidden_layers=LAYERS, num_attention_heads=HEADS, num_key_value_heads=KV_HEADS,
        max_position_embeddings=MAX_POSITIONS, tie_word_embeddings=False,
        bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id)
    with torch.random.fork_rng(devices=[]):  # leave the caller's global RNG untouched
        torch.manual_seed(SEED)
        model = LlamaForCausalLM(config)
    dest.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(dest)
    tokenizer.save_pretrained(dest)
    return dest


def build_tokenizer():
    """A byte-level BPE tokenizer trained on the built-in corpus, with bos/eos/pad and a chat template."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    backend = Tokenizer(models.BPE())
    backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    backend.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=TARGET_VOCAB, special_tokens=[BOS, EOS, PAD, UNK, *ROLE_TOKENS],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    backend.train_from_iterator(CORPUS.read_text(encoding="utf-8").splitlines(), trainer=trainer)
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=backend, bos_token=BOS, eos_token=EOS, pad_token=PAD, unk_token=UNK,
        additional_special_tokens=ROLE_TOKENS, model_max_length=MAX_POSITIONS)
    tokenizer.chat_template = CHAT_TEMPLATE
    return tokenizer


def make_variant(src: Path, dest: Path, *, chat_template: bool = True,
                 pad: str | None = "distinct") -> Path:
    """Copy the model in `src` with a changed tokenizer, for tests of the tokenizer checks.

    Args:
        src: a built model folder (e.g. `ensure_tiny_model()`).
        dest: where the variant goes.
        chat_template: False drops the chat template, as a base model's tokenizer has none.
        pad: "distinct" keeps `<pad>`, "eos" sets pad = EOS, None removes the pad token.
    """
    from transformers import AutoConfig, AutoTokenizer

    dest.mkdir(parents=True, exist_ok=True)
    for name in ("model.safetensors", "generation_config.json"):
        if (src / name).exists():
            shutil.copy2(src / name, dest / name)
    tokenizer = AutoTokenizer.from_pretrained(src)
    if not chat_template:
        tokenizer.chat_template = None
    if pad == "eos":
        tokenizer.pad_token = tokenizer.eos_token
    elif pad is None:
        tokenizer.pad_token = None
    tokenizer.save_pretrained(dest)
    config = AutoConfig.from_pretrained(src)
    config.pad_token_id = tokenizer.pad_token_id
    config.save_pretrained(dest)
    return dest


def _round_up(n: int, multiple: int) -> int:
    return -(-n // multiple) * multiple
