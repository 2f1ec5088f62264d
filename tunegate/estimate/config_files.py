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

SHIPPED = Path(__file__).resolve().parents[1] / "data" / "model_configs"
# The hub lookup must never stall a static check: give up after this many seconds.
HUB_TIMEOUT_S = 5.0


def shipped_config_path(model_id: str) -> Path:
    """Where a shipped config for `org/name` lives: `data/model_configs/org--name.json`."""
    return SHIPPED / (model_id.strip("/").replace("/", "--") + ".json")


def find_config(model_id: str, revision: str | None = None) -> tuple[dict[str, Any], str] | None:
    """The model's config dict and where it came from, or None when no source has it.

    Raises:
        ValueError: a config file exists but is not valid JSON.
    """
    local = Path(model_id).expanduser()
    if local.is_dir() and (local / "config.json").is_file():
        return _read_json(local / "config.json"), str(local / "config.json")
    if local.is_file() and local.suffix == ".json":
        return _read_json(local), str(local)
    shipped = shipped_config_path(model_id)
    if shipped.is_file():
        return _read_json(shipped), f"shipped:{shipped.name}"
    fetched = _from_hub(model_id, revision)
    return (fetched, f"hub:{model_id}") if fetched is not None else None


def _read_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"{path}: not a readable JSON config ({exc})") from None
    if not isinstance(data, dict):
        raise ValueError(f"{path}: config.json must hold a JSON object")
    return data


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
        return _read_json(Path(cached))
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

