"""`python -m tunegate ...` is the same as the `tunegate` command."""
from tunegate.cli.main import entry

raise SystemExit(entry())
