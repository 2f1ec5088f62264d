"""Stage 5, the advisor: faster settings on the same hardware, every suggestion checked by the estimate.

    advice, findings = advise(spec)     # the rule engine, plus an LLM when its key is set

`rules.py` is the deterministic engine; `llm_client.py` asks an OpenAI-compatible endpoint and
treats its answer as untrusted; `verify.py` re-checks every suggestion; `advice.py` the models.
"""
from tunegate.advisor.stage import advise

__all__ = ["advise"]
