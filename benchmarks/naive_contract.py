"""The baselines' chat contract: the rules of tunegate's contract (tunegate/dataset/contract.py), written
plainly with the standard library, the way the source's validator would. Shared by the benchmarks that
time tunegate against it (static_throughput, check_cli, format_throughput)."""
from __future__ import annotations

ROLES = ("system", "user", "assistant")


def contract_problems(record: object) -> list[str]:
    """Every rule the record breaks, one line each."""
    msgs = record.get("messages") if isinstance(record, dict) else None
    if not isinstance(msgs, list) or len(msgs) < 2:
        return ["messages missing, not a list, or fewer than 2"]
    problems, prev = [], None
    for i, m in enumerate(msgs):
        if not isinstance(m, dict):
            problems.append("message not an object")
            continue
        role, content = m.get("role"), m.get("content")
        if role not in ROLES:
            problems.append("unsupported role")
        if not isinstance(content, str) or not content.strip():
            problems.append("empty content")
        if role == "system" and i > 0:
            problems.append("system not first")
        if role == "assistant" and prev == "assistant":
            problems.append("two assistant turns")
        prev = role
    if not isinstance(msgs[-1], dict) or msgs[-1].get("role") != "assistant":
        problems.append("last message not from the assistant")
    return problems
