"""`inspector capture`: record what discovery reads into a tar.gz for offline `--root` use."""
from __future__ import annotations

import argparse
import socket
import time

from inspector.atomic_write import OutputError
from inspector.captures.capture import write_capture
from inspector.collect import build_report
from inspector.commands.common import (
    COLLECTOR_TIMEOUT,
    CliError,
    check_output,
    eprint,
    exit_epilog,
    path_argument,
)
from inspector.model import Unknown
from inspector.roots.bounded import TimedOut, WorkerFailed, run_forked
from inspector.roots.host import HostRoot


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("capture", help="write what discovery reads to a tar.gz (for --root)",
                       epilog=exit_epilog(ok="written (a section that could not be read is "
                                             "named on stderr)"))
    p.add_argument("-o", "--output", metavar="FILE.tar.gz", type=path_argument,
                   help="a regular file or a new path (default: inspector-HOST-TIME.tar.gz); "
                        "written atomically, mode 0600 when new")
    p.add_argument("--timeout", type=COLLECTOR_TIMEOUT, default=15.0, metavar="DURATION",
                   help=f"per-collector timeout (default 15s, {COLLECTOR_TIMEOUT.bounds})")
    p.set_defaults(func=run)


# the capture's child process answers within its collectors' timeout plus this: one bounded
# live sample and the writing of the tar.gz (an output on a hung filesystem ends here too)
CAPTURE_WRITE_GRACE = 60.0


def capture_live(out_path: str, timeout: float = 15.0) -> dict:
    """Collect, sample and write in a child process, so that a read that never returns
    leaves the child behind, not this command unable to exit (see inspector.roots.bounded).
    Raises OutputError or OSError like write_capture."""
    try:
        info = run_forked(lambda: _capture_in_child(out_path, timeout),
                          timeout + CAPTURE_WRITE_GRACE)
    except (TimedOut, WorkerFailed) as exc:
        raise OSError(f"capture {exc}") from None
    if "output_error" in info:
        raise OutputError(info["output_error"])
    if "os_error" in info:
        raise OSError(*info["os_error"])
    return info


def _capture_in_child(out_path: str, timeout: float) -> dict:
    try:
        return _capture(out_path, timeout)
    except OutputError as exc:      # exceptions travel back as values, with their kind
        return {"output_error": str(exc)}
    except OSError as exc:
        return {"os_error": (exc.errno, exc.strerror or str(exc))}


def _capture(out_path: str, timeout: float) -> dict:
    root = HostRoot("/", record=True)
    report = build_report(root, timeout=timeout)
    # a section that timed out or failed here is missing from the capture too: the person who
    # ships it must know now, and a replay must say so (not show the files read before the
    # hang as if they were the whole story)
    incomplete = {name: section.reason for name, section in report.sections.items()
                  if isinstance(section, Unknown)}
    try:  # one sample of the live counters, so `top --root` can say what it saw
        from inspector.live import capture_sample
        incomplete.update({f"live {source}": reason
                           for source, reason in capture_sample(root).items()})
    except ImportError:
        pass
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
