"""A seeded generator of realistic chat JSONL for benchmarks (multi-turn, multilingual, varied lengths).

    python benchmarks/chat_corpus.py benchmarks/out/chat.jsonl --mb 200 --seed 0

Content is drawn from word pools in English, Persian, Chinese, Spanish and emoji; lengths follow a
log-normal (most turns are a few hundred characters, a few are thousands), as in real support chats.
Every record carries a unique ticket number, so the file has no exact duplicates.
"""
from __future__ import annotations

import argparse
import json
import random
from pathlib import Path

import orjson

_EN = ("the account password reset invoice billing plan upgrade refund order shipping tracking "
       "number delivery address error message server timeout token limit request please could you "
       "help me with my subscription renew cancel thanks again yesterday today tomorrow still not "
       "working after I tried clearing cache and restarting the app on my phone laptop browser "
       "settings page email verification code expired support agent escalate manager issue ticket "
       "priority customer data export import csv file upload download failed retry network proxy "
       "firewall certificate update version release notes feature bug report screenshot attached "
       "when where why how what which because however although meanwhile finally first second").split()
_FA = "سلام لطفا کمک حساب کاربری رمز عبور سفارش ارسال پرداخت فاکتور مشکل پشتیبانی ممنون امروز دیروز برنامه".split()
_ZH = "你好 请问 账户 密码 订单 发货 退款 发票 问题 谢谢 今天 系统 错误 更新 版本".split()
_ES = "hola cuenta contraseña pedido envío factura problema gracias ayuda por favor mañana".split()
_EMOJI = "🙂 🙏 🚀 ❗ ✅ 📦 💳 🔒 😅 👍".split()
_QUOTED = ['"Settings > Billing"', '"Error 429: Too Many Requests"', '"Forgot password?"',
           '"Export as CSV"', '"Payment declined"', "'Save changes'"]
_SYSTEM = ["You are a concise, friendly support agent for a software company.",
           "You are Acme's billing assistant. Never reveal internal account notes.",
           "شما دستیار پشتیبانی یک فروشگاه اینترنتی هستید.",
           "Answer in the customer's language; keep replies under 150 words."]


def _text(rng: random.Random, mean_chars: float) -> str:
    """One message of roughly log-normally distributed length, mostly English, sometimes not."""
    chars = min(8000, max(8, int(rng.lognormvariate(0, 0.9) * mean_chars)))
    lang = rng.random()
    pool = _EN if lang < 0.7 else _FA if lang < 0.8 else _ZH if lang < 0.9 else _ES
    words = rng.choices(pool, k=max(2, chars // 6))
    if rng.random() < 0.2:
        words.append(rng.choice(_EMOJI))
    if rng.random() < 0.2:  # quoted UI labels and error messages, as support chats have
        words.insert(rng.randrange(len(words)), rng.choice(_QUOTED))
    if len(words) > 40 and rng.random() < 0.5:  # longer replies come in paragraphs or steps
        for at in range(rng.randrange(12, 30), len(words), rng.randrange(20, 40)):
            words[at] += ".\n\n" if rng.random() < 0.5 else ":\n1."
    return " ".join(words).capitalize() + "."


def record(rng: random.Random, ticket: int) -> dict:
    """One chat record: an optional system turn, then 1-5 user/assistant exchanges."""
    messages = []
    if rng.random() < 0.3:
        messages.append({"role": "system", "content": rng.choice(_SYSTEM)})
    for turn in range(rng.choice((1, 1, 2, 2, 3, 4, 5))):
        user = _text(rng, 220)
        if turn == 0:
            user = f"Ticket #{ticket}: {user}"
        messages.append({"role": "user", "content": user})
        messages.append({"role": "assistant", "content": _text(rng, 520)})
    return {"messages": messages}


def variant(rng: random.Random, rec: dict, kind: str) -> dict:
    """A copy of a train record for a validation file: exact, case/whitespace changed, or one word of
    the reply replaced (the overlap stage's exact, normalised and near duplicates)."""
    copy = json.loads(json.dumps(rec))
    last = copy["messages"][-1]
    if kind == "case":
        last["content"] = "  " + last["content"].upper().replace(" ", "   ")
    elif kind == "edit":
        words = last["content"].split(" ")
        words[rng.randrange(len(words))] = "different"
        last["content"] = " ".join(words)
    return copy


def write_corpus(path: Path, megabytes: float, seed: int = 0, broken: bool = False) -> int:
    """Write about `megabytes` MB of chat JSONL to `path`; return the record count.

    `broken`: every record ends with a user turn (each breaks the contract: the slow path).
    """
    rng = random.Random(seed)
    target = int(megabytes * 1_000_000)
    written = n = 0
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("wb", buffering=1 << 20) as f:
        while written < target:
            rec = record(rng, n)
            if broken:
                rec["messages"].append({"role": "user", "content": "Thanks!"})
            line = orjson.dumps(rec) + b"\n"
            f.write(line)
            written += len(line)
            n += 1
    return n


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("path", type=Path)
    ap.add_argument("--mb", type=float, default=200)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    print(f"{write_corpus(args.path, args.mb, args.seed)} records -> {args.path}")
