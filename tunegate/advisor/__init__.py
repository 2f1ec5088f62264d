"""Stage 5, the advisor: faster settings on the same hardware, every suggestion checked by the estimate.

    advice, findings = advise(spec)     # the rule engine, plus an LLM when its key is set

`rules.py` is the deterministic engine (`new_hardware.py`: the smallest catalog GPUs a physically
impossible run fits on); `llm_client.py` asks an OpenAI-compatible endpoint and treats its answer as
untrusted (`endpoint_dialect.py`: the request parameters each endpoint takes; `answer.py`: the JSON
wherever a reasoning model put it); `targets.py` the trainer the advice is for and what it runs;
`verify.py` re-checks every suggestion; `claims.py` holds the LLM's words against our figures;
`advice.py` the models.
"""
from __future__ import annotations

from tunegate.front_door import front_door

# Each name's module, imported on first use (tunegate.front_door).
_HOME = {"advise": "tunegate.advisor.stage"}

__all__ = ["advise"]
__getattr__ = front_door(__name__, _HOME)
