"""Which container a data file is, as tunegate's readers choose it: by magic bytes, else by name.

    kind_of(Path("train.csv"))      # 'csv'
    kind_of(Path("export.json"))    # 'parquet' when its bytes start with PAR1

The dataset readers (`tunegate.dataset.jsonl_reader`, `tunegate.dataset.records`) decide the same way
on the stream they open (tests/dataset/test_file_kinds.py holds them to it); this module is for the
layers that must know it without reading records, such as an imported config's declared loader.
"""
from __future__ import annotations

from pathlib import Path

from tunegate.pathguard import open_regular

KINDS = {"jsonl": "JSON Lines", "json": "JSON", "parquet": "parquet", "arrow": "an Arrow file", "csv": "CSV"}


def kind_of(path: Path) -> str:
    """'parquet', 'arrow', 'csv', 'json' (a `.json` name: an array or lines) or 'jsonl'. Raises UsageError
    when the path is not a readable regular file."""
    with open_regular(path) as f:
        head = f.read(6)
    name = path.name.lower()
    if head.startswith(b"PAR1"):
        return "parquet"
    if head and (name.endswith(".arrow") or head.startswith(b"ARROW1")):
        return "arrow"
    if name.removesuffix(".gz").endswith((".csv", ".tsv")):  # a .tsv is load_dataset's csv builder with tabs
        return "csv"
    return "json" if name.endswith((".json", ".json.gz")) else "jsonl"
