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
import time
from typing import TYPE_CHECKING

from inspector.captures.errors import CaptureError  # noqa: F401  (re-exported: callers catch it here)
from inspector.roots.host import OPEN_TIMEOUT, SIDECAR_NAME, HostRoot

if TYPE_CHECKING:
    import tarfile


def _add(tar: tarfile.TarFile, name: str, kind: str, data: bytes = b"", target: str = "",
         mtime: float = 0.0) -> None:
    import tarfile  # imported by write_capture already; not at the top: see write_capture
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
    import tarfile  # here, not at the top: only `inspector capture` writes a tarball
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
    from inspector.text.redact import redact_cmdline  # its patterns: for a capture only
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
    # only another tree or a capture needs tarfile and the sosreport parser
    from inspector.captures.foreign import open_foreign
    return open_foreign(spec, timeout, deadline)
