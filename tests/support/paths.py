"""Where the committed test assets are: the repository, tests/data, the examples, this folder."""
from pathlib import Path

SUPPORT = Path(__file__).resolve().parent
ROOT = SUPPORT.parents[1]
DATA = ROOT / "tests" / "data"
EXAMPLES = ROOT / "examples"
