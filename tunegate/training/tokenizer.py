"""The spec's tokenizer, prepared alike for the mini-run, the full run and `tunegate samples`.

    prepared = prepare_tokenizer(spec)
    if isinstance(prepared, TokenizerProblem):      # each caller says it its own way
        ...                                         # a finding, a failed result, a usage error
    prepared.tokenizer, prepared.path, prepared.substituted_pad

The steps, in order: resolve model.id (building the tiny model on first use), load the tokenizer,
require a chat template (and, for the mini-run, one that parses), then give it a pad token when
it has none (`chat_tokens.substitute_pad_token`). The first step that fails is the problem; the
later ones are not attempted.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Literal

from tunegate.spec.model import Spec
from tunegate.training.chat_tokens import substitute_pad_token
from tunegate.training.model import load_tokenizer
from tunegate.training.tiny_model import resolve_model_id
from tunegate.training.torch_free import hide_torch_from_transformers

# cannot_load: model.id does not resolve or load (OSError/ValueError); no_chat_template: nothing to
# render chats with; template_syntax: the template is not Jinja (jinja2's TemplateSyntaxError);
# pad_token: model.pad_token is not in the vocabulary, or there is no token to pad with (ValueError).
ProblemKind = Literal["cannot_load", "no_chat_template", "template_syntax", "pad_token"]


@dataclass(frozen=True)
class TokenizerProblem:
    """Why the spec's tokenizer cannot be used: the step that failed and the error it raised."""

    kind: ProblemKind
    error: BaseException | None = None  # None for no_chat_template
    seconds: dict[str, float] = field(default_factory=dict)  # the steps timed before it failed


@dataclass(frozen=True)
class PreparedTokenizer:
    """A loaded tokenizer with a chat template and a pad token."""

    tokenizer: Any
    path: str  # the resolved model folder or hub id, where the model loads from too
    substituted_pad: str | None  # "unk token '<unk>'" when it had no pad token; None otherwise
    pad_is_own_eos: bool  # its own (or model.pad_token's) pad is the EOS: a pad-id mask drops EOS labels
    # resolve_s, tokenizer_load_s: named as the mini-run's stats name them
    seconds: dict[str, float] = field(default_factory=dict)


def prepare_tokenizer(spec: Spec, check_template_syntax: bool = False,
                      torch_free: bool = False) -> PreparedTokenizer | TokenizerProblem:
    """Load the spec's tokenizer and make it fit to render and pad chats, or say why it cannot be.

    Args:
        spec: the validated spec (model.id, revision, trust_remote_code, pad_token).
        check_template_syntax: also render one message, so a chat template with a Jinja syntax
            error is a problem here (the mini-run's TG545) rather than one error per record later.
        torch_free: the process only tokenises and is its own: load without torch where transformers
            is not loaded yet (tunegate.training.torch_free); after the model is resolved, since
            building the tiny model needs torch.
    """
    seconds: dict[str, float] = {}
    start = time.perf_counter()
    try:
        path = resolve_model_id(spec.model.id)  # builds the tiny model on first use
        seconds["resolve_s"] = round(time.perf_counter() - start, 3)
        start = time.perf_counter()
        if torch_free:
            hide_torch_from_transformers(spec)
        tokenizer = load_tokenizer(path, spec)
    except (OSError, ValueError) as exc:  # not there, not a model
        return TokenizerProblem("cannot_load", exc, seconds)
    seconds["tokenizer_load_s"] = round(time.perf_counter() - start, 3)
    if not tokenizer.chat_template:
        return TokenizerProblem("no_chat_template", None, seconds)
    if check_template_syntax:
        syntax = _template_syntax_error(tokenizer)
        if syntax is not None:
            return TokenizerProblem("template_syntax", syntax, seconds)
    own_pad = tokenizer.pad_token or spec.model.pad_token
    try:
        used = substitute_pad_token(tokenizer, spec.model.pad_token)
    except ValueError as exc:
        return TokenizerProblem("pad_token", exc, seconds)
    own_eos = own_pad is not None and tokenizer.pad_token_id == tokenizer.eos_token_id
    return PreparedTokenizer(tokenizer, path, used, own_eos, seconds)


def _template_syntax_error(tokenizer: Any) -> BaseException | None:
    """The chat template's Jinja syntax error, or None; any other error is about records, not the template."""
    from jinja2 import TemplateSyntaxError

    try:
        tokenizer.apply_chat_template([{"role": "user", "content": "Hi"}], tokenize=False)
    except TemplateSyntaxError as exc:
        return exc
    except Exception:  # noqa: BLE001  (any other error is about the records: the token audit names them)
        pass
    return None
