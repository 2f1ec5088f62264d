"""The full run's deliverable: adapter + tokenizer in `<output_dir>/adapter`, published atomically.

    folder, problem = publish_adapter(model, tokenizer, output_dir, summary={"global_step": 100})
    is_complete(output_dir / "adapter")     # True only for a folder this module finished

Everything is written into a temporary folder beside the final one, checked (the mini-run's
adapter-file checks: not empty, holds LoRA tensors, all finite), given a `COMPLETE` marker, and
only then renamed into place. A reader never sees a half-written adapter, and a folder without
the marker (a run killed mid-save, an unhealthy run) is never taken for a finished one.
"""
from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

from tunegate.report import FindingCollector
from tunegate.training.adapter_io import save_adapter

ADAPTER = "adapter"
COMPLETE = "COMPLETE"


def is_complete(folder: Path) -> bool:
    return (Path(folder) / COMPLETE).is_file()


def publish_adapter(model: Any, tokenizer: Any, output_dir: Path,
                    summary: dict[str, Any]) -> tuple[Path | None, str]:
    """Save, check and publish; return (the adapter folder, "") or (None, what is wrong with it)."""
    output_dir = Path(output_dir)
    output_dir.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{ADAPTER}-writing-", dir=output_dir))
    tmp.chmod(0o755)  # mkdtemp makes it private; the published adapter is read by others (serving, upload)
    try:
        out = FindingCollector("full-run")
        saved = save_adapter(model, tokenizer, tmp, out)
        if saved is None or out.has_errors():
            return None, "; ".join(f.message for f in out.kept if f.severity == "error")
        files = {p.name: p.stat().st_size for p in sorted(tmp.iterdir()) if p.is_file()}
        (tmp / COMPLETE).write_text(json.dumps({**summary, "files": files}, indent=2, allow_nan=True),
                                    encoding="utf-8")
        final = output_dir / ADAPTER
        _replace(tmp, final)
        return final, ""
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


def _replace(new: Path, final: Path) -> None:
    """Put `new` at `final` by renames; an older adapter there is moved aside first, then removed."""
    old = None
    if final.exists():
        old = Path(tempfile.mkdtemp(prefix=f".{ADAPTER}-old-", dir=final.parent))
        os.rename(final, old / ADAPTER)
    os.rename(new, final)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)
