"""Which container a data file is: by magic bytes, else by name. The one rule every reader applies.

    kind(name, stream.peek(6)[:6])  # what the dataset readers ask of the stream they opened
    kind_of(Path("train.csv"))      # 'csv'; 'parquet' for any name when the bytes start with PAR1

The dataset readers (`tunegate.dataset.jsonl_reader`, `tunegate.dataset.records`, the parallel
`segments`) ask `kind` of the (inflated) stream's first bytes; `kind_of` is for the layers that must
know it without reading records, such as an imported config's declared loader.
"""
from __future__ import annotations

from pathlib import Path

from tunegate.pathguard import open_regular

KINDS = {"jsonl": "JSON Lines", "json": "JSON", "parquet": "parquet", "arrow": "an Arrow file", "csv": "CSV"}
PARQUET_MAGIC = b"PAR1"
ARROW_FILE_MAGIC = b"ARROW1"  # Arrow's file format; its stream format (save_to_disk's shards) has no magic
HEAD = len(ARROW_FILE_MAGIC)  # the bytes `kind` needs


def kind(name: str, head: bytes) -> str:
    """'parquet', 'arrow', 'csv', 'json' (a `.json` name: one array, or lines) or 'jsonl', for a file of this
    name whose first bytes are `head`. An empty file is never a table: its reader says it is empty."""
    name = name.lower()
    if head.startswith(PARQUET_MAGIC):
        return "parquet"
    if head and (name.endswith(".arrow") or head.startswith(ARROW_FILE_MAGIC)):
        return "arrow"
    if name.removesuffix(".gz").endswith((".csv", ".tsv")):  # a .tsv is load_dataset's csv builder with tabs
        return "csv"
    return "json" if name.endswith((".json", ".json.gz")) else "jsonl"


def kind_of(path: Path) -> str:
    """`kind` of the file at `path`. Raises UsageError when it is not a readable regular file."""
    with open_regular(path) as f:
        return kind(path.name, f.read(HEAD))
