"""Records of dataset types tunegate does not fine-tune, named so the user knows what was found.

    not_sft({"prompt": "The sky is", "chosen": " blue.", "rejected": " green."})   # a TG271 Problem

TRL's dataset types (docs: "Dataset formats and types") besides the ones supervised fine-tuning
reads: preference pairs (`chosen`/`rejected`, with or without `prompt`: DPO, ORPO, CPO; also
LLaMA-Factory's Alpaca-style DPO files), unpaired preference (`prompt`/`completion`/`label`:
KTO, BCO), prompt-only (`prompt`: GRPO, online DPO) and language modeling (`text`). Given to
`check`, each is refused with what it is, rather than as a record "in no format" (TG200) or,
worse, trained: an SFT trainer fed KTO data trains the completions labelled undesirable too.
"""
from __future__ import annotations

from typing import Any

from tunegate.formats.problem import Problem

_SUPPORTED = ("tunegate gates supervised fine-tuning: OpenAI chat ('messages'), ShareGPT ('conversations'), "
              "Alpaca ('instruction'/'output') or TRL prompt-completion ('prompt'/'completion')")


def not_sft(record: dict[str, Any]) -> Problem | None:
    """TG271 when the record is of a TRL dataset type that is not supervised fine-tuning data."""
    if "chosen" in record and "rejected" in record:
        keys = "/".join(f"'{k}'" for k in ("prompt", "instruction", "chosen", "rejected") if k in record)
        return Problem("TG271", "error", ("chosen",), f"record is preference data ({keys}, as DPO, ORPO and CPO "
                       f"read it), not a fine-tuning example; {_SUPPORTED}",
                       "Gate the SFT data instead; to fine-tune on the preferred answers only, write each record "
                       "as {\"prompt\": ..., \"completion\": <chosen>} and leave the rejected ones out.")
    if "label" in record and type(record["label"]) is bool and "prompt" in record and "completion" in record:
        if record["label"]:
            return None
        return Problem("TG271", "error", ("label",), "record is unpaired preference data (KTO: 'label' false marks "
                       "the completion as undesirable); a fine-tuning trainer ignores the label and would teach "
                       "the model this completion", "Drop the records labelled false (and the 'label' key) to "
                       "fine-tune on the desirable completions; tunegate does not gate KTO or BCO runs.")
    if "prompt" in record and "completion" not in record:
        return Problem("TG271", "error", ("prompt",), "record is prompt-only data ('prompt' with no 'completion', as "
                       f"GRPO and online DPO read it): there is no reply to train; {_SUPPORTED}",
                       "Add each prompt's reply as 'completion', or gate this data with the RL tool that reads it.")
    if "text" in record and type(record["text"]) is str:
        return Problem("TG271", "error", ("text",), "record is language-modeling text ('text', as TRL's SFTTrainer "
                       "reads plain text): nothing says which part is the prompt and which the reply, so the "
                       f"contract (a prompt, the model's reply last) cannot be checked; {_SUPPORTED}",
                       "Write each example as {\"prompt\": ..., \"completion\": ...} or as \"messages\"; tunegate "
                       "does not gate continued pre-training on raw text.")
    return None
