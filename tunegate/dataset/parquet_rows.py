"""Parquet files (what the Hugging Face Hub serves), read row by row in constant memory.

    for index, row in rows(Path("train-00000-of-00001.parquet")):
        ...

Needs pyarrow (`pip install 'tunegate[parquet]'`), imported only when a parquet file is read.
Rows come in record batches of `BATCH` rows, so memory holds one batch at a time. A place in a
parquet file is its 0-based row index (there are no lines). Parquet has no "absent": a struct
field a row does not use is null, so null fields of objects are left out, as they were in the
JSON the file was made from.
"""
from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tunegate.errors import BrokenContainer, MissingDependency

MAGIC = b"PAR1"
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
                yield index, _without_nulls(row)
                index += 1
    except (pa.ArrowException, OSError) as exc:
        raise BrokenContainer("parquet", f"{type(exc).__name__}: {exc}") from None


def _without_nulls(value: Any) -> Any:
    if type(value) is dict:
        return {k: _without_nulls(v) for k, v in value.items() if v is not None}
    if type(value) is list:
        return [_without_nulls(v) for v in value]
    return value
