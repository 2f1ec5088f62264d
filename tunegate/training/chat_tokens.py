"""Tokenise chats the way the full run does: chat template, truncation, loss on assistant tokens only.

    encoded = encode_chats(tokenizer, [record.messages for record in records], max_seq_len=2048,
                           tools=[record.tools for record in records])
    plain = encode_plain(tokenizer, [("The sky is", " blue.")], max_seq_len=2048)   # TRL's plain text
    batch = collate(encoded[:4], pad_id=tokenizer.pad_token_id)   # input_ids, attention_mask, labels

An assistant turn with `weight: 0` (OpenAI's format; a TRL prompt's own replies are converted
to it) is context: its tokens are masked like a prompt's, as OpenAI's fine-tuning does.

Which tokens are the assistant's: when the template marks replies with `{% generation %}`,
transformers' own `return_assistant_tokens_mask` says so. Most real templates (Llama 3, Qwen,
Mistral) have no such markers; for them each reply's characters are found by rendering the
conversation up to the reply with `add_generation_prompt=True` and up to its end: the difference
is the reply plus its end-of-turn token, which the model must learn to emit. A template that
renders a reply differently once later turns follow it (Qwen3 drops an earlier reply's `<think>`
block and trims it) defeats that difference: the conversation is then rendered once more with the
reply's text replaced by a marker, and the text around the marker is the text around the reply as
the whole conversation renders it. A reply neither way places is listed in `unplaced_replies`
(the token audit says so, TG538): it is not trained.

A record's tool definitions (`tools`) go to the template with its messages, as TRL's SFTTrainer
and axolotl pass the column: templates render them into the system prompt, so they take tokens
of every such record and the model sees the schemas it is taught to call.
"""
from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

IGNORE = -100  # the label PyTorch's cross-entropy skips
# Stands in for a reply's text to find where the template puts it: letters only, so no template's
# trim, split on '</think>' or escaping changes it.
_MARKER = "TUNEGATEREPLYMARKER"
_GENERATION = re.compile(r"{%-?\s*generation\s*-?%}")

# Conversations a tokenizer call takes, and their characters: until it returns, the fast tokenizer's
# encodings (offsets, token strings) hold ~200 bytes a token, ~50 MB for 256 records of 1,000 tokens;
# each conversation's tokens are the same however they are grouped.
RENDER_CHUNK, RENDER_CHARS = 32, 65_536

Conversation = list[dict[str, Any]]
Tools = list[dict[str, Any]] | None  # a conversation's tool definitions (JSON schemas), or none


@dataclass(frozen=True)
class EncodedChat:
    """One conversation after templating and truncation."""

    input_ids: list[int]  # truncated to max_seq_len
    labels: list[int]  # IGNORE everywhere but assistant tokens
    full_length: int  # tokens before truncation
    final_reply_cut: bool  # the last assistant reply lost tokens (or all of them) to truncation
    first_reply_token: int | None  # where the first assistant token sits before truncation
    cut: tuple[int, ...] = ()  # the tokens truncation dropped (what `tunegate samples` shows)
    unplaced_replies: tuple[int, ...] = ()  # message indices of replies not found in the rendered text

    @property
    def trainable_tokens(self) -> int:
        return sum(1 for label in self.labels if label != IGNORE)

    @property
    def kept(self) -> int:
        """Tokens left after truncation."""
        return len(self.input_ids)

    def counts(self) -> TokenCounts:
        return TokenCounts(self.full_length, self.kept, self.trainable_tokens, self.final_reply_cut)


@dataclass(frozen=True)
class TokenCounts:
    """What the token audit keeps of an encoded conversation whose tokens it lets go: a sample of
    long records held as token lists takes ~50 bytes a token (1 GB for 20,000 records of ~1,000)."""

    full_length: int
    kept: int
    trainable_tokens: int
    final_reply_cut: bool


def has_generation_markers(template: str | None) -> bool:
    return bool(template) and bool(_GENERATION.search(template))


def encode_chats(tokenizer: Any, conversations: Sequence[Conversation], max_seq_len: int,
                 train_all: Sequence[bool] = (), tools: Sequence[Tools] = ()) -> list[EncodedChat]:
    """Encode a batch of conversations; raises jinja2's TemplateError when the template rejects one.

    `train_all[i]` trains every token of conversation i (training.loss_on: all), not its replies only;
    `tools[i]` are conversation i's tool definitions (None: it has none).
    """
    if not conversations:
        return []
    every = list(train_all) + [False] * (len(conversations) - len(train_all))
    schemas = list(tools) + [None] * (len(conversations) - len(tools))
    return [_truncate(ids, [1] * len(ids) if all_tokens else mask, max_seq_len, () if all_tokens else unplaced)
            for (ids, mask, unplaced), all_tokens in zip(_pairs(tokenizer, conversations, schemas), every)]


def _pairs(tokenizer: Any, conversations: Sequence[Conversation], tools: list[Tools]) -> Iterator[Any]:
    """(token ids, 1 where a reply's token is trained, replies not placed) of each conversation, in order.

    A conversation whose template marks replies with {% generation %} and that has no reply weighted 0
    and no tools of its own takes the template's masks (one call renders many with one tools
    argument); any other is placed by prefix. Each conversation's way depends on it alone, so its
    tokens are the same in any batch, or alone."""
    marked = has_generation_markers(tokenizer.chat_template)
    by_masks = [marked and not schemas and not any(m.get("weight") == 0 for m in conv)
                for conv, schemas in zip(conversations, tools)]
    masked = _with_masks(tokenizer, [c for c, m in zip(conversations, by_masks) if m])
    prefixed = _encode_by_prefix(tokenizer, [c for c, m in zip(conversations, by_masks) if not m],
                                 [t for t, m in zip(tools, by_masks) if not m])
    for m in by_masks:
        yield next(masked) if m else next(prefixed)


def _with_masks(tokenizer: Any, conversations: Sequence[Conversation]) -> Iterator[tuple[list[int], list[int], tuple]]:
    """The template's own assistant masks, a chunk of conversations a call (`_chunks`)."""
    for start, stop in _chunks(conversations):
        chunk = list(conversations[start:stop])
        out = tokenizer.apply_chat_template(chunk, return_dict=True, return_assistant_tokens_mask=True)
        yield from zip(out["input_ids"], out["assistant_masks"], [()] * len(chunk))


def _chunks(conversations: Sequence[Conversation]) -> Iterator[tuple[int, int]]:
    """Runs of at most RENDER_CHUNK conversations and RENDER_CHARS characters of content (`bounded_runs`)."""
    sizes = (sum(len(m["content"]) if isinstance(m.get("content"), str) else 0 for m in conv) for conv in conversations)
    return bounded_runs(sizes, RENDER_CHUNK, RENDER_CHARS)


def bounded_runs(sizes: Iterable[int], most: int, budget: int) -> Iterator[tuple[int, int]]:
    """(start, stop) of consecutive runs of the items whose `sizes` are given: at most `most` items
    and, past a run's first item, at most `budget` in size, so what one run holds stays bounded
    however large the items are (an item larger than `budget` is a run of its own)."""
    start = total = count = 0
    for i, size in enumerate(sizes):
        if i > start and (i - start == most or total + size > budget):
            yield start, i
            start, total = i, 0
        total += size
        count = i + 1
    if start < count:
        yield start, count


def _encode_by_prefix(tokenizer: Any, conversations: Sequence[Conversation],
                      tools: list[Tools]) -> Iterator[tuple[list[int], list[int], tuple[int, ...]]]:
    for start, stop in _chunks(conversations):
        rendered = [_render_with_spans(tokenizer, conv, schemas) for conv, schemas
                    in zip(conversations[start:stop], tools[start:stop])]
        enc = tokenizer([text for text, _, _ in rendered], add_special_tokens=False, return_offsets_mapping=True)
        yield from ((ids, _mask_from_spans(offsets, spans), unplaced)
                    for ids, offsets, (_, spans, unplaced) in zip(enc["input_ids"], enc["offset_mapping"], rendered))


Span = tuple[int, int]


def _render_with_spans(tokenizer: Any, conv: Conversation,
                       tools: Tools = None) -> tuple[str, list[Span], tuple[int, ...]]:
    """The rendered text, the character span of each trained reply in it, and the replies not found."""
    def render(messages: Conversation, prompt: bool = False) -> str:
        return tokenizer.apply_chat_template(messages, tools=tools, tokenize=False, add_generation_prompt=prompt)

    full = render(conv)
    spans: list[Span] = []
    unplaced: list[int] = []
    for i, msg in enumerate(conv):
        if msg["role"] != "assistant" or msg.get("weight") == 0:
            continue
        cursor = spans[-1][1] if spans else 0
        before = render(conv[:i], prompt=True) if i else ""
        upto = render(conv[: i + 1])
        if full.startswith(upto) and upto.startswith(before) and len(before) >= cursor and len(upto) > len(before):
            spans.append((len(before), len(upto)))
            continue
        # The template renders this reply differently inside the whole conversation.
        span = _span_by_marker(render, conv, i, full, cursor) or _span_by_text(full, msg, before, upto, cursor)
        if span is None:
            unplaced.append(i)
        else:
            spans.append(span)
    return full, spans, tuple(unplaced)


def _span_by_marker(render: Any, conv: Conversation, i: int, full: str, cursor: int) -> Span | None:
    """Render the conversation with reply i's text replaced by a marker: what precedes and follows the
    marker precedes and follows the reply in `full`; the end-of-turn text the template writes after
    a final reply (its EOS) belongs to the span, as in the prefix difference."""
    from jinja2 import TemplateError

    marked = [*conv[:i], {**conv[i], "content": _MARKER}, *conv[i + 1:]]
    try:
        whole, last = render(marked), render(marked[: i + 1])
    except (TemplateError, TypeError, ValueError):
        return None
    if whole.count(_MARKER) != 1 or last.count(_MARKER) != 1:
        return None
    head, tail = whole.split(_MARKER)
    stop = len(full) - len(tail)
    if not (full.startswith(head) and full.endswith(tail) and cursor <= len(head) <= stop):
        return None
    end_of_turn = last.split(_MARKER)[1]
    if end_of_turn and tail.startswith(end_of_turn):
        stop += len(end_of_turn)
    return (len(head), stop) if stop > len(head) else None


def _span_by_text(full: str, msg: dict[str, Any], before: str, upto: str, cursor: int) -> Span | None:
    """The reply's own text, searched after its turn's header when the header is where it was
    (never in an earlier turn that quotes it), with the end-of-turn text that follows it."""
    content = msg.get("content")
    if not isinstance(content, str) or not content:
        return None
    from_here = max(cursor, len(before)) if full.startswith(before) else cursor
    start = full.find(content, from_here)
    if start < 0:
        return None
    stop = start + len(content)
    at = upto.rfind(content)
    end_of_turn = upto[at + len(content):] if at >= 0 else ""
    if end_of_turn and full.startswith(end_of_turn, stop):
        stop += len(end_of_turn)
    return start, stop


def _mask_from_spans(offsets: Sequence[tuple[int, int]], spans: list[tuple[int, int]]) -> list[int]:
    """1 for every token overlapping a span (the same rule transformers uses for generation markers)."""
    mask = [0] * len(offsets)
    span = 0
    for token, (start, end) in enumerate(offsets):
        while span < len(spans) and start >= spans[span][1]:
            span += 1
        if span == len(spans):
            break
        if end > spans[span][0]:
            mask[token] = 1
    return mask


def encode_plain(tokenizer: Any, pairs: Sequence[tuple[str, str]], max_seq_len: int) -> list[EncodedChat]:
    """Encode plain prompt/completion text as TRL's SFTTrainer does for that format.

    The completion gets the EOS appended, `prompt` and `prompt + completion` are tokenised with the
    tokenizer's own special tokens (no chat template), and every token past the prompt's is trained.
    """
    eos = tokenizer.eos_token or ""
    out = []
    for prompt, completion in pairs:
        text = completion if completion.endswith(eos) else completion + eos
        prompt_ids = tokenizer(prompt)["input_ids"]
        ids = tokenizer(prompt + text)["input_ids"]
        start = len(prompt_ids) if ids[:len(prompt_ids)] == prompt_ids else _common_prefix(prompt_ids, ids)
        out.append(_truncate(ids, [0] * start + [1] * (len(ids) - start), max_seq_len))
    return out


def _common_prefix(a: list[int], b: list[int]) -> int:
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return n


def _truncate(ids: list[int], mask: list[int], max_seq_len: int, unplaced: tuple[int, ...] = ()) -> EncodedChat:
    marked = [i for i, m in enumerate(mask) if m]
    labels = [tok if m else IGNORE for tok, m in zip(ids[:max_seq_len], mask[:max_seq_len])]
    return EncodedChat(input_ids=list(ids[:max_seq_len]), labels=labels, full_length=len(ids),
                       final_reply_cut=bool(marked) and marked[-1] >= max_seq_len,
                       first_reply_token=marked[0] if marked else None, cut=tuple(ids[max_seq_len:]),
                       unplaced_replies=tuple(unplaced))


def substitute_pad_token(tokenizer: Any, wanted: str | None = None) -> str | None:
    """Give a tokenizer without a pad token one, and say which; None when it already has one.

    `wanted` (the spec's model.pad_token, axolotl's special_tokens.pad_token) is used as given; it
    must be a token of the vocabulary (ValueError otherwise). Padding positions are masked by
    position in `collate`, so whichever token pads never loses a label. Else unk is preferred
    because it is never a target; EOS is the fallback every model has.
    """
    if wanted is not None:
        if wanted not in tokenizer.get_vocab():
            raise ValueError(f"model.pad_token {wanted!r} is not a token of this tokenizer")
        tokenizer.pad_token = wanted
        return None
    if tokenizer.pad_token is not None:
        return None
    for name in ("unk_token", "eos_token"):
        token = getattr(tokenizer, name)
        if token is not None:
            tokenizer.pad_token = token
            return f"{name[:-6]} token {token!r}"
    raise ValueError("the tokenizer has neither pad, unk nor eos token")


def eos_labels_lost_to_pad(encoded: Sequence[EncodedChat], pad_id: int | None) -> int:
    """Trained tokens equal to the pad id: a collator that masks labels by pad id would drop them.

    With pad == EOS these are the EOS tokens ending each reply, and without them the model never
    learns to stop (DataCollatorForLanguageModeling masks `labels[input_ids == pad_token_id]`).
    """
    if pad_id is None:
        return 0
    return sum(1 for chat in encoded for label in chat.labels if label == pad_id)


def collate(batch: Sequence[EncodedChat], pad_id: int) -> dict[str, Any]:
    """Right-pad a micro batch; padding is masked by position, never by token id."""
    import torch

    width = max(len(chat.input_ids) for chat in batch)
    ids = torch.full((len(batch), width), pad_id, dtype=torch.long)
    labels = torch.full((len(batch), width), IGNORE, dtype=torch.long)
    attention = torch.zeros((len(batch), width), dtype=torch.long)
    for row, chat in enumerate(batch):
        n = len(chat.input_ids)
        ids[row, :n] = torch.tensor(chat.input_ids)
        labels[row, :n] = torch.tensor(chat.labels)
        attention[row, :n] = 1
    return {"input_ids": ids, "attention_mask": attention, "labels": labels}
