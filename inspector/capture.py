"""Captures: write what discovery read into a tar.gz, and open one (or a directory) as a root.

A capture holds exactly the files, directory listings and symlinks the collectors touched on the
live host (recorded by HostRoot), plus the sidecar of facts (command outputs, CPUID leaves,
uname ...). Entries that were listed but never read become empty stubs, so no file contents
outside what was read leave the machine.
"""
from __future__ import annotations

import atexit
import io
import json
import os
import shutil
import tarfile
import tempfile
import time

from inspector.host import SIDECAR_NAME, HostRoot, Unavailable
from inspector.sosreport import is_sosreport, open_sosreport, sosreport_inside


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
    # A path that is both a directory (from listings) and has recorded children is a dir.
    # atomic_output: never over a device node (-o /dev/sda), private (0600) when new
    from inspector.atomic_write import atomic_output
    with atomic_output(out_path, private=True) as raw:
        with tarfile.open(fileobj=raw, mode="w:gz", compresslevel=6) as tar:
            for path in sorted(entries):
                kind, data, target = entries[path]
                _add(tar, path, kind, data, target, now)
            sidecar = json.dumps(root.sidecar(), indent=1, sort_keys=True).encode()
            _add(tar, SIDECAR_NAME, "file", sidecar, mtime=now)
    files = sum(1 for k, _, _ in entries.values() if k == "file")
    return {"path": out_path, "entries": len(entries), "files": files,
            "bytes": os.path.getsize(out_path)}


def open_root(spec: str | None, record: bool = False) -> HostRoot:
    """`--root` argument to a HostRoot: None or "/" is live; a directory; or a .tar.gz capture
    (unpacked into a private temp dir removed at exit). Raises CaptureError with one clear line."""
    if spec in (None, "", "/"):
        return HostRoot("/", record=record)
    if not os.path.exists(spec):
        raise CaptureError(f"--root {spec}: no such file or directory")
    if os.path.isdir(spec):
        sos = spec if is_sosreport(spec) else sosreport_inside(spec)
        if sos is not None:
            return _sosreport_root(sos, spec)
        _check_looks_like_root(spec, spec)
        try:
            return HostRoot(spec)
        except Unavailable as exc:
            raise CaptureError(f"--root {spec}: {exc.reason}") from None
    unpacked = _unpack(spec)
    sos = sosreport_inside(unpacked)   # sos's .tar.xz: one sosreport-HOST-... directory
    return _sosreport_root(sos, spec) if sos is not None else HostRoot(unpacked, label=spec)


def _sosreport_root(path: str, spec: str) -> HostRoot:
    try:
        return open_sosreport(path, spec)
    except Unavailable as exc:
        raise CaptureError(f"--root {spec}: {exc.reason}") from None


def _unpack(path: str) -> str:
    try:
        tar = tarfile.open(path, mode="r:*")
    except (tarfile.TarError, OSError, EOFError) as exc:
        raise CaptureError(f"--root {path}: not a readable capture (tar.gz): "
                           f"{_first_line(exc)}") from None
    dest = tempfile.mkdtemp(prefix="inspector-root-")
    atexit.register(shutil.rmtree, dest, ignore_errors=True)
    try:
        with tar:
            # The 'data' filter refuses absolute paths, links leaving the tree, devices and setuid.
            tar.extractall(dest, filter="data")
    except (tarfile.TarError, OSError, EOFError, ValueError) as exc:
        raise CaptureError(f"--root {path}: corrupt or truncated capture: "
                           f"{_first_line(exc)}") from None
    _check_looks_like_root(dest, path)
    try:
        return HostRoot(dest, label=path).path
    except Unavailable as exc:
        raise CaptureError(f"--root {path}: {exc.reason}") from None


ROOT_MARKERS = ("sys", "proc", "etc", "dev", "run", SIDECAR_NAME)


def _check_looks_like_root(path: str, spec: str) -> None:
    """Refuse a directory with none of a root's parts: reading /home as a host would report
    "hardware, no findings" with high confidence about a machine nobody looked at."""
    if sosreport_inside(path) is None and not any(
            os.path.exists(os.path.join(path, marker)) for marker in ROOT_MARKERS):
        raise CaptureError(f"--root {spec}: not a host root or capture (none of "
                           f"{', '.join(ROOT_MARKERS)} inside)")


def _first_line(exc: BaseException) -> str:
    # tarfile's "could not be opened" error lists every compression method tried, one per line
    text = str(exc).strip() or type(exc).__name__
    if text.startswith("file could not be opened successfully"):
        return "not gzip, bzip2, xz or tar data"
    return text.splitlines()[0].rstrip(":")
