"""`inspector files [NAME]`: where the man page, the shell completions, the systemd units and
the monitoring rules shipped with the package are installed."""
from __future__ import annotations

import argparse

from inspector.commands.common import exit_epilog
from inspector.shipped import SHIPPED, shipped_path

EPILOG = """\
examples:
  man "$(inspector files man)"
  sudo install -Dm644 "$(inspector files man)" /usr/local/share/man/man1/inspector.1
  sudo cp "$(inspector files systemd)"/inspector-record.* /etc/systemd/system/

""" + exit_epilog(ok="printed")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("files", help="where the man page, completions, systemd units and "
                                     "monitoring rules are installed",
                       epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("name", nargs="?", choices=list(SHIPPED), metavar="NAME",
                   help=f"print only this one's path ({', '.join(SHIPPED)})")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.name:
        print(shipped_path(args.name))
        return 0
    width = max(map(len, SHIPPED))
    for name, (_, what) in SHIPPED.items():
        print(f"{name:<{width}}  {shipped_path(name)}\n{'':<{width}}  {what}")
    return 0
