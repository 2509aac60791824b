"""`inspector capture`: record what discovery reads into a tar.gz for offline `--root` use."""
from __future__ import annotations

import argparse
import os
import socket
import time

from inspector.capture import write_capture
from inspector.collect import build_report
from inspector.commands.common import CliError, eprint, positive_float
from inspector.host import HostRoot


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("capture", help="write what discovery reads to a tar.gz (for --root)")
    p.add_argument("-o", "--output", metavar="FILE.tar.gz", help="default: inspector-HOST-TIME.tar.gz")
    p.add_argument("--timeout", type=positive_float, default=15.0, help="per-collector timeout, seconds")
    p.set_defaults(func=run)


def capture_live(out_path: str, timeout: float = 15.0) -> dict:
    root = HostRoot("/", record=True)
    build_report(root, timeout=timeout)
    try:  # one sample of the live counters, so `top --root` can say what it saw
        from inspector.live import capture_sample
        capture_sample(root)
    except ImportError:
        pass
    return write_capture(root, out_path)


def run(args: argparse.Namespace) -> int:
    if getattr(args, "root", None) not in (None, "/"):
        raise CliError("capture reads the live host; --root makes no sense here")
    out = args.output or time.strftime(f"inspector-{socket.gethostname()}-%Y%m%dT%H%M%S.tar.gz")
    if os.path.isdir(out):
        raise CliError(f"-o {out}: is a directory")
    try:
        info = capture_live(out, args.timeout)
    except OSError as exc:
        raise CliError(f"cannot write {out}: {exc.strerror or exc}") from None
    eprint(f"wrote {info['path']}: {info['files']} files, {info['entries']} entries, "
           f"{info['bytes']} bytes")
    return 0
