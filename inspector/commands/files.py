"""`inspector files [NAME]`: where the man page, the shell completions, the systemd units and
the monitoring rules shipped with the package are installed; `--install-man` copies the man
page where `man` looks (pipx before 1.3 leaves it in its venv, where `man` never does)."""
from __future__ import annotations

import argparse
import os

from inspector.commands import SUMMARIES
from inspector.commands.common import CliError, exit_epilog
from inspector.shipped import SHIPPED, shipped_path

EPILOG = """\
examples:
  man "$(inspector files man)"
  sudo inspector files --install-man           # then: man inspector
  sudo cp "$(inspector files systemd)"/inspector-record.* /etc/systemd/system/
  ssh HOST sh -s < "$(inspector files capture.sh)" > HOST.tar.gz   # nothing installed there

""" + exit_epilog(ok="printed (or installed)")


def default_man_dir() -> str:
    """Where `man` looks without MANPATH: /usr/local/share/man for root; for a user the
    share/man beside ~/.local/bin, which man-db derives from PATH."""
    if os.geteuid() == 0:
        return "/usr/local/share/man"
    base = os.environ.get("XDG_DATA_HOME") or os.path.expanduser("~/.local/share")
    return os.path.join(base, "man")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("files", help=SUMMARIES["files"],
                       epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("name", nargs="?", choices=list(SHIPPED), metavar="NAME",
                   help=f"print only this one's path ({', '.join(SHIPPED)})")
    p.add_argument("--install-man", action="store_true",
                   help="copy the man page to MAN_DIR/man1/inspector.1, where man finds it")
    p.add_argument("--man-dir", metavar="MAN_DIR",
                   help="for --install-man (default: /usr/local/share/man as root, else "
                        "~/.local/share/man)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.man_dir and not args.install_man:
        raise CliError("--man-dir goes with --install-man")
    if args.install_man:
        if args.name:
            raise CliError("--install-man takes no NAME")
        print(install_man(args.man_dir or default_man_dir()))
        return 0
    if args.name:
        print(shipped_path(args.name))
        return 0
    width = max(map(len, SHIPPED))
    for name, (_, what) in SHIPPED.items():
        print(f"{name:<{width}}  {shipped_path(name)}\n{'':<{width}}  {what}")
    return 0


def install_man(man_dir: str) -> str:
    """The shipped page written (atomically, mode 0644) to MAN_DIR/man1/inspector.1; its path."""
    from inspector.writing.atomic import OutputError, write_atomic
    section = os.path.join(man_dir, "man1")
    target = os.path.join(section, "inspector.1")
    with open(shipped_path("man"), "rb") as page:
        data = page.read()
    try:
        os.makedirs(section, mode=0o755, exist_ok=True)
        write_atomic(target, data)
        os.chmod(target, 0o644)
    except OutputError as exc:
        raise CliError(f"--install-man: {exc}") from None
    except OSError as exc:
        raise CliError(f"cannot install the man page in {section}: "
                       f"{exc.strerror or exc}") from None
    return target
