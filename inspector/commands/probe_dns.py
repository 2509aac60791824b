"""`inspector probe dns` (placeholder until it lands)."""
from __future__ import annotations

import argparse

from inspector.commands.common import CliError, add_root_argument


def register(kinds: argparse._SubParsersAction) -> None:
    p = kinds.add_parser("dns", help="dns probe")
    add_root_argument(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    raise CliError("probe dns is not implemented yet")
