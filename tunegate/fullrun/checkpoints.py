"""Which checkpoint a resumed full run continues from: the last one the Trainer finished writing.

    last = last_whole_checkpoint(output_dir, skipped.append)   # None: start at step 0

The Trainer writes a checkpoint folder's files one by one (adapter, optimizer, scheduler, RNG
state) and `trainer_state.json` last, then removes the checkpoints beyond `save_total_limit`; a
run killed while saving (SIGKILL, a preempted node) leaves the newest `checkpoint-N` half-written,
often empty, with the previous whole one still beside it. transformers' `get_last_checkpoint`
takes the highest N regardless, and resuming from that one fails. A checkpoint counts as whole
here when its `trainer_state.json` reads as a JSON object whose `global_step` is its N.
"""
from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

STATE = "trainer_state.json"  # transformers' TRAINER_STATE_NAME, written last
_FOLDER = re.compile(r"^checkpoint-(\d+)$")


def last_whole_checkpoint(folder: Path, skipped: Callable[[str], None] = lambda _: None) -> Path | None:
    """The highest-numbered whole `checkpoint-N` in `folder`, or None; each newer one that is not
    whole is named to `skipped` with why."""
    if not folder.is_dir():
        return None
    numbered = sorted(((int(m.group(1)), p) for p in folder.iterdir()
                       if p.is_dir() and (m := _FOLDER.match(p.name))), reverse=True)
    for step, path in numbered:
        why = _not_whole(path, step)
        if why is None:
            return path
        skipped(f"{path.name}: {why}")
    return None


def _not_whole(path: Path, step: int) -> str | None:
    state = path / STATE
    if not state.is_file():
        return f"no {STATE} (the run was stopped while saving it)"
    try:
        saved = json.loads(state.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return f"{STATE} is cut short (the run was stopped while writing it)"
    if not isinstance(saved, dict) or saved.get("global_step") != step:
        return f"{STATE} does not record step {step}"
    return None
