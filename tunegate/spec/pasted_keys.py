"""Find API keys pasted into a spec: every string value is scanned, not only advisor.api_key_env.

A spec is logged (data.version and model.id become MLflow params), committed and shared, so a key
in any of its strings leaks. Reported findings name the key path and what the value looks like,
never the value itself.
"""
from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

# Prefixes providers put on their keys (OpenAI sk-/sk-proj-, Anthropic sk-ant-, Groq gsk_, xAI
# xai-, Hugging Face hf_, GitHub ghp_/github_pat_, GitLab glpat-, Slack xox?-, AWS AKIA, Google
# AIza), followed by a long run of key characters.
_PREFIXED = re.compile(r"(?<![A-Za-z0-9])(sk-|sk_|pk-|rk-|gsk_|xai-|hf_|ghp_|gho_|github_pat_|glpat-|"
                       r"xox[abprs]-|AKIA|AIza)[A-Za-z0-9_\-]{16,}")
# Anything else of 32+ key characters with a run of 16+ letters and digits (between dashes or
# underscores) mixing upper case, lower case and digits. A commit sha (hex, one case) or a dataset
# label (lower case with dashes) does not mix all three; a long Hub name mixes them over its whole
# length (`Llama-4-Scout-17B-16E-Linearized-bnb-nf4-bf16`) but is words and sizes joined by dashes,
# no run of them long; a random key, base64url ones with a dash or two included, has long runs.
_TOKEN = re.compile(r"[A-Za-z0-9_\-]{32,}")
_RUN = re.compile(r"[A-Za-z0-9]{16,}")
# Already reported, with its own fix, as TG116.
SKIPPED = frozenset({"advisor.api_key_env"})


def looks_like_key(text: str) -> str | None:
    """What makes `text` look like a key ('an sk- token'), or None."""
    found = _PREFIXED.search(text)
    if found:
        return f"a token starting '{found.group(1)}' of {len(found.group(0))} characters"
    for token in _TOKEN.findall(text):
        if any(_mixes_all(run) for run in _RUN.findall(token)):
            return f"a {len(token)}-character token mixing upper case, lower case and digits"
    return None


def _mixes_all(run: str) -> bool:
    return bool(re.search(r"[a-z]", run) and re.search(r"[A-Z]", run) and re.search(r"[0-9]", run))


def key_like_values(data: Any, path: str = "") -> Iterator[tuple[str, str]]:
    """(key path, why) for every string in the spec's YAML data that looks like an API key."""
    if isinstance(data, dict):
        for key, value in data.items():
            yield from key_like_values(value, f"{path}.{key}" if path else str(key))
    elif isinstance(data, list):
        for i, value in enumerate(data):
            yield from key_like_values(value, f"{path}.{i}")
    elif isinstance(data, str) and path not in SKIPPED:
        why = looks_like_key(data)
        if why:
            yield path, why
