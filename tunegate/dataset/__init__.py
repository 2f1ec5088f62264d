"""Stage 1, dataset: every data file read once, strictly, against the chat contract, with stats.

    from tunegate.dataset import validate_dataset
    result = validate_dataset({"train": Path("train.jsonl"), "validation": Path("val.jsonl")})
"""
from tunegate.dataset.stage import validate_dataset

__all__ = ["validate_dataset"]
