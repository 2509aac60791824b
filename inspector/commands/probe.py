"""`inspector probe io|memcached|dns`: bounded probes; each kind lives in its own module."""
from __future__ import annotations

import argparse
import importlib

from inspector.commands import SUMMARIES
from inspector.commands.common import exit_epilog

PROBE_MODULES = ["probe_io", "probe_memcached", "probe_dns"]


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("probe", help=SUMMARIES["probe"],
                       epilog=exit_epilog(found="the probe ran and found a problem (a failed "
                                                "request, errors from the server, a server down)",
                                          signals=True) + " KIND --help says which.")
    kinds = p.add_subparsers(dest="probe_kind", metavar="KIND", required=True)
    for name in PROBE_MODULES:
        importlib.import_module(f"inspector.commands.{name}").register(kinds)
