"""Records of dataset types tunegate does not fine-tune, named so the user knows what was found.

    not_sft({"prompt": "The sky is", "chosen": " blue.", "rejected": " green."})   # a TG271 Problem
    not_sft({"messages": [...], "images": ["1.jpg"]})                               # a TG272 Problem
    media_placeholder("<image>Who is he?", ("messages", 0, "content"))              # a TG269 Problem

The dataset types of TRL (docs: "Dataset formats and types") and LLaMA-Factory (data/README.md)
besides the ones supervised fine-tuning reads, each in every layout those tools write:
- preference pairs (`chosen`/`rejected`: DPO, ORPO, CPO, reward models): TRL's with or without
  `prompt`, as text or conversations; LLaMA-Factory's Alpaca-style (`instruction`/`input`) and
  ShareGPT-style (`conversations`, or `messages`, with `chosen`/`rejected` turns);
- unpaired preference (KTO, BCO): a boolean `label` (or LLaMA-Factory's `kto_tag`) beside a
  prompt-completion pair, a conversation or an Alpaca record;
- multimodal records (`images`, `videos`, `audios`; LLaVA's `image`): the media are dropped when the
  record is trained as text, and each `<image>` placeholder is read as literal text;
- prompt-only (`prompt`: GRPO, online DPO) and language modeling (`text`: pre-training documents).
Given to `check`, each is refused with what it is (TG271, TG272) rather than as a record "in no
format" (TG200), misread as an unfinished conversation (TG204), or, worse, trained: an SFT
trainer fed KTO data trains the completions labelled undesirable too. A media placeholder in a
text record with no media (TG269, warning) is said where it is written.
"""
from __future__ import annotations

import re
from typing import Any

from tunegate.formats.problem import Path, Problem, dotted

OTHER_TYPE = "TG271"  # a record of a dataset type tunegate does not gate
TEXT_PATH = ("text",)  # where TG271 points in a language-modeling text record (and only there)
_SUPPORTED = ("tunegate gates supervised fine-tuning: OpenAI chat ('messages'), ShareGPT ('conversations'), "
              "Alpaca ('instruction'/'output') or TRL prompt-completion ('prompt'/'completion')")
# The keys a preference record holds its prompt and answers in, in each tool's layouts (named in TG271).
_PAIR_KEYS = ("prompt", "instruction", "conversations", "messages", "chosen", "rejected")
# Media keys: LLaMA-Factory's columns (and TRL's vision datasets' `images`), LLaVA's single `image`.
MEDIA_KEYS = ("images", "videos", "audios", "image", "video", "audio")
# LLaMA-Factory's placeholders (IMAGE_PLACEHOLDER, ...), one per medium in the text.
_PLACEHOLDER = re.compile(r"<(image|video|audio)>")
_CODE = re.compile(r"```.*?(?:```|\Z)|`[^`\n]*`", re.S)  # HTML5's <video> and <audio> in code are code


def not_sft(record: dict[str, Any]) -> Problem | None:
    """TG271 or TG272 when the record is of a dataset type that is not text supervised fine-tuning data."""
    other = other_kind(record)
    if other is not None:
        return other
    if "prompt" in record and "completion" not in record:
        return Problem("TG271", "error", ("prompt",), "record is prompt-only data ('prompt' with no 'completion', as "
                       f"GRPO and online DPO read it): there is no reply to train; {_SUPPORTED}",
                       "Add each prompt's reply as 'completion', or gate this data with the RL tool that reads it.")
    if "text" in record and type(record["text"]) is str:
        return Problem(OTHER_TYPE, "error", TEXT_PATH, "record is language-modeling text ('text', as TRL's SFTTrainer "
                       "reads plain text): nothing says which part is the prompt and which the reply, so the "
                       f"contract (a prompt, the model's reply last) cannot be checked; {_SUPPORTED}",
                       "Write each example as {\"prompt\": ..., \"completion\": ...} or as \"messages\"; tunegate "
                       "does not gate continued pre-training on raw text.")
    return None


def other_kind(record: dict[str, Any]) -> Problem | None:
    """TG271 or TG272 for a record that holds an example in some format but is another type of data:
    preference pairs, KTO feedback labelled undesirable, or media. (Prompt-only and text records
    hold no example, so only `not_sft` names them: a chat record may keep its prompt or its
    rendered text beside its messages.)"""
    if "chosen" in record and "rejected" in record:
        keys = "/".join(f"'{k}'" for k in _PAIR_KEYS if k in record)
        return Problem("TG271", "error", ("chosen",), f"record is preference data ({keys}, as DPO, ORPO and CPO "
                       f"read it), not a fine-tuning example; {_SUPPORTED}",
                       "Gate the SFT data instead; to fine-tune on the preferred answers only, write each record "
                       "as {\"prompt\": ..., \"completion\": <chosen>} and leave the rejected ones out.")
    tag = next((k for k in ("label", "kto_tag") if type(record.get(k)) is bool), None)
    if tag is not None and not record[tag] and _has_example(record):
        return _undesirable(record, tag)
    return _media(record)


def media_placeholder(text: str, path: Path) -> Problem | None:
    """TG269 (warning) when `text` (at `path`) holds an `<image>`, `<video>` or `<audio>` placeholder
    outside code: the record carries no media (else it is TG272), so the tag trains as literal text."""
    found = _PLACEHOLDER.findall(_CODE.sub("", text)) if "<" in text else []
    if not found:
        return None
    names = ", ".join(f"<{m}>" for m in dict.fromkeys(found))
    return Problem("TG269", "warning", path, f"{dotted(path)} holds the multimodal placeholder(s) {names} but the "
                   "record has no images, videos or audios: a text trainer learns the tag as text, and "
                   "LLaMA-Factory stops on the mismatch (\"The number of images does not match the number of "
                   "<image> tokens\")", "Drop the placeholder from text-only records, or restore the record's "
                   "media (multimodal data is not gated by tunegate).")


def _has_example(record: dict[str, Any]) -> bool:
    """Whether the record holds an example in one of the layouts a KTO label sits beside."""
    return ("prompt" in record and "completion" in record) or "messages" in record or "conversations" in record \
        or ("instruction" in record and "output" in record)


def _undesirable(record: dict[str, Any], tag: str) -> Problem:
    noun = next((n for n in ("completion", "output") if n in record), "reply")
    nouns, where = ("replies", "last reply") if noun == "reply" else (f"{noun}s", noun)
    return Problem("TG271", "error", (tag,), f"record is unpaired preference data (KTO: '{tag}' false marks the "
                   f"{where} as undesirable); a fine-tuning trainer ignores the label and would teach the model this "
                   f"{noun}", f"Drop the records labelled false (and the '{tag}' key) to fine-tune on the desirable "
                   f"{nouns}; tunegate does not gate KTO or BCO runs.")


def _media(record: dict[str, Any]) -> Problem | None:
    """TG272 when the record carries images, videos or audio (a non-empty list, or one path)."""
    key = next((k for k in MEDIA_KEYS if _carries(record.get(k))), None)
    if key is None:
        return None
    value = record[key]
    count = f"{len(value)} item(s)" if type(value) is list else "one item"
    return Problem("TG272", "error", (key,), f"record is multimodal ('{key}': {count}, as LLaMA-Factory and TRL's "
                   "vision-language trainers read it): tunegate gates text fine-tuning only, and trained as text the "
                   "media are dropped and each <image> placeholder is read as text", f"Gate the text-only records "
                   f"(without the '{key}' key and its placeholders), or check this data with the multimodal trainer "
                   "itself; tunegate does not gate vision, video or audio fine-tuning.")


def _carries(value: Any) -> bool:
    return (type(value) is list and len(value) > 0) or (type(value) is str and bool(value)) or type(value) is dict
