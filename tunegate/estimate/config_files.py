"""Where a model's config.json comes from: a local folder or file, the configs shipped with
tunegate, the Hugging Face cache, or one short request to the hub.

    config, source = find_config("meta-llama/Llama-3.1-8B")   # source: "shipped:meta-llama--Llama-3.1-8B.json"

The hub is asked only when it is reachable and not switched off with HF_HUB_OFFLINE, with a hard
timeout: a static check must never stall on the network.
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from tunegate.spec import checkpoint

# The hub lookup must never stall a static check: give up after this many seconds.
HUB_TIMEOUT_S = 5.0


def find_config(model_id: str, revision: str | None = None,
                base: Path | None = None) -> tuple[dict[str, Any], str] | None:
    """The model's config dict and where it came from, or None when no source has it.

    On this disk first (beside the spec in `base`, as written, shipped: the spec stage's own lookup,
    tunegate.spec.checkpoint), then the HF cache and the hub, then, for a chat-tuned release none of
    them has (an offline laptop and `Meta-Llama-3-8B-Instruct`), the shipped config of its base
    (`shipped-base:`), whose architecture it keeps.

    Raises:
        ValueError: a config file exists but is not valid JSON.
    """
    path = checkpoint.local_config_path(model_id, base)
    if path is not None:
        shipped = path.parent == checkpoint.SHIPPED
        return checkpoint.read_config(path), f"shipped:{path.name}" if shipped else str(path)
    fetched = _from_hub(model_id, revision)
    if fetched is not None:
        return fetched, f"hub:{model_id}"
    base_config = checkpoint.shipped_base_config(model_id)
    return (checkpoint.read_config(base_config), f"shipped-base:{base_config.name}") if base_config else None


def _from_hub(model_id: str, revision: str | None) -> dict[str, Any] | None:
    """config.json from the local HF cache, else one short request to the hub; None if unavailable."""
    if "/" not in model_id or model_id.startswith((".", "/", "~")):
        return None
    try:
        import huggingface_hub as hub  # lazy: only when no local or shipped config exists
        cached = hub.try_to_load_from_cache(model_id, "config.json", revision=revision)
    except Exception:  # not installed, or a malformed repo id
        cached = None
    if isinstance(cached, str):
        return checkpoint.read_config(Path(cached))
    if os.environ.get("HF_HUB_OFFLINE", "").lower() in {"1", "true", "yes"}:
        return None
    return _fetch(model_id, revision or "main")


def _fetch(model_id: str, revision: str) -> dict[str, Any] | None:
    # One plain request with a hard timeout: huggingface_hub's own client retries for ~25 s
    # when offline, which a static check must never do.
    import urllib.error
    import urllib.parse
    import urllib.request

    endpoint = os.environ.get("HF_ENDPOINT", "https://huggingface.co").rstrip("/")
    url = f"{endpoint}/{urllib.parse.quote(model_id)}/resolve/{urllib.parse.quote(revision, safe='')}/config.json"
    request = urllib.request.Request(url)
    token = os.environ.get("HF_TOKEN")
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, timeout=HUB_TIMEOUT_S) as response:  # noqa: S310 (https endpoint)
            data = json.loads(response.read(1_000_000).decode("utf-8"))
    except (OSError, ValueError, urllib.error.URLError):
        return None
    return data if isinstance(data, dict) else None

