"""Ask an OpenAI-compatible LLM for advice, treating everything it says as untrusted.

The request carries an allowlist of the spec's settings and our computed facts (architecture,
memory breakdown, throughput, mini-run measurements): never dataset content, never data paths,
never the key. The key is read from the environment variable the spec names, at the call site,
and handed only to the openai client. The answer must be one JSON object; each suggestion is
parsed into a bounded pydantic `Suggestion` (anything else is dropped with the reason).
"""
from __future__ import annotations

import ipaddress
import json
import math
import os
import re
from typing import Any
from urllib.parse import urlparse

from pydantic import ValidationError

from tunegate.advisor.advice import ALLOWED_SETTINGS, Suggestion, clean_text
from tunegate.errors import AdvisorFailure
from tunegate.facts import GateFacts
from tunegate.render import quoted
from tunegate.spec.model import Spec

# The source's four rules, verbatim in spirit, plus the answer format.
SYSTEM_PROMPT = f"""You are a senior HPC performance engineer auditing an LLM fine-tuning configuration
before launch. Follow these rules:
1. Only suggest changes compatible with the declared hardware.
2. Prioritise attention memory optimisation, data-parallel settings and precision.
3. Say explicitly when micro-batching or gradient checkpointing is needed.
4. Never suggest new hardware unless the current configuration is physically impossible.
Use only the numbers in the facts you are given; an estimator re-checks every suggestion.
Answer with ONE JSON object and nothing else:
{{"summary": "<one paragraph>", "suggestions": [{{"setting": "<one of: {', '.join(sorted(ALLOWED_SETTINGS))}>",
"current": <value>, "proposed": <value>, "companions": {{"<setting>": <value>}},
"changes_global_batch": <true|false>, "rationale": "<why>", "expected_time_saving": <fraction 0-1>,
"risks": "<what can go wrong>", "monitor": "<what to watch>"}}]}}"""
MAX_SUGGESTIONS = 12
# Why the LLM could not be used (docs/checks.md, "Advisor (TG6xx)"): the code `AdvisorFailure` carries.
NO_KEY = "TG601"
UNREACHABLE = "TG602"
BAD_ANSWER = "TG603"
NO_OPENAI = "TG605"
UNSAFE_ENDPOINT = "TG606"
# What the user can do about each: the finding's hint (the rule engine's advice stands either way).
_HINTS = {
    NO_KEY: "Export the key in the environment variable advisor.api_key_env names, or ignore this: "
            "the rule engine's advice does not need it.",
    UNREACHABLE: "Check advisor.base_url and the provider's status; raise advisor.timeout_s or max_retries.",
    BAD_ANSWER: "Use a model that follows JSON instructions, or raise advisor.max_tokens.",
    NO_OPENAI: "pip install 'tunegate[advisor]'.",
    UNSAFE_ENDPOINT: "Use an https endpoint, or a local server on 127.0.0.1.",
}
# Settings from the spec that may be sent: everything that shapes speed and memory, nothing else.
_SENT = {
    "lora": ("r", "alpha", "dropout", "target_modules"),
    "training": ("micro_batch_size", "grad_accum_steps", "epochs", "max_steps", "max_seq_len",
                 "precision", "gradient_checkpointing", "attention", "compile", "sharding"),
    "hardware": ("gpu", "count"),
    "estimate": ("wall_clock_hours", "dataset_tokens"),
}
# What the mini-run measured, named as MiniRunFacts.as_measured() names it: numbers with the device
# they were measured on (a CPU run says so), and the profiled split of its time.
_MINIRUN_KEYS = ("device", "gpu", "precision", "tokens_per_s", "tokens_per_s_steady", "step_s",
                 "train_peak_memory_gib", "micro_batch_size", "batch_seq_len", "final_loss", "grad_norm_max",
                 "profile")
_PROFILE_KEYS = ("device", "gpu", "steps", "wall_s", "matmul", "attention", "optimizer", "data", "other",
                 "idle", "peak_memory_bytes")


def build_payload(spec: Spec, estimate: dict[str, Any], facts: GateFacts) -> dict[str, Any]:
    """What the LLM sees: allowlisted settings and computed numbers only."""
    settings = {section: {k: getattr(getattr(spec, section), k) for k in keys}
                for section, keys in _SENT.items()}
    model_id = spec.model.id
    local = os.path.exists(os.path.expanduser(model_id)) or model_id.startswith((".", "/", "~"))
    settings["model"] = {"id": "local model" if local else model_id, "quantization": spec.model.quantization}
    measured = facts.mini_run.as_measured() if facts.mini_run is not None else {}
    minirun = {k: v for k, v in measured.items()
               if k in _MINIRUN_KEYS and isinstance(v, (int, float, str)) and len(str(v)) < 64}
    if isinstance(measured.get("profile"), dict):
        minirun["profile"] = {k: v for k, v in measured["profile"].items()
                              if k in _PROFILE_KEYS and isinstance(v, (int, float, str)) and len(str(v)) < 64}
    facts_sent = {k: v for k, v in estimate.items() if k != "model"}
    # The estimate's model section names the config file, which may be a local path.
    facts_sent["model"] = {k: estimate.get("model", {}).get(k) for k in ("total_params", "trainable_params")}
    return {"settings": settings, "estimate": facts_sent, "mini_run": minirun}


def endpoint_problem(base_url: str) -> str | None:
    """Why the spec's endpoint may not be sent the config (plain http to a remote host), or None."""
    url = urlparse(base_url)
    if url.scheme == "https":
        return None
    if url.scheme != "http":
        return f"advisor.base_url must be an http(s) URL, got scheme '{url.scheme}'"
    host = url.hostname or ""
    try:
        loopback = host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = False
    return None if loopback else f"advisor.base_url uses plain http to a non-local host ({host})"


def failure_hint(failure: AdvisorFailure) -> str:
    """The fix for a failure `ask` or `parse_answer` raised, as the advisor's finding shows it."""
    return _HINTS[failure.code]


def ask(spec: Spec, payload: dict[str, Any]) -> str:
    """Send the payload and return the answer's text. Raises AdvisorFailure on any failure."""
    key = os.environ.get(spec.advisor.api_key_env, "").strip()
    if not key:
        raise AdvisorFailure(NO_KEY, f"no API key: environment variable {spec.advisor.api_key_env} is not set")
    problem = endpoint_problem(spec.advisor.base_url)
    if problem:
        raise AdvisorFailure(UNSAFE_ENDPOINT, problem)
    try:
        import openai  # lazy: the advisor is optional
    except ImportError:
        raise AdvisorFailure(NO_OPENAI, "the openai package is not installed") from None
    client = openai.OpenAI(api_key=key, base_url=spec.advisor.base_url,
                           timeout=spec.advisor.timeout_s, max_retries=spec.advisor.max_retries)
    try:
        response = client.chat.completions.create(
            model=spec.advisor.model, temperature=0, max_tokens=spec.advisor.max_tokens,
            response_format={"type": "json_object"},
            messages=[{"role": "system", "content": SYSTEM_PROMPT},
                      {"role": "user", "content": json.dumps(payload, default=str)}])
    except openai.APITimeoutError:
        raise AdvisorFailure(UNREACHABLE, f"the advisor did not answer within {spec.advisor.timeout_s:g} s "
                             f"({spec.advisor.max_retries} retries)") from None
    except openai.APIStatusError as exc:
        raise AdvisorFailure(UNREACHABLE, f"the advisor answered HTTP {exc.status_code} "
                             f"after {spec.advisor.max_retries} retries") from None
    except openai.OpenAIError as exc:
        raise AdvisorFailure(UNREACHABLE, f"the advisor could not be reached: {type(exc).__name__}") from None
    finally:
        client.close()
    return _content(response)


def _content(response: Any) -> str:
    try:
        choice = response.choices[0]
        text = choice.message.content or ""
    except (AttributeError, IndexError, TypeError):
        raise AdvisorFailure(BAD_ANSWER, "the advisor's answer has no message") from None
    if choice.finish_reason == "length":
        raise AdvisorFailure(BAD_ANSWER, "the advisor's answer was cut off at max_tokens; raise advisor.max_tokens")
    return text


def parse_answer(text: str) -> tuple[str, list[Suggestion], list[str]]:
    """(summary, suggestions, reasons for dropped items) from the LLM's JSON text.

    Raises AdvisorFailure when the text is not one JSON object with a suggestions list.
    """
    body = re.sub(r"^\s*```(?:json)?\s*|\s*```\s*$", "", text.strip())
    try:
        data = json.loads(body)
    except json.JSONDecodeError as exc:
        raise AdvisorFailure(BAD_ANSWER, f"the advisor's answer is not JSON ({exc.msg} at {exc.pos})") from None
    if not isinstance(data, dict) or not isinstance(data.get("suggestions"), list):
        raise AdvisorFailure(BAD_ANSWER, "the advisor's answer has no 'suggestions' list")
    kept, dropped = [], []
    for i, item in enumerate(data["suggestions"][:MAX_SUGGESTIONS]):
        try:
            kept.append(_suggestion(item))
        except (ValidationError, ValueError, TypeError) as exc:
            dropped.append(f"suggestion {i + 1}{_named(item)} dropped: {quoted(_what_failed(exc), 200)}")
    return clean_text(data.get("summary", ""), 1500), kept, dropped


def _named(item: Any) -> str:
    """' (training.compile)' when the dropped item names an allowed setting, so the user can find it."""
    setting = item.get("setting") if isinstance(item, dict) else None
    return f" ({setting})" if isinstance(setting, str) and setting in ALLOWED_SETTINGS else ""


def _what_failed(exc: Exception) -> str:
    """The field that failed and why ('proposed: Field required'), not pydantic's message alone."""
    if not isinstance(exc, ValidationError):
        return str(exc)
    first = exc.errors()[0]
    where = ".".join(str(p) for p in first["loc"])
    return f"{where}: {first['msg']}" if where else first["msg"]


def _suggestion(item: Any) -> Suggestion:
    if not isinstance(item, dict):
        raise ValueError("not an object")
    fields = ("setting", "current", "proposed", "companions", "changes_global_batch", "rationale",
              "risks", "monitor")
    data = {k: item[k] for k in fields if k in item and item[k] is not None}
    for text_key in ("rationale", "risks", "monitor"):
        if text_key in data and not isinstance(data[text_key], str):
            data[text_key] = json.dumps(data[text_key])[:800]
    claimed = item.get("expected_time_saving")  # the LLM's claim; the saving shown is ours
    if isinstance(claimed, (int, float)) and not isinstance(claimed, bool) and math.isfinite(claimed):
        data["claimed_time_saving"] = float(claimed)
    return Suggestion(source="llm", **data)
