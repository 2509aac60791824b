"""Helpers shared by subcommands: --root handling and the one-line error convention."""
from __future__ import annotations

import argparse
import sys

from inspector.capture import CaptureError, open_root
from inspector.host import HostRoot


class CliError(Exception):
    """One clear line on stderr and an exit status (2 = usage or input error)."""

    def __init__(self, message: str, status: int = 2):
        super().__init__(message)
        self.status = status


def add_root_argument(parser: argparse.ArgumentParser, top_level: bool = False) -> None:
    # On subcommands the default is SUPPRESS so `inspector --root X report` is not overridden.
    parser.add_argument("--root", metavar="DIR|FILE.tar.gz",
                        default=None if top_level else argparse.SUPPRESS,
                        help="read a capture or a sysroot tree instead of this host")


def root_from_args(args: argparse.Namespace, record: bool = False) -> HostRoot:
    try:
        return open_root(getattr(args, "root", None), record=record)
    except CaptureError as exc:
        raise CliError(str(exc)) from None


def eprint(*parts: object) -> None:
    print(*parts, file=sys.stderr)
