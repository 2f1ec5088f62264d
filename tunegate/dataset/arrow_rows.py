"""Arrow files, as `Dataset.save_to_disk` writes them (`data-00000-of-00001.arrow`), read row by row.

    for index, row in rows(Path("my_set/train/data-00000-of-00001.arrow")):
        ...

`save_to_disk` writes each shard in Arrow's IPC stream format (no magic number: it starts with the
continuation marker FF FF FF FF); Arrow's random-access file format starts with `ARROW1`. Both are
memory-mapped and read a record batch at a time, its rows turned into Python objects in slices of
`BATCH`, so memory holds one slice of rows however the file was batched. Rows are handed on as the JSON records
they stand for, exactly as parquet rows are (`tunegate.dataset.parquet_rows.json_row`), and a
place is the 0-based row index. Needs pyarrow, imported only when such a file is read. Which files
are Arrow files (named `.arrow`, or in the file format) is `tunegate.file_kinds.kind`'s rule.
"""
from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tunegate.dataset.parquet_rows import BATCH, json_row
from tunegate.errors import BrokenContainer, MissingDependency
from tunegate.file_kinds import ARROW_FILE_MAGIC as FILE_MAGIC


def rows(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield (row index, row as a dict) for every row. MissingDependency without pyarrow,
    BrokenContainer when the file is not a readable Arrow stream or file."""
    try:
        import pyarrow as pa
    except ImportError:
        raise MissingDependency("pyarrow", "parquet") from None
    index = 0
    try:
        # Memory-mapped, the batches are views of the file's pages, not copies; rows become Python
        # objects BATCH at a time, however large a batch its writer made.
        with pa.memory_map(str(path)) as f:
            head = f.read(len(FILE_MAGIC))
            f.seek(0)
            if head == FILE_MAGIC:  # the file format: batches found through its footer
                file = pa.ipc.open_file(f)
                batches: Any = (file.get_batch(i) for i in range(file.num_record_batches))
            else:  # a stream, read front to back
                batches = pa.ipc.open_stream(f)
            for batch in batches:
                # An IPC file is not checksummed: offsets past the buffers or bytes that are not UTF-8
                # would crash to_pylist (a segfault, or UnicodeDecodeError). A full validation refuses them.
                batch.validate(full=True)
                for start in range(0, batch.num_rows, BATCH):
                    for row in batch.slice(start, BATCH).to_pylist():
                        yield index, json_row(row)
                        index += 1
    except (pa.ArrowException, OSError, UnicodeDecodeError) as exc:
        raise BrokenContainer("arrow", f"{type(exc).__name__}: {exc}") from None
