"""`inspector probe io|memcached|dns`: bounded probes; each kind lives in its own module."""
from __future__ import annotations

import argparse
import importlib

from inspector.commands import SUMMARIES
from inspector.commands.common import exit_epilog
from inspector.commands.probe_kinds import KIND_MODULES, KIND_SUMMARIES, kind_named


def register(sub: argparse._SubParsersAction, words: list[str] | None = None) -> None:
    """`words`: what follows `probe` on the command line; only the kind they name has its
    parser built (and its probe's modules imported: memcached's for `probe io` cost ~15 ms),
    the others are listed by name and help. None: every kind's parser."""
    p = sub.add_parser("probe", help=SUMMARIES["probe"],
                       epilog=exit_epilog(found="the probe ran and found a problem (a failed "
                                                "request, errors from the server, a server down)",
                                          signals=True) + " KIND --help says which.")
    kinds = p.add_subparsers(dest="probe_kind", metavar="KIND", required=True)
    wanted = kind_named(words) if words is not None else None
    for kind, module in KIND_MODULES.items():
        if words is None or kind == wanted:
            importlib.import_module(f"inspector.commands.{module}").register(kinds)
        else:
            kinds.add_parser(kind, help=KIND_SUMMARIES[kind])
