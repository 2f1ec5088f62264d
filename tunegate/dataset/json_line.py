"""One JSONL line, the slow path: why a line failed to parse, and where a part of a record sits.

Only lines that fail (or records that break the contract) come here, so clarity beats speed.
Columns are 1-based and count characters (code points), as editors do; orjson's error positions
are already character offsets. The findings on what a line is (TG220-TG228, TG243) are worded
here for every container: a `.json` array or a CSV file that breaks the same way gets the code
of its break from `INVALID_JSON`, `INVALID_UTF8`, `TOO_DEEP` and `TOO_LONG`.
"""
from __future__ import annotations

import json
import re
from json.decoder import scanstring
from typing import Any, Protocol

import orjson

from tunegate.errors import NumberOutOfRange

_WS = re.compile(r"[ \t\n\r]*")
_DECODER = json.JSONDecoder()
_NOT_JSON_NUMBERS = ("-Infinity", "Infinity", "NaN")
INVALID_JSON, INVALID_UTF8, TOO_DEEP, TOO_LONG = "TG220", "TG221", "TG224", "TG228"
_DEEP = ("No chat record nests that deep (a message is 3 levels); the line is corrupt or adversarial. Flatten or "
         "drop it.")


class LineSink(Protocol):
    """Where line findings go (the JsonlReader reports them as errors of its file)."""

    def error(self, code: str, message: str, hint: str, line: int | None = None,
              column: int | None = None, record: int | None = None) -> None: ...


def char_column(raw: bytes, byte_offset: int) -> int:
    """1-based character column of `byte_offset` in a UTF-8 line."""
    return len(raw[:byte_offset].decode("utf-8", "replace")) + 1


def snippet(text: str, pos: int, width: int = 24) -> str:
    """The text around `pos`, for a message."""
    return repr(text[max(0, pos - width):pos + width])


def diagnose(raw: bytes, exc: orjson.JSONDecodeError, sink: LineSink, line: int, index: int) -> None:
    """Report the one most useful reason `raw` is not a JSON object."""
    place = {"line": line, "record": index}
    nul = raw.find(b"\x00")
    if nul >= 0:
        count = raw.count(b"\x00")
        sink.error("TG222", f"NUL byte (\\x00) in the line ({count} in all)",
                   "NUL bytes are never valid in JSON text; the file is binary or was truncated/padded. "
                   "Regenerate it; inside a string write \\u0000 if you really mean it.",
                   column=char_column(raw, nul), **place)
        return
    try:
        text = raw.decode("utf-8").rstrip("\r\n")
    except UnicodeDecodeError as err:
        bad = raw[err.start:err.start + 4].hex(" ")
        sink.error(INVALID_UTF8, f"invalid UTF-8 (bytes {bad}): {err.reason}",
                   "Save the file as UTF-8; if it came from Excel or Windows tools it is probably "
                   "cp1252: `iconv -f cp1252 -t UTF-8 in.jsonl > out.jsonl`.",
                   column=char_column(raw, err.start), **place)
        return
    reason = str(exc).split(": line ", 1)[0]
    pos = min(exc.pos, len(text))
    code, message, hint = _classify(text, reason, pos)
    if code == "TG223" and text[pos - 1:pos] == "-":
        pos -= 1  # point at the sign of -Infinity
    sink.error(code, message, hint, column=pos + 1, **place)


def _classify(text: str, reason: str, pos: int) -> tuple[str, str, str]:
    """(code, message, hint) for an orjson error at character `pos` of `text`."""
    if "depth limit" in reason:
        return (TOO_DEEP, "nesting deeper than 1024 levels", _DEEP)
    if "surrogate" in reason:
        return ("TG225", f"lone UTF-16 surrogate escape near {snippet(text, pos)}",
                "A \\uD800-\\uDFFF escape must come as a high+low pair; a lone one cannot be encoded as "
                "UTF-8 and crashes tokenizers. Usually a string was cut in the middle of an emoji: fix "
                "the producer (do not slice strings by UTF-16 units).")
    # orjson points at the letter, after any minus sign.
    literal = next((w for w in _NOT_JSON_NUMBERS if text.startswith(w, pos - (w[0] == "-"))), None)
    if literal or "infinity when parsed" in reason:
        what = f"{literal} is not a JSON number" if literal else "number overflows to infinity"
        return ("TG223", f"{what} near {snippet(text, pos)}",
                "JSON has no NaN or Infinity (Python's json.dumps writes them unless allow_nan=False); "
                "write null or a finite number, or a string.")
    return (INVALID_JSON, _json_message(text, reason, pos), _json_hint(text, reason, pos))


def _json_message(text: str, reason: str, pos: int) -> str:
    if reason.startswith("unexpected end of data"):
        return "the line ends before the JSON value is complete (a record split over several lines?)"
    if reason.startswith("unexpected content after document"):
        two = " (two records on one line?)" if text[pos:pos + 1] == "{" else ""
        return f"more text after the JSON value: {snippet(text, pos)}{two}"
    return f"invalid JSON: {reason} near {snippet(text, pos)}"


def _json_hint(text: str, reason: str, pos: int) -> str:
    if reason.startswith("unexpected end of data"):
        return "Write each record on ONE line (json.dumps without indent=); pretty-printed JSON is not JSONL."
    if reason.startswith("unexpected content after document"):
        return ("Put a newline between records." if text[pos:pos + 1] == "{" else
                "Each line must hold exactly one JSON object (is a record spread over several lines?).")
    if text[pos:pos + 1] == "'" or "True" in text[pos:pos + 5] or "None" in text[pos:pos + 5]:
        return "This looks like a Python repr (single quotes, True/None): write records with json.dumps."
    return "Fix the JSON at this column; `python -m json.tool` on the line shows the same error."


def non_object(value: Any, sink: LineSink, line: int, index: int) -> None:
    """Report a line that is valid JSON but not an object (an array, a string, a number, null)."""
    kind = {list: "an array", str: "a string", bool: "a boolean", type(None): "null"}.get(
        type(value), "a number")
    if index == 0 and isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
        sink.error("TG243", f"the file starts with a JSON array of {len(value)} objects on one line",
                   "Convert to one object per line: `jq -c '.[]' data.json > data.jsonl`.",
                   line=line, column=1, record=index)
        return
    sink.error("TG227", f"the line is {kind}, not a JSON object", "Each line must be one record: "
               "an object like {\"messages\": [...]}.", line=line, column=1, record=index)


def not_jsonl(raw: bytes, sink: LineSink, line: int) -> None:
    """Report a first line that opens a JSON document spread over many lines: an array (TG243) or
    a pretty-printed object (TG220); reading such a file as JSON Lines stops there."""
    if raw.lstrip(b" \t\r\n").startswith(b"["):
        sink.error("TG243", "the file is one JSON array, not JSON Lines",
                   "Name it .json (tunegate reads a .json array element by element), or convert to one "
                   "object per line: `jq -c '.[]' data.json > data.jsonl`, or "
                   "`python -c \"import json,sys; [print(json.dumps(r, ensure_ascii=False)) for r in "
                   "json.load(sys.stdin)]\" < data.json > data.jsonl`.", line=line, column=1, record=0)
    else:
        sink.error(INVALID_JSON, "the file is pretty-printed JSON: the first record spreads over many lines",
                   "Write each record on ONE line (json.dumps without indent=), or convert with "
                   "`jq -c . data.json > data.jsonl`.", line=line, column=1, record=0)


def too_long(size: int, limit: int, sink: LineSink, line: int, index: int) -> None:
    """Report a line of `size` bytes, over the `limit` of one record (TG228)."""
    sink.error(TOO_LONG, f"line is {size:,} bytes, over the {limit:,}-byte limit per record",
               "Split or shorten the record; no trainer can use a record that size (it would be "
               "truncated to max_seq_len), and a missing newline between records looks the same.",
               line=line, column=1, record=index)


def too_deep(limit: int, sink: LineSink, line: int, index: int) -> None:
    """Report a parsed record that nests deeper than `limit` levels (TG224); later checks never see it."""
    sink.error(TOO_DEEP, f"record nests more than {limit} levels deep", f"{_DEEP} It is not passed to later checks.",
               line=line, column=1, record=index)


def out_of_range(exc: NumberOutOfRange, raw: bytes, sink: LineSink, line: int, index: int) -> None:
    """Report a number past any range (TG223), which `records.exact_record` refused; later checks never see it."""
    at = raw.find(exc.text.encode("ascii"))
    sink.error("TG223", f"{exc}: every reader takes it for 0.0 or infinity, so an edit to it would go unseen",
               "Write the number with an exponent of at most 18 digits (e.g. 0 or 1e-300), or as a string. It is "
               "not passed to later checks.", line=line, column=char_column(raw, max(at, 0)), record=index)


def locate(raw: bytes, path: tuple[str | int, ...]) -> int:
    """1-based column of the value at `path` (object keys and array indexes) in the line; 1 if unsure."""
    try:
        text = raw.decode("utf-8")
        pos: int | None = _WS.match(text, 0).end()  # type: ignore[union-attr]
        for step in path:
            pos = _member(text, pos, step) if isinstance(step, str) else _element(text, pos, step)
            if pos is None:
                return 1
        return pos + 1
    except (ValueError, RecursionError, IndexError):  # depth the stdlib scanner cannot follow
        return 1


def _member(text: str, pos: int, key: str) -> int | None:
    """Position of the value of `key` in the object at `pos` (the last one, as parsers keep)."""
    if text[pos:pos + 1] != "{":
        return None
    pos, found = _WS.match(text, pos + 1).end(), None  # type: ignore[union-attr]
    while text[pos:pos + 1] == '"':
        name, end = scanstring(text, pos + 1)
        value = _WS.match(text, _WS.match(text, end).end() + 1).end()  # type: ignore[union-attr]
        if name == key:
            found = value
        pos = _after_value(text, value)
    return found


def _element(text: str, pos: int, index: int) -> int | None:
    """Position of element `index` of the array at `pos`."""
    if text[pos:pos + 1] != "[":
        return None
    pos = _WS.match(text, pos + 1).end()  # type: ignore[union-attr]
    for _ in range(index):
        pos = _after_value(text, pos)
    return pos


def _after_value(text: str, pos: int) -> int:
    """Skip the value at `pos` and a following comma."""
    _, end = _DECODER.raw_decode(text, pos)
    end = _WS.match(text, end).end()  # type: ignore[union-attr]
    if text[end:end + 1] == ",":
        end = _WS.match(text, end + 1).end()  # type: ignore[union-attr]
    return end


def repeated_keys(raw: bytes) -> list[str]:
    """Keys written twice in one object anywhere in the line (fast: the stdlib's C scanner).

    orjson keeps the last of repeated keys silently; this re-reads the line with a hook that sees
    every object's key/value pairs before they become a dict. Empty when the stdlib cannot follow
    the line's depth (orjson allows 1024 levels, the stdlib about 990).
    """
    found: list[str] = []

    def pairs_hook(pairs: list[tuple[str, Any]]) -> None:
        if len(pairs) > 1:
            seen: set[str] = set()
            found.extend(k for k, _ in pairs if k in seen or seen.add(k))  # type: ignore[func-returns-value]

    try:
        json.loads(raw, object_pairs_hook=pairs_hook)
    except (ValueError, RecursionError):
        return []
    return found


def repeated_key_columns(raw: bytes) -> list[tuple[str, int]]:
    """The repeated keys in text order, each with the 1-based column of the repeat (slow)."""
    found: list[tuple[str, int]] = []
    try:
        text = raw.decode("utf-8")
        _walk(text, _WS.match(text, 0).end(), found)  # type: ignore[union-attr]
    except (ValueError, RecursionError, IndexError):
        pass
    return found


def _walk(text: str, pos: int, found: list[tuple[str, int]]) -> int:
    """Walk the value at `pos`, noting repeated keys; return the position after it."""
    opener = text[pos:pos + 1]
    if opener not in ("{", "["):
        return _DECODER.raw_decode(text, pos)[1]
    closer, seen = ("}" if opener == "{" else "]"), set()
    pos = _WS.match(text, pos + 1).end()  # type: ignore[union-attr]
    while text[pos] != closer:
        if opener == "{":
            name, end = scanstring(text, pos + 1)
            if name in seen:
                found.append((name, pos + 1))
            seen.add(name)
            pos = _WS.match(text, _WS.match(text, end).end() + 1).end()  # type: ignore[union-attr]
        pos = _WS.match(text, _walk(text, pos, found)).end()  # type: ignore[union-attr]
        if text[pos] == ",":
            pos = _WS.match(text, pos + 1).end()  # type: ignore[union-attr]
    return pos + 1


def nesting(value: Any, limit: int) -> tuple[bool, bool]:
    """(nests containers more than `limit` levels deep, holds a float): one iterative walk.

    A float is where orjson may have rounded a number (see `records.exact_record`).
    """
    stack, floats = [(value, 1)], False
    while stack:
        item, depth = stack.pop()
        if depth > limit:
            return True, floats
        for v in (item.values() if type(item) is dict else item):
            kind = type(v)
            if kind is dict or kind is list:
                stack.append((v, depth + 1))
            elif kind is float:
                floats = True
    return False, floats


def has_float(value: Any) -> bool:
    """Whether `value` holds a float anywhere (iterative; stops at the first)."""
    stack = [value]
    while stack:
        item = stack.pop()
        for v in (item.values() if type(item) is dict else item):
            kind = type(v)
            if kind is float:
                return True
            if kind is dict or kind is list:
                stack.append(v)
    return False


def shift(raw: bytes, line: int, column: int) -> tuple[int, int]:
    """The (line, column) of 1-based character `column` of `raw` when `raw` spans several lines
    (an element of a pretty-printed `.json` array starts on `line`); unchanged for one line."""
    body = raw.rstrip(b"\r\n")
    if b"\n" not in body:
        return line, column
    before = body.decode("utf-8", "replace")[:column - 1]
    newlines = before.count("\n")
    return (line + newlines, column - 1 - before.rfind("\n")) if newlines else (line, column)
