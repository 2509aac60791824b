"""Helpers shared by subcommands: --root handling, the one-line error convention, the parsers
of numeric options and the checks of output paths."""
from __future__ import annotations

import argparse
import json
import math
import sys
import textwrap
from typing import TYPE_CHECKING

from inspector.text.durations import (  # noqa: F401  (the commands' number types, re-exported)
    _DURATION,
    _DURATION_UNITS,
    _INTEGER,
    DURATION_EXAMPLES,
    Duration,
    _not_finite,
    _number_text,
    _shown,
    format_duration,
    is_plain_number,
)

if TYPE_CHECKING:
    from inspector.roots.host import HostRoot

# ----------------------------------------------------------------------- exit status
# One rule for every command but `check` (a Nagios plugin: 0 OK, 1 WARNING, 2 CRITICAL,
# 3 UNKNOWN, usage mistakes 3). Scripts branch on 1 vs 2: "it ran and found something" is
# never confused with "it could not run".
EXIT_OK = 0
EXIT_FOUND = 1      # ran and found what it looks for: regressions, a failed request, errors
                    # from a server, a server down, nothing recorded
EXIT_ERROR = 2      # usage mistake or error (one line on stderr): nothing usable was done
SIGNAL_EXIT = 128   # + N: stopped by signal N, partial results printed (130 Ctrl-C, 143 TERM)


def exit_epilog(found: str | None = None, signals: bool = False, ok: str = "done") -> str:
    """The `exit status:` paragraph of a command's --help, from the rule above."""
    parts = [f"0 {ok}"]
    if found:
        parts.append(f"1 {found}")
    parts.append("2 usage mistake or error (one line on stderr)")
    if signals:
        parts.append("128+N stopped by signal N, partial results printed (130 Ctrl-C, "
                     "143 SIGTERM, 129 SIGHUP)")
    # filled here: a RawDescriptionHelpFormatter prints it as it is, the default one refills it
    return textwrap.fill("exit status: " + "; ".join(parts) + ".", 79)


class CliError(Exception):
    """One clear line on stderr and an exit status (2 = usage mistake or error)."""

    def __init__(self, message: str, status: int = EXIT_ERROR):
        super().__init__(message)
        self.status = status


def add_root_argument(parser: argparse.ArgumentParser, top_level: bool = False) -> None:
    # On subcommands the default is SUPPRESS so `inspector --root X report` is not overridden.
    parser.add_argument("--root", metavar="DIR|FILE.tar.gz",
                        default=None if top_level else argparse.SUPPRESS,
                        help="read a capture or a sysroot tree instead of this host")


def root_from_args(args: argparse.Namespace, record: bool = False,
                   timeout: float | None = None, deadline: float | None = None) -> HostRoot:
    """The --root of `args`, opened within `timeout` seconds (by default the command's
    --timeout, 1 to 5 s: a tree that has not answered by then is on a hung mount); a capture's
    unpacking is also given up at `deadline` (time.monotonic()), a command's whole bound."""
    opened = getattr(args, "opened_root", None)   # --ssh: the host's capture, opened already
    if opened is not None:
        return opened
    # here, not at the top: `--version`, `diff` and `history` open no root
    from inspector.captures.capture import CaptureError, open_root
    from inspector.roots.host import OPEN_TIMEOUT
    if timeout is None:
        given = getattr(args, "timeout", None)
        timeout = (min(OPEN_TIMEOUT, max(1.0, given)) if isinstance(given, (int, float))
                   else OPEN_TIMEOUT)
    try:
        return open_root(getattr(args, "root", None), record=record, timeout=timeout,
                         deadline=deadline)
    except CaptureError as exc:
        raise CliError(str(exc)) from None


# ----------------------------------------------------------------------------- numbers
# Every numeric option is parsed by one of the two types below: a 20-digit number, nan, inf, a
# negative or a zero where none makes sense is a usage error in one line (exit 2; `check`: its
# UNKNOWN line), never a traceback from deep inside (an OverflowError from a 1e20 s wait) or a
# run that would outlast the machine. The bounds are generous and said in each option's --help.

class Bounded:
    """argparse type: an int (`integer=True`) or a finite float within minimum..maximum;
    `above=True` excludes the minimum itself (greater than 0)."""

    def __init__(self, minimum: float, maximum: float, integer: bool = False,
                 above: bool = False):
        self.minimum, self.maximum, self.integer, self.above = minimum, maximum, integer, above
        self.__name__ = "whole number" if integer else "number"

    @property
    def bounds(self) -> str:
        """For --help: '1 to 10000', or 'at most 10000' above 0."""
        if self.above and self.minimum == 0:
            return f"at most {_number_text(self.maximum)}"
        return f"{_number_text(self.minimum)} to {_number_text(self.maximum)}"

    def __call__(self, text: str) -> float:
        value: float
        if self.integer:
            if not _INTEGER.fullmatch(text):
                raise argparse.ArgumentTypeError(f"{_shown(text)} is not a whole number")
            digits = text.strip().lstrip("+-")
            # no 5000-digit int(): Python refuses those, and any such number is out of bounds
            value = int(text) if len(digits) <= 30 else \
                (-1 if text.strip().startswith("-") else 1) * 10 ** 30
        else:
            if _not_finite(text):
                raise argparse.ArgumentTypeError(f"{_shown(text)} must be a finite number")
            if not is_plain_number(text):
                raise argparse.ArgumentTypeError(f"{_shown(text)} is not a number")
            value = float(text)
            if not math.isfinite(value):      # 1e400
                raise argparse.ArgumentTypeError(f"{_shown(text)} must be a finite number")
        if value < self.minimum or (value == self.minimum and self.above):
            if self.minimum == 0:
                what = "greater than 0" if self.above else "0 or more"
            else:
                what = f"at least {_number_text(self.minimum)}"
            raise argparse.ArgumentTypeError(f"{_shown(text)} must be {what}")
        if value > self.maximum:
            raise argparse.ArgumentTypeError(
                f"{_shown(text)} must be at most {_number_text(self.maximum)}")
        return value


# Bounds shared by several commands.
MAX_COUNT = 10 ** 9                                 # samples, rounds, intervals, requests
COLLECTOR_TIMEOUT = Duration(maximum=3600)          # report, export, snapshot, capture, check
PROBE_SECONDS = Duration(maximum=3600)              # snapshot/record --probe-seconds
positive_int = Bounded(1, MAX_COUNT, integer=True)
non_negative_int = Bounded(0, MAX_COUNT, integer=True)


def parse_probe_specs(texts: list[str]) -> list:
    """--probe SPEC... parsed; CliError for a bad one. The probes' modules are imported only
    when there is one: most exports, snapshots and records run none."""
    if not texts:
        return []
    from inspector.probes.base import ProbeError
    from inspector.probes.request import parse_spec
    try:
        return [parse_spec(s) for s in texts]
    except ProbeError as exc:
        raise CliError(str(exc)) from None


# ------------------------------------------------------------------------- output paths
def path_argument(text: str) -> str:
    """argparse type of an option naming a file (-o, --db, --textfile): an empty string is a
    usage error, never the default path."""
    if not text:
        raise argparse.ArgumentTypeError("an empty path names no file (leave the option out "
                                         "for the default)")
    return text


def check_output(path: str, option: str = "-o") -> None:
    """`-o PATH` refused at once, before any work, when it names a device, a directory, a
    FIFO, another user's link in /tmp... (see inspector.writing.paths): one line, exit 2."""
    from inspector.writing.atomic import OutputError, output_target
    try:
        output_target(path)
    except OutputError as exc:
        raise CliError(f"{option} {exc}") from None


def output_is_directory(path: str, option: str = "-o") -> bool:
    """Whether `-o PATH` names an existing directory (to write a default name into); a
    refused link or a path ending in / that names no directory is a CliError."""
    from inspector.writing.paths import OutputError, is_directory
    try:
        return is_directory(path)
    except OutputError as exc:
        raise CliError(f"{option} {exc}") from None


def write_output(path: str, data: bytes, option: str = "-o") -> None:
    """Write `-o PATH` atomically; a refusal or a failed write is a CliError."""
    from inspector.writing.atomic import OutputError, write_atomic
    try:
        write_atomic(path, data)
    except OutputError as exc:
        raise CliError(f"{option} {exc}") from None
    except OSError as exc:
        raise CliError(f"cannot write {path}: {exc.strerror or exc}") from None


def eprint(*parts: object) -> None:
    print(*parts, file=sys.stderr)


# ------------------------------------------------------------------------ JSON output
def print_json(doc: object, indent: int | None = 2) -> None:
    """One JSON document on stdout (see inspector.documents.kinds for what opens each one)."""
    # dumps, not dump: dump writes each of a report's ~10k tokens to stdout on its own, and
    # without indent only dumps uses the C encoder
    text = json.dumps(doc, indent=indent, separators=None if indent else (",", ":"))
    sys.stdout.write(text + "\n")


class _PrintSchema(argparse.Action):
    """`--schema` prints the JSON Schema (draft 2020-12) of the command's document and exits
    at once, like --version: no other argument is needed or read."""

    def __init__(self, option_strings, dest, document: str, help: str):
        super().__init__(option_strings, dest=argparse.SUPPRESS, default=argparse.SUPPRESS,
                         nargs=0, help=help)
        self.document = document

    def __call__(self, parser, namespace, values, option_string=None):
        from inspector.documents.schema import document_schema
        print_json(document_schema(self.document))
        parser.exit(EXIT_OK)


def add_schema_argument(parser: argparse.ArgumentParser, document: str,
                        what: str = "--json") -> None:
    parser.add_argument("--schema", action=_PrintSchema, document=document,
                        help=f"print the JSON Schema of {what} and exit")
