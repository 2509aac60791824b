"""Opening a --root that is not this host: a directory (a sysroot tree or a sosreport) or a
capture tarball, each surveyed and unpacked in a forked child bounded in time. Apart from
inspector.captures.capture so that commands on this host import neither tarfile nor the
sosreport parser."""
from __future__ import annotations

import os
import signal
import stat
import time

from inspector.captures.errors import CaptureError
from inspector.captures.sosreport import is_sosreport, open_sosreport, sosreport_inside
from inspector.children.parent_death import end_with_parent
from inspector.roots import safe_extract, tempdirs
from inspector.roots.bounded import TimedOut, WorkerFailed, run_forked, run_forked_while_progressing
from inspector.roots.host import SIDECAR_NAME, HostRoot, Unavailable


def open_foreign(spec: str, timeout: float, deadline: float | None = None) -> HostRoot:
    """inspector.captures.capture.open_root for anything but this host."""
    give_up = time.monotonic() + timeout
    kind, sos = _survey_bounded(spec, timeout)
    if kind == "missing":
        raise CaptureError(f"--root {spec}: no such file or directory")
    if kind == "denied":
        raise CaptureError(f"--root {spec}: permission denied (as uid {os.geteuid()})")
    if kind == "dir":
        if sos is not None:
            return _sosreport_root(sos, spec)
        try:
            return HostRoot(spec, timeout=max(0.0, give_up - time.monotonic()))
        except Unavailable as exc:
            raise CaptureError(f"--root {spec}: {exc.reason}") from None
    return _unpack(spec, timeout, deadline)


def _survey_bounded(spec: str, timeout: float) -> tuple[str, str | None]:
    """What `spec` is, from _survey run in a forked child: a directory on a mount that never
    answers hangs every stat of it, and a thread stuck there would keep the command from
    exiting (inspector.roots.bounded)."""
    try:
        kind, sos, rooted = run_forked(lambda: _survey(spec), timeout)
    except TimedOut:
        raise CaptureError(f"--root {spec}: no answer from {spec} after {round(timeout, 1):g} s "
                           "(a hung filesystem? look for processes in D state)") from None
    except WorkerFailed as exc:
        raise CaptureError(f"--root {spec}: cannot be read ({exc})") from None
    if kind == "dir" and sos is None and not rooted:
        raise CaptureError(_not_a_root(spec))
    return kind, sos


def _survey(spec: str) -> tuple[str, str | None, bool]:
    """("missing" | "dir" | "file", the sosreport it is or holds, whether it looks like a
    host root)."""
    try:
        mode = os.stat(spec).st_mode
    except PermissionError:       # a directory on the way we may not search (as nobody)
        return "denied", None, False
    except OSError:
        return "missing", None, False
    if not stat.S_ISDIR(mode):
        return "file", None, False
    if not os.access(spec, os.R_OK | os.X_OK, effective_ids=True):   # /root as nobody
        return "denied", None, False
    sos = spec if is_sosreport(spec) else sosreport_inside(spec)
    return "dir", sos, sos is not None or _has_root_marker(spec)


def _sosreport_root(path: str, spec: str) -> HostRoot:
    try:
        return open_sosreport(path, spec)
    except Unavailable as exc:
        raise CaptureError(f"--root {spec}: {exc.reason}") from None


def _unpack(path: str, stall: float, deadline: float | None = None) -> HostRoot:
    """A capture tarball unpacked member by member (inspector.roots.safe_extract: what is refused,
    skipped and bounded) into a private temp dir, removed at exit and on SIGTERM or SIGHUP,
    opened as a root (a sidecar that cannot be read refuses the capture). The unpacking is
    given up when it makes no progress for `stall` seconds, or at `deadline`."""
    dest = tempdirs.make("inspector-root-")
    try:
        _extract_watched(path, dest, stall, deadline)
    except CaptureError:            # out of time: the partial tree goes without waiting
        tempdirs.remove(dest, wait=False)
        raise
    except safe_extract.ExtractError as exc:
        tempdirs.remove(dest)
        raise CaptureError(f"--root {path}: {exc}") from None
    except BaseException:
        tempdirs.remove(dest)
        raise
    try:
        _check_looks_like_root(dest, path)
        sos = sosreport_inside(dest)   # sos's .tar.xz: one sosreport-HOST-... directory
        root = open_sosreport(sos, path) if sos is not None else HostRoot(dest, label=path)
    except safe_extract.ExtractError as exc:
        tempdirs.remove(dest)
        raise CaptureError(f"--root {path}: {exc}") from None
    except Unavailable as exc:
        tempdirs.remove(dest)
        raise CaptureError(f"--root {path}: {exc.reason}") from None
    except BaseException:
        tempdirs.remove(dest)
        raise
    return root


def _extract_watched(path: str, dest: str, stall: float, deadline: float | None = None) -> None:
    """safe_extract.extract in a forked child, waited for while it reads, writes or computes:
    an archive on a mount that answers its stat and then stalls its reads would leave this
    process asleep in the kernel, deaf to Ctrl-C and its deadline (inspector.roots.bounded)."""
    def extract() -> str | None:
        end_with_parent(parent, signal.SIGKILL)     # never unpacking for a command gone
        try:
            safe_extract.extract(path, dest)
        except safe_extract.ExtractError as exc:
            return str(exc)
        return None

    parent = os.getpid()
    try:    # tempdirs stops the child before it removes the tree the child fills
        refused = run_forked_while_progressing(extract, stall, path,
                                               lambda pid: tempdirs.written_by(dest, pid),
                                               deadline)
    except TimedOut as exc:
        raise CaptureError(f"--root {path}: {exc}") from None
    except WorkerFailed as exc:
        raise CaptureError(f"--root {path}: cannot unpack ({exc})") from None
    if refused is not None:
        raise safe_extract.ExtractError(refused)


ROOT_MARKERS = ("sys", "proc", "etc", "dev", "run", SIDECAR_NAME)


def _check_looks_like_root(path: str, spec: str) -> None:
    """Refuse a directory with none of a root's parts: reading /home as a host would report
    "hardware, no findings" with high confidence about a machine nobody looked at."""
    if sosreport_inside(path) is None and not _has_root_marker(path):
        raise CaptureError(_not_a_root(spec))


def _has_root_marker(path: str) -> bool:
    return any(os.path.lexists(os.path.join(path, marker)) for marker in ROOT_MARKERS)


def _not_a_root(spec: str) -> str:
    return (f"--root {spec}: not a host root or capture (none of {', '.join(ROOT_MARKERS)} "
            "inside)")
