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


def _number(convert, minimum, inclusive: bool, what: str):
    """An argparse type: a number bounded below, so `--timeout -1` is a usage error, not a hang
    or an instant failure that looks like a host problem."""
    def parse(text: str):
        try:
            value = convert(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
        if value != value or value in (float("inf"), float("-inf")):
            raise argparse.ArgumentTypeError(f"{text!r} must be a finite number")
        if value < minimum or (value == minimum and not inclusive):
            raise argparse.ArgumentTypeError(f"{text!r} must be {what}")
        return value
    parse.__name__ = what  # argparse names the type in its messages
    return parse


positive_float = _number(float, 0, False, "greater than 0")
non_negative_float = _number(float, 0, True, "0 or more")
positive_int = _number(int, 0, False, "a whole number greater than 0")
non_negative_int = _number(int, 0, True, "a whole number, 0 or more")


def eprint(*parts: object) -> None:
    print(*parts, file=sys.stderr)
