"""One module per CLI subcommand, each with `register(subparsers)` and `run(args) -> exit code`."""
