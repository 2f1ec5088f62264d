"""Save a LoRA adapter and its tokenizer as the full run does, and check the adapter file itself.

The mini-run and the full run's final publish both save through here, so the file the mini-run
checks (non-empty, LoRA tensors present, all finite) is written exactly as the deliverable is.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tunegate.report import FindingCollector

ADAPTER_FILE = "adapter_model.safetensors"


@dataclass
class SavedAdapter:
    folder: Path
    state: dict[str, Any]  # the trained LoRA tensors, CPU copies, keyed as in the file
    file_bytes: int
    chat_template: str | None


def save_adapter(model: Any, tokenizer: Any, folder: Path, out: FindingCollector) -> SavedAdapter | None:
    """Save adapter and tokenizer as the full run does and check the adapter file itself."""
    from peft import get_peft_model_state_dict

    try:
        model.save_pretrained(folder)
        tokenizer.save_pretrained(folder)
    except (OSError, RuntimeError, ValueError) as exc:
        out.add("TG532", "error", f"saving the adapter failed: {type(exc).__name__}: {exc}",
                "The full run would crash at its first checkpoint; fix the cause above "
                "(disk space, permissions, tied or shared weights).", key="full_run.output_dir")
        return None
    state = {k: v.detach().float().cpu().clone() for k, v in get_peft_model_state_dict(model).items()}
    path = folder / ADAPTER_FILE
    size = path.stat().st_size if path.is_file() else 0
    saved = SavedAdapter(folder, state, size, tokenizer.chat_template)
    check_adapter_file(saved, out)
    return saved


def check_adapter_file(saved: SavedAdapter, out: FindingCollector) -> None:
    from safetensors.torch import load_file

    def bad(message: str) -> None:
        out.add("TG525", "error", message, "Do not ship this adapter: the save path of the full run is "
                "broken (see the message); fix it before the run.", key="lora")

    if saved.file_bytes == 0:
        return bad(f"{ADAPTER_FILE} was not written (or is empty) in {saved.folder.name}")
    tensors = load_file(str(saved.folder / ADAPTER_FILE))
    lora = [k for k in tensors if "lora_A" in k or "lora_B" in k]
    if not lora:
        return bad(f"{ADAPTER_FILE} ({saved.file_bytes} bytes) holds no lora_A/lora_B tensor")
    if set(tensors) != set(saved.state):
        return bad(f"{ADAPTER_FILE} holds {len(tensors)} tensors but the model has {len(saved.state)} adapter tensors")
    nonfinite = [k for k, v in tensors.items() if not bool(v.float().isfinite().all())]
    if nonfinite:
        bad(f"{len(nonfinite)} of {len(tensors)} saved adapter tensors hold NaN or Inf (e.g. {nonfinite[0]})")


