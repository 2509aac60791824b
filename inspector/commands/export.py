"""`inspector export`: Prometheus textfile or JSON export (placeholder until it lands)."""
from __future__ import annotations

import argparse

from inspector.commands.common import CliError, add_root_argument


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("export", help="Prometheus textfile or JSON export")
    add_root_argument(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    raise CliError("export is not implemented yet")
