"""`inspector capture`: record what discovery reads into a tar.gz for offline `--root` use."""
from __future__ import annotations

import argparse
import os
import socket
import time

from inspector.captures.capture import write_capture
from inspector.commands import SUMMARIES
from inspector.commands import ssh as ssh_arguments
from inspector.commands.common import (
    COLLECTOR_TIMEOUT,
    CliError,
    Duration,
    check_output,
    eprint,
    exit_epilog,
    path_argument,
)
from inspector.model import Unknown
from inspector.report.collect import build_report
from inspector.roots.bounded import TimedOut, WorkerFailed, run_forked
from inspector.roots.host import HostRoot
from inspector.writing.atomic import OutputError


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("capture", help=SUMMARIES["capture"],
                       epilog=exit_epilog(ok="written (a section that could not be read is "
                                             "named on stderr)"))
    p.add_argument("-o", "--output", metavar="FILE.tar.gz", type=path_argument,
                   help="a regular file or a new path (default: inspector-HOST-TIME.tar.gz); "
                        "written atomically, mode 0600 when new")
    p.add_argument("--timeout", type=COLLECTOR_TIMEOUT, default=15.0, metavar="DURATION",
                   help=f"per-collector timeout (default 15s, {COLLECTOR_TIMEOUT.bounds}); "
                        "with --ssh, each tool's on the host (at most 10s)")
    p.add_argument("--ssh", metavar="[USER@]HOST", default=argparse.SUPPRESS,
                   type=ssh_arguments._destination,
                   help="capture HOST over the system ssh, with only a POSIX shell there "
                        "(what `inspector files capture.sh` runs); also "
                        "ssh://[USER@]HOST[:PORT]")
    p.add_argument("--ssh-option", metavar="OPTION", action="append", default=argparse.SUPPRESS,
                   type=ssh_arguments._option,
                   help="an ssh -o option (repeatable); host key checking stays on")
    p.add_argument("--deadline", type=SSH_DEADLINE, default=None, metavar="DURATION",
                   help=f"with --ssh: give the host up after this long, keeping what arrived "
                        f"whole (default 3m, {SSH_DEADLINE.bounds})")
    p.set_defaults(func=run)


SSH_DEADLINE = Duration(maximum=3600)


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
    if getattr(args, "ssh", None):
        return _run_over_ssh(args)
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


def _run_over_ssh(args: argparse.Namespace) -> int:
    """capture.sh run on the host over ssh; the tar.gz it prints, once it has opened as a
    capture here (safe extraction: a hostile stream is refused, not written to -o), is written
    to -o atomically."""
    from inspector.captures.capture import CaptureError
    from inspector.remote.capture import DEADLINE_S, TOOL_TIMEOUT_S, capture, open_capture
    from inspector.remote.ssh import SshError, host_label
    from inspector.roots import tempdirs
    from inspector.writing.atomic import atomic_output
    out = args.output or time.strftime(f"inspector-{host_label(args.ssh)}-%Y%m%dT%H%M%S.tar.gz")
    check_output(out)
    try:
        remote = capture(ssh_arguments.target_from_args(args),
                         tool_timeout=min(TOOL_TIMEOUT_S, args.timeout),
                         deadline=args.deadline or DEADLINE_S)
        root = open_capture(remote)
    except SshError as exc:
        raise CliError(str(exc)) from None
    except CaptureError as exc:
        raise CliError(f"ssh {args.ssh}: what came back is not a readable capture: "
                       f"{str(exc).partition(': ')[2] or exc}") from None
    tempdirs.remove(root.path)
    try:
        with open(remote.path, "rb") as src, atomic_output(out, private=True) as dst:
            while chunk := src.read(1 << 20):
                dst.write(chunk)
    except OutputError as exc:
        raise CliError(f"-o {exc}") from None
    except OSError as exc:
        raise CliError(f"cannot write {out}: {exc.strerror or exc}") from None
    eprint(f"wrote {out}: {os.path.getsize(out)} bytes from {args.ssh} in "
           f"{remote.outcome.seconds:.1f} s")
    if remote.partial:
        eprint(f"warning: {remote.partial}: the capture holds what arrived whole "
               f"({remote.salvaged.members if remote.salvaged else 0} entries); its sections "
               "say what is missing")
    return 0
