"""Write the data the config corpus points at, from the flows test chats (Acme Cloud support).

    python tests/data/configs/make_data.py

data/train.jsonl, data/val.jsonl: OpenAI chat (40 and 12 records); data/sharegpt_train.jsonl,
data/sharegpt_val.jsonl: the same chats as ShareGPT; data/trl_support/{train,test}.jsonl: the same
chats as TRL conversational prompt-completion (a folder, as `dataset_name` may name one).
data/alpaca_{train,val}.csv: the hand-written data/alpaca_*.jsonl as pandas' `to_csv(index=False)`
writes them; data/pc_csv/{train,test}.csv and data/pc_tsv/{train,test}.tsv: the same records as plain
prompt-completion, written by csv.writer (folders of CSV and TSV splits, as Hub datasets often hold them).
data/alpaca_saved/ (a DatasetDict: train and test), data/alpaca_saved_train/ (a Dataset) and
data/alpaca_saved_shards/ (a Dataset in 2 shards): the same records as `save_to_disk` of Hugging Face
`datasets` writes them, made with datasets 5.2.0, which the test environment does not install (written
only where it is importable). data/train_more.jsonl: the flows chats after the first 40 (a second
training file, for configs that list two datasets); data/pc_parquet_shards/data/: the TRL
prompt-completion chats as a Hub dataset holds a sharded split (train in 2 parquet shards of 20, test
in 1), written by pyarrow.
"""
from __future__ import annotations

import csv
import json
from pathlib import Path

HERE = Path(__file__).resolve().parent
FLOWS = HERE.parent / "flows"
FROM = {"system": "system", "user": "human", "assistant": "gpt"}


def chats(name: str, n: int) -> list[dict]:
    lines = (FLOWS / name).read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()][:n]


def write(path: Path, records: list[dict]) -> None:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")


def main() -> None:
    train, val = chats("train.jsonl", 40), chats("validation.jsonl", 12)
    for name, records in (("train", train), ("val", val)):
        write(HERE / "data" / f"{name}.jsonl", records)
        write(HERE / "data" / f"sharegpt_{name}.jsonl", [{"conversations": [
            {"from": FROM[m["role"]], "value": m["content"]} for m in r["messages"]]} for r in records])
    for name, records in (("train", train), ("test", val)):
        write(HERE / "data" / "trl_support" / f"{name}.jsonl", [
            {"prompt": r["messages"][:-1], "completion": r["messages"][-1:]} for r in records])
    write(HERE / "data" / "train_more.jsonl", chats("train.jsonl", 85)[40:])
    csv_copies()
    parquet_shards(train, val)
    saved_to_disk()


def csv_copies() -> None:
    import pandas as pd

    for name, split in (("train", "train"), ("val", "test")):
        pd.read_json(HERE / "data" / f"alpaca_{name}.jsonl", lines=True, dtype=False).to_csv(
            HERE / "data" / f"alpaca_{name}.csv", index=False)
        lines = (HERE / "data" / f"alpaca_{name}.jsonl").read_text(encoding="utf-8").splitlines()
        records = [json.loads(line) for line in lines]
        for folder, sep in (("pc_csv", ","), ("pc_tsv", "\t")):
            with open(HERE / "data" / folder / f"{split}.{folder[-3:]}", "w", newline="", encoding="utf-8") as f:
                out = csv.writer(f, delimiter=sep)
                out.writerow(["prompt", "completion"])
                out.writerows([r["instruction"] + (f"\n{r['input']}" if r["input"] else "") + "\nAnswer:",
                               f" {r['output']}"] for r in records)



def parquet_shards(train: list[dict], test: list[dict]) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    folder = HERE / "data" / "pc_parquet_shards" / "data"
    folder.mkdir(parents=True, exist_ok=True)
    shards = {"train-00000-of-00002": train[:20], "train-00001-of-00002": train[20:],
              "test-00000-of-00001": test}
    for name, records in shards.items():
        rows = [{"prompt": r["messages"][:-1], "completion": r["messages"][-1:]} for r in records]
        pq.write_table(pa.Table.from_pylist(rows), folder / f"{name}.parquet")


def saved_to_disk() -> None:
    try:
        import datasets
    except ImportError:
        print("datasets is not installed: the save_to_disk folders are left as they are")
        return
    data = HERE / "data"
    train, test = (datasets.Dataset.from_json(str(data / f"alpaca_{name}.jsonl")) for name in ("train", "val"))
    datasets.DatasetDict({"train": train, "test": test}).save_to_disk(str(data / "alpaca_saved"))
    train.save_to_disk(str(data / "alpaca_saved_train"))
    train.save_to_disk(str(data / "alpaca_saved_shards"), num_shards=2)


if __name__ == "__main__":
    main()
