"""What a candidate's training is told about pruning: one pydantic plan, passed on its command line.

    plan = PrunePlan(rule="median", board="/p/.tunegate/prune/sweep.sqlite", sweep="<parent run>",
                     eval_every=5, train_steps=20).for_candidate("3f2a9c01b7de")
    python -m tunegate.fullrun.trainer --spec ... --eval-every 5 --pruning '<plan as JSON>'

The sweep builds it once (`tunegate.sweep.budget`), each candidate adds its own key; the trainer
reads it in another process (a fork-server child, a Dask or Ray worker's, a deployment run's), so
it holds only what travels as JSON: the rule and its settings, and the board's file.
"""
from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

Rule = Literal["median", "asha"]


class PrunePlan(BaseModel):
    """One sweep's pruning rule, where its candidates report, and (per candidate) who reports."""

    model_config = ConfigDict(extra="forbid")

    rule: Rule
    board: str = Field(description="The SQLite file every candidate of the sweep reports its losses to.")
    sweep: str = Field(min_length=1, description="This sweep's rows in the board (its MLflow parent run).")
    candidate: str = Field("", description="The reporting candidate's key; set by `for_candidate`.")
    eval_every: int = Field(ge=1, description="Steps between evaluations: the steps losses are reported at.")
    train_steps: int = Field(ge=1, description="The candidate's whole budget: its last evaluation stops nothing.")
    warmup_steps: int = Field(0, ge=0, description="median: no stop before this step.")
    startup: int = Field(2, ge=1, description="median: completed candidates at a step before any is stopped there.")
    eta: int = Field(3, ge=2, description="asha: the reduction factor.")

    def for_candidate(self, key: str) -> PrunePlan:
        """This plan as one candidate's training reads it."""
        return self.model_copy(update={"candidate": key})

    def rule_name(self) -> str:
        """`sweep.prune: median`: how the spec names the rule, for reasons a person reads."""
        return f"sweep.prune: {self.rule}"
