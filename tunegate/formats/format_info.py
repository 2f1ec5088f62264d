"""What a format module declares about itself, for the registry (`tunegate.formats.registry`) to find.

    FORMAT = FormatInfo(name="sharegpt", label="ShareGPT ('conversations')", keys=("conversations",),
                        order=1, priority=1)

A module of this package with a module-level `FORMAT` and the functions `problems(record)` and
`to_messages(record)` is a dataset format: detection, `data.format`'s choices, the CLI's
`--data-format` and `--from`, and the table in docs/formats.md all come from these declarations.
Optional functions: `added_keys(record)` (message keys the chat form adds to a record: see
`tunegate.formats.added_keys`) and `is_plain_text(record)` (trained without a chat template).
"""
from __future__ import annotations

from typing import NamedTuple

# The form every stage after the dataset stage reads (OpenAI chat, `tunegate.formats.openai_chat`).
CHAT = "messages"


class FormatInfo(NamedTuple):  # a NamedTuple, not a dataclass: ~0.5 ms less on every start-up
    """One dataset format: its name, how messages call it, and the keys that say a record is in it."""

    name: str  # the value of data.format and --data-format
    label: str  # how findings name it: "ShareGPT ('conversations')"
    keys: tuple[str, ...]  # a record holding every one of these keys is in this format
    order: int  # where it comes in every list (choices, the schema, docs, messages); lower first
    priority: int  # which signature detection tries first: the more specific one gets the lower number
    # training.loss_on: all trains every token of a record, replies of weight 0 too; False: only
    # the completion is ever trained, whatever loss_on says (TRL's prompt-completion).
    trains_every_token: bool = True
    known_as: str = ""  # who defined it, when the name does not say: shown in data.format's description
    convert_note: str = ""  # what `tunegate convert` tells the user about a file of this format
