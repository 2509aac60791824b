"""Subcommands: one module each, `register(subparsers)` sets `func(args) -> exit status`."""
