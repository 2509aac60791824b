"""Captures: write what discovery read into a tar.gz, and open one (or a directory) as a root.

A capture holds exactly the files, directory listings and symlinks the collectors touched on the
live host (recorded by HostRoot), plus the sidecar of facts (command outputs, CPUID leaves,
uname ...). Entries that were listed but never read become empty stubs, so no file contents
outside what was read leave the machine. The kernel command line is recorded with secret-looking
values redacted (inspector.text.redact); the sidecar's "redactions" says which.
"""
from __future__ import annotations

import io
import json
import os
import signal
import stat
import tarfile
import time

from inspector.captures.sosreport import is_sosreport, open_sosreport, sosreport_inside
from inspector.children.parent_death import end_with_parent
from inspector.roots import safe_extract, tempdirs
from inspector.roots.bounded import TimedOut, WorkerFailed, run_forked, run_forked_while_progressing
from inspector.roots.host import OPEN_TIMEOUT, SIDECAR_NAME, HostRoot, Unavailable
from inspector.text.redact import redact_cmdline


class CaptureError(Exception):
    """A --root argument that cannot be opened (one clear line for the user)."""


def _add(tar: tarfile.TarFile, name: str, kind: str, data: bytes = b"", target: str = "",
         mtime: float = 0.0) -> None:
    info = tarfile.TarInfo(name)
    info.mtime = int(mtime)
    if kind == "dir":
        info.type = tarfile.DIRTYPE
        info.mode = 0o755
        tar.addfile(info)
    elif kind == "link":
        info.type = tarfile.SYMTYPE
        info.linkname = target
        tar.addfile(info)
    else:
        info.mode = 0o644
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))


def _relative_target(link_rel: str, target: str) -> str:
    """Absolute link targets (/etc/resolv.conf -> /run/...) are rewritten relative to the root,
    so the capture stays self-contained and safe to unpack."""
    if not target.startswith("/"):
        return target
    parent = os.path.dirname(link_rel) or "."
    return os.path.relpath(target.lstrip("/") or ".", parent)


def write_capture(root: HostRoot, out_path: str) -> dict:
    """Write the recording of `root` (a live root created with record=True) as tar.gz, atomically."""
    rec = root.recording
    if rec is None:
        raise ValueError("write_capture needs a recording HostRoot")
    now = time.time()
    entries: dict[str, tuple[str, bytes, str]] = {}  # path -> (kind, data, link target)
    with rec.lock:
        for rel, listing in rec.dirs.items():
            if rel:
                entries.setdefault(rel, ("dir", b"", ""))
            for name, kind in listing:
                path = f"{rel}/{name}" if rel else name
                if kind == "link":
                    continue  # written from rec.links below
                entries.setdefault(path, ("dir" if kind == "dir" else "file", b"", ""))
        for rel, target in rec.links.items():
            entries[rel] = ("link", b"", _relative_target(rel, target))
        for rel, data in rec.files.items():
            entries[rel] = ("file", data, "")
    redactions = _redact(entries)
    # A path that is both a directory (from listings) and has recorded children is a dir.
    # atomic_output: never over a device node (-o /dev/sda), private (0600) when new
    from inspector.writing.atomic import atomic_output
    with (atomic_output(out_path, private=True) as raw,
          tarfile.open(fileobj=raw, mode="w:gz", compresslevel=6) as tar):
            for path in sorted(entries):
                kind, data, target = entries[path]
                _add(tar, path, kind, data, target, now)
            doc = root.sidecar()
            if redactions:
                doc["redactions"] = redactions
            sidecar = json.dumps(doc, indent=1, sort_keys=True).encode()
            _add(tar, SIDECAR_NAME, "file", sidecar, mtime=now)
    files = sum(1 for k, _, _ in entries.values() if k == "file")
    return {"path": out_path, "entries": len(entries), "files": files,
            "bytes": os.path.getsize(out_path), "redacted": redactions}


# Files whose recorded copy has secret-looking values redacted.
REDACTED_FILES = ("proc/cmdline",)


def _redact(entries: dict[str, tuple[str, bytes, str]]) -> dict[str, list[str]]:
    """Redact, in place, the recorded files that can carry credentials; {path: what was}."""
    done: dict[str, list[str]] = {}
    for rel in REDACTED_FILES:
        kind, data, target = entries.get(rel, ("", b"", ""))
        if kind != "file" or not data:
            continue
        text, redacted = redact_cmdline(data.decode("utf-8", "replace"))
        if redacted:
            entries[rel] = (kind, text.encode(), target)
            done[rel] = redacted
    return done


def open_root(spec: str | None, record: bool = False,
              timeout: float = OPEN_TIMEOUT, deadline: float | None = None) -> HostRoot:
    """`--root` argument to a HostRoot: None or "/" is live; a directory; or a .tar.gz capture
    (unpacked into a private temp dir removed at exit). Raises CaptureError with one clear line,
    "no answer from ... after N s" when what `spec` names has not answered within `timeout` (a
    directory on a hung mount). `deadline` (time.monotonic()) bounds the whole opening,
    unpacking included: a command with a bound on its whole run (check -t)."""
    if spec in (None, "", "/"):
        return HostRoot("/", record=record)
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
