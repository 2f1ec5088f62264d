"""Ask an OpenAI-compatible LLM for advice, treating everything it says as untrusted.

The request carries an allowlist of the spec's settings and our computed facts (architecture,
memory breakdown, throughput, mini-run measurements): never dataset content, never data paths,
never the key. The key is read from the environment variable the spec names, at the call site,
and handed only to the openai client. The prompt offers only the settings the target trainer can
run (`tunegate.advisor.targets`). The request's optional parameters follow what the endpoint
accepts (`tunegate.advisor.endpoint_dialect`: one retry after a 400 that names them), and the
answer's JSON is found wherever a reasoning model put it (`tunegate.advisor.answer`).
"""
from __future__ import annotations

import ipaddress
import json
import os
from typing import Any
from urllib.parse import urlparse

from tunegate.advisor.answer import BAD_ANSWER, answer_text
from tunegate.advisor.endpoint_dialect import Dialect, adjusted, dialect_for, remember
from tunegate.advisor.targets import Trainer, trainer_for
from tunegate.errors import AdvisorFailure
from tunegate.facts import GateFacts
from tunegate.render import one_line, quoted
from tunegate.spec.model import Spec

# The source's four rules, verbatim in spirit, plus the answer format.
_RULES = """You are a senior HPC performance engineer auditing an LLM fine-tuning configuration
before launch. Follow these rules:
1. Only suggest changes compatible with the declared hardware.
2. Prioritise attention memory optimisation, data-parallel settings and precision.
3. Say explicitly when micro-batching or gradient checkpointing is needed.
4. Never suggest new hardware unless the current configuration is physically impossible.
Use only the numbers in the facts you are given; an estimator re-checks every suggestion."""
_FORMAT = """Answer with ONE JSON object and nothing else:
{{"summary": "<one paragraph>", "suggestions": [{{"setting": "<one of: {settings}>",
"current": <value>, "proposed": <value>, "companions": {{"<setting>": <value>}},
"changes_global_batch": <true|false>, "rationale": "<why>", "expected_time_saving": <fraction 0-1>,
"risks": "<what can go wrong>", "monitor": "<what to watch>"}}]}}"""
# Why the LLM could not be used (docs/checks.md, "Advisor (TG6xx)"): the code `AdvisorFailure` carries.
NO_KEY = "TG601"
UNREACHABLE = "TG602"
NO_OPENAI = "TG605"
UNSAFE_ENDPOINT = "TG606"
# What the user can do about each: the finding's hint (the rule engine's advice stands either way).
_HINTS = {
    NO_KEY: "Export the key in the environment variable advisor.api_key_env names, or ignore this: "
            "the rule engine's advice does not need it.",
    UNREACHABLE: "Check advisor.base_url, advisor.model and the provider's status; on timeouts or HTTP 429/5xx, "
                 "raise advisor.timeout_s or max_retries.",
    BAD_ANSWER: "Use a model that follows JSON instructions, or raise advisor.max_tokens.",
    NO_OPENAI: "pip install 'tunegate[advisor]'.",
    UNSAFE_ENDPOINT: "Use an https endpoint, or a local server on 127.0.0.1.",
}
# Settings from the spec that may be sent: everything that shapes speed and memory, nothing else.
_SENT = {
    "lora": ("r", "alpha", "dropout", "target_modules"),
    "training": ("micro_batch_size", "grad_accum_steps", "epochs", "max_steps", "max_seq_len",
                 "precision", "gradient_checkpointing", "attention", "compile", "compile_mode", "sharding"),
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


def system_prompt(trainer: Trainer, impossible: bool = False) -> str:
    """The source's rules, the trainer the advice is for, and the answer format with the settings it may touch."""
    settings = trainer.settings(new_hardware=impossible)
    where = (f"The configuration runs on {trainer.name}; suggest only settings it runs."
             + (" It is physically impossible on the declared hardware: hardware.gpu and hardware.count "
                "may be suggested." if impossible else ""))
    return f"{_RULES}\n{where}\n{_FORMAT.format(settings=', '.join(settings))}"


def build_payload(spec: Spec, estimate: dict[str, Any], facts: GateFacts, impossible: bool = False) -> dict[str, Any]:
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
    facts_sent["physically_impossible_on_declared_hardware"] = impossible  # ours: fits_at_minimum
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


def ask(spec: Spec, payload: dict[str, Any], system: str | None = None) -> str:
    """Send the payload and return the text that holds the answer. Raises AdvisorFailure on any failure."""
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
    state = {"dialect": dialect_for(spec.advisor.base_url, spec.advisor.model)}
    sent: list[Dialect] = []  # the dialect of each HTTP request, the openai client's own retries included
    hooks = {"request": [lambda request: sent.append(state["dialect"])]}
    client = openai.OpenAI(api_key=key, base_url=spec.advisor.base_url, timeout=spec.advisor.timeout_s,
                           max_retries=spec.advisor.max_retries, http_client=openai.DefaultHttpxClient(event_hooks=hooks))
    messages = [{"role": "system", "content": system or system_prompt(trainer_for("tunegate"))},
                {"role": "user", "content": json.dumps(payload, default=str)}]
    try:
        response = _send(openai, client, spec, messages, state)
    except openai.OpenAIError as exc:
        raise _failure(openai, exc, spec, sent, key) from None
    finally:
        client.close()
    return answer_text(response)


def _send(openai: Any, client: Any, spec: Spec, messages: list[dict[str, str]], state: dict[str, Dialect]) -> Any:
    """The completion; after a 400 naming parameters we send, once more as the endpoint asks (remembered)."""
    try:
        return _create(client, spec, state["dialect"], messages)
    except openai.BadRequestError as exc:
        better = adjusted(state["dialect"], exc.body if exc.body is not None else exc.message)
        if better is None:
            raise
        remember(spec.advisor.base_url, spec.advisor.model, better)
        state["dialect"] = better
        return _create(client, spec, better, messages)


def _create(client: Any, spec: Spec, dialect: Dialect, messages: list[dict[str, str]]) -> Any:
    return client.chat.completions.create(model=spec.advisor.model, messages=messages,
                                          **dialect.params(spec.advisor.max_tokens))


def _failure(openai: Any, exc: Exception, spec: Spec, sent: list[Dialect], key: str) -> AdvisorFailure:
    """TG602 for what the openai client raised, with the requests really sent."""
    if isinstance(exc, openai.APITimeoutError):
        return AdvisorFailure(UNREACHABLE, f"the advisor did not answer within {spec.advisor.timeout_s:g} s "
                              f"({_requests(sent)})")
    if isinstance(exc, openai.APIStatusError):
        said = f": {quoted(_server_words(exc, key), 200)}" if exc.status_code == 400 else ""
        return AdvisorFailure(UNREACHABLE, f"the advisor answered HTTP {exc.status_code} after {_requests(sent)}{said}")
    return AdvisorFailure(UNREACHABLE, f"the advisor could not be reached: {type(exc).__name__} ({_requests(sent)})")


def _requests(sent: list[Dialect]) -> str:
    """How many requests were sent, as the finding says it: '1 request', '3 requests (2 retries)'."""
    n = len(sent)
    text = f"{n} request{'s' if n != 1 else ''}" + (f" ({n - 1} retr{'ies' if n > 2 else 'y'})" if n > 1 else "")
    changed = sent[-1].differences() if sent and sent[-1] != sent[0] else ""
    return text + (f"; the last with {changed}, as its first HTTP 400 asked" if changed else "")


def _server_words(exc: Any, key: str) -> str:
    """What a 400's body says (its error message), the key never repeated even if it echoes it."""
    body = exc.body
    text = body.get("message") or body.get("detail") if isinstance(body, dict) else body
    return one_line(text or exc.message).replace(key, "[key]")
