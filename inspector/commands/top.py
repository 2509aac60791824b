"""`inspector top`: live rates like iostat/vmstat (placeholder until it lands)."""
from __future__ import annotations

import argparse

from inspector.commands.common import CliError, add_root_argument


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("top", help="live rates like iostat/vmstat")
    add_root_argument(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    raise CliError("top is not implemented yet")
