"""The `tunegate` command: `main.py` parses and maps outcomes to exit codes; one module per command.

Each command module has `register(subparsers)` and `run(args) -> exit code`. The CLI is the only
wing that reaches the Prefect flows.
"""
