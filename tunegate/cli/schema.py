"""`tunegate schema`: print the spec's JSON Schema (for editors' YAML completion)."""
from __future__ import annotations

import argparse
import json


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("schema", help="print the spec's JSON Schema",
                       description="Print the JSON Schema of the spec; point your editor's YAML "
                                   "language server at it for completion and checks.")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from tunegate.spec.model import json_schema

    print(json.dumps(json_schema(), indent=2))
    return 0
