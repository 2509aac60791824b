"""`inspector snapshot`: report model plus short probe runs, written atomically (placeholder until it lands)."""
from __future__ import annotations

import argparse

from inspector.commands.common import CliError, add_root_argument


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("snapshot", help="report model plus short probe runs, written atomically")
    add_root_argument(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    raise CliError("snapshot is not implemented yet")
