"""`inspector capture`: record what discovery reads into a tar.gz for offline `--root` use."""
from __future__ import annotations

import argparse
import socket
import time

from inspector.atomic_write import OutputError
from inspector.capture import write_capture
from inspector.collect import build_report
from inspector.commands.common import COLLECTOR_TIMEOUT, CliError, check_output, eprint
from inspector.host import HostRoot
from inspector.model import Unknown


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("capture", help="write what discovery reads to a tar.gz (for --root)")
    p.add_argument("-o", "--output", metavar="FILE.tar.gz",
                   help="a regular file or a new path (default: inspector-HOST-TIME.tar.gz); "
                        "written atomically, mode 0600 when new")
    p.add_argument("--timeout", type=COLLECTOR_TIMEOUT, default=15.0, metavar="DURATION",
                   help=f"per-collector timeout (default 15s, {COLLECTOR_TIMEOUT.bounds})")
    p.set_defaults(func=run)


def capture_live(out_path: str, timeout: float = 15.0) -> dict:
    root = HostRoot("/", record=True)
    report = build_report(root, timeout=timeout)
    try:  # one sample of the live counters, so `top --root` can say what it saw
        from inspector.live import capture_sample
        capture_sample(root)
    except ImportError:
        pass
    # a section that timed out or failed here is missing from the capture too: the person who
    # ships it must know now, and a replay must say so (not show the files read before the
    # hang as if they were the whole story)
    incomplete = {name: section.reason for name, section in report.sections.items()
                  if isinstance(section, Unknown)}
    root.fact("capture", "incomplete", lambda: incomplete)
    info = write_capture(root, out_path)
    info["incomplete"] = incomplete
    return info


def run(args: argparse.Namespace) -> int:
    if getattr(args, "root", None) not in (None, "/"):
        raise CliError("capture reads the live host; --root makes no sense here")
    out = args.output or time.strftime(f"inspector-{socket.gethostname()}-%Y%m%dT%H%M%S.tar.gz")
    check_output(out)        # a device, a directory or a FIFO: refused before the capture runs
    try:
        info = capture_live(out, args.timeout)
    except OutputError as exc:
        raise CliError(f"-o {exc}") from None
    except OSError as exc:
        raise CliError(f"cannot write {out}: {exc.strerror or exc}") from None
    eprint(f"wrote {info['path']}: {info['files']} files, {info['entries']} entries, "
           f"{info['bytes']} bytes")
    for name, reason in info.get("incomplete", {}).items():
        eprint(f"warning: {name} not collected ({reason}): the capture lacks it; a hung read "
               "is worth a look (D-state processes, kernel log) before a retry with a longer "
               "--timeout")
    return 0
