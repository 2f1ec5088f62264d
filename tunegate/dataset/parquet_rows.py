"""Parquet files (what the Hugging Face Hub serves), read row by row in constant memory.

    for index, row in rows(Path("train-00000-of-00001.parquet")):
        ...

Needs pyarrow (`pip install 'tunegate[parquet]'`), imported only when a parquet file is read.
Rows come in record batches of `BATCH` rows, so memory holds one batch at a time. A place in a
parquet file is its 0-based row index (there are no lines). Parquet has no "absent": a struct
field a row does not use is null, so null fields of objects are left out, as they were in the
JSON the file was made from.

Every row is handed on as the JSON record it stands for, so each stage (contract, fingerprint,
`tunegate convert`) sees JSON values only: a timestamp, date or time as its ISO 8601 text, a
duration as ISO 8601 (`P0DT1H30M0.5S`, pandas' form), a decimal as the number JSON would read
back (an int when whole, a float when a double holds it exactly, else the exact Decimal the
other readers give such numbers), and binary as text when it is UTF-8 (Spark and Hive write
strings without the UTF-8 annotation). Other binary (an image column) stays bytes: where a message's
text belongs the contract refuses it (TG206 "binary data"), anywhere else it is hashed and written as
its base64 text (`tunegate.dataset.fingerprint.json_default`).
"""
from __future__ import annotations

import datetime
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

from tunegate.errors import BrokenContainer, MissingDependency

BATCH = 1024  # rows per record batch: a few MB of chat text, far below any memory limit


def rows(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield (row index, row as a dict) for every row. MissingDependency without pyarrow,
    BrokenContainer when the file is corrupt."""
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        raise MissingDependency("pyarrow", "parquet") from None
    index = 0
    try:
        reader = pq.ParquetFile(path)
        for batch in reader.iter_batches(batch_size=BATCH):
            for row in batch.to_pylist():
                yield index, json_row(row)
                index += 1
    except (pa.ArrowException, OSError, UnicodeDecodeError) as exc:  # a string column's bytes are not UTF-8
        raise BrokenContainer("parquet", f"{type(exc).__name__}: {exc}") from None


_JSON_LEAVES = (str, int, float, bool)


def json_row(value: Any) -> Any:
    """A row (or value) pyarrow gives as JSON: null object fields left out, every leaf a JSON value (see
    the docstring); Arrow files' rows too (`tunegate.dataset.arrow_rows`)."""
    kind = type(value)
    if kind in _JSON_LEAVES:  # nearly every leaf of a chat dataset: no further test
        return value
    if kind is dict:
        return {k: json_row(v) for k, v in value.items() if v is not None}
    if kind is list or kind is tuple:  # a map column's entries are (key, value) tuples
        return [json_row(v) for v in value]
    return _as_json_leaf(value)


def _as_json_leaf(value: Any) -> Any:
    """A value pyarrow gives that JSON has no type for, as JSON; anything else as it is."""
    if isinstance(value, (datetime.datetime, datetime.date, datetime.time)):
        return value.isoformat()
    if isinstance(value, datetime.timedelta):
        return _duration(value)
    if isinstance(value, Decimal):
        return _number(value)
    if isinstance(value, bytes):
        try:
            return value.decode("utf-8")
        except UnicodeDecodeError:  # kept as bytes: the contract refuses it as a message's text
            return value
    return value


def _duration(value: datetime.timedelta) -> str:
    micro = value // datetime.timedelta(microseconds=1)
    sign, micro = ("-", -micro) if micro < 0 else ("", micro)
    seconds, micro = divmod(micro, 1_000_000)
    days, seconds = divmod(seconds, 86_400)
    hours, seconds = divmod(seconds, 3_600)
    minutes, seconds = divmod(seconds, 60)
    fraction = f".{micro:06d}".rstrip("0") if micro else ""
    return f"{sign}P{days}DT{hours}H{minutes}M{seconds}{fraction}S"


def _number(value: Decimal) -> int | float | Decimal:
    """The value a JSON reader of tunegate's gives for this decimal written out digit for digit."""
    if not value.is_finite():
        return value
    if value == value.to_integral_value():
        return int(value)
    near = float(value)
    return near if Decimal(repr(near)) == value else value
