"""What a capture stream cut short still holds: the members that arrived whole, written as a
capture of their own whose sidecar says what is missing and why.

The stream is hostile input like any capture: decompression is bounded (the limits of
inspector.roots.safe_extract), members are only copied here, never unpacked (the names are
checked when the capture is opened, by the same safe extraction as any --root), and only
directories, regular files and symlinks are kept.
"""
from __future__ import annotations

import io
import json
import os
import tarfile
import time
import zlib
from dataclasses import dataclass, field

from inspector.report.sections import NAMES
from inspector.roots.host import MAX_SIDECAR_BYTES, SIDECAR_NAME
from inspector.roots.safe_extract import Limits

MAX_MEMBER_BYTES = 64 * 1024 * 1024     # nothing a capture holds comes near (cpuinfo, DMI)
_CHUNK = 1 << 20
# capture.sh reads etc/ (the resolver, container markers), then proc/, then sys/: the
# sections whose files all come before the place the stream stopped are whole
_WHOLE_ONCE_PAST = {"proc": {"dns"}, "sys": {"dns"}}


@dataclass
class Salvaged:
    members: int = 0
    last: str | None = None             # the last member that arrived whole
    incomplete: dict[str, str] = field(default_factory=dict)   # section -> why


def salvage(stream_path: str, out_path: str, reason: str) -> Salvaged:
    """Copy the whole members of the (gzip or plain tar) stream at `stream_path` into a new
    tar.gz at `out_path`; the sidecar (created if it did not arrive) lists every section not
    known to be whole under capture.incomplete, with `reason`."""
    limits = Limits.for_archive(os.path.getsize(stream_path))
    tar_path = out_path + ".tar"
    _decompress_bounded(stream_path, tar_path, limits.max_bytes)
    done = Salvaged()
    sidecar: dict | None = None
    with open(tar_path, "rb") as raw, tarfile.open(out_path, "w:gz", compresslevel=6) as out:
        try:
            src = tarfile.open(fileobj=raw, mode="r:")  # noqa: SIM115  (closed with `raw`)
        except tarfile.TarError:
            src = None
        while src is not None and done.members < limits.max_entries:
            try:
                member = src.next()
                if member is None:
                    break
                data = _data(src, member)
            except (tarfile.TarError, EOFError, OSError):
                break                      # the cut: a member that did not arrive whole
            if member.name == SIDECAR_NAME and data is not None:
                sidecar = _parse(data)
                done.members += 1
                continue
            if _copy(out, member, data):
                done.members += 1
                done.last = member.name
        top = (done.last or "").split("/", 1)[0]
        whole = _WHOLE_ONCE_PAST.get(top, set())
        done.incomplete = {name: reason for name in NAMES if name not in whole}
        doc = sidecar if sidecar is not None else {"version": 1, "captured_at": time.time(),
                                                   "facts": {}}
        facts = doc.setdefault("facts", {})
        if not isinstance(facts, dict):
            doc["facts"] = facts = {}
        capture = facts.setdefault("capture", {})
        if not isinstance(capture, dict):
            facts["capture"] = capture = {}
        incomplete = capture.get("incomplete")
        capture["incomplete"] = {**(incomplete if isinstance(incomplete, dict) else {}),
                                 **done.incomplete}
        body = json.dumps(doc, indent=1, sort_keys=True).encode()
        info = tarfile.TarInfo(SIDECAR_NAME)
        info.size, info.mode, info.mtime = len(body), 0o644, int(time.time())
        out.addfile(info, io.BytesIO(body))
    os.unlink(tar_path)
    return done


def _decompress_bounded(stream_path: str, tar_path: str, max_bytes: int) -> None:
    """The tar stream as far as it can be read, at most `max_bytes` (a gzip bomb stops
    there); a cut or corrupt gzip stream ends it, keeping what came before."""
    with open(stream_path, "rb") as src, open(tar_path, "wb") as dst:
        head = src.read(2)
        src.seek(0)
        inflate = zlib.decompressobj(31) if head == b"\x1f\x8b" else None
        written = 0
        while written < max_bytes and (chunk := src.read(_CHUNK)):
            if inflate is None:
                data = chunk
            else:
                try:
                    data = inflate.decompress(chunk, max_bytes - written)
                except zlib.error:
                    break
            dst.write(data[:max_bytes - written])
            written += len(data)
            if inflate is not None and inflate.eof:
                break


def _data(src: tarfile.TarFile, member: tarfile.TarInfo) -> bytes | None:
    if not member.isreg():
        return None
    if member.size > MAX_MEMBER_BYTES:
        raise tarfile.TarError("member too big")
    handle = src.extractfile(member)
    if handle is None:
        return None
    data = handle.read()
    if len(data) != member.size:
        raise EOFError("member cut short")
    return data


def _copy(out: tarfile.TarFile, member: tarfile.TarInfo, data: bytes | None) -> bool:
    info = tarfile.TarInfo(member.name)
    info.mtime = int(member.mtime) if isinstance(member.mtime, (int, float)) else 0
    if member.isdir():
        info.type, info.mode = tarfile.DIRTYPE, 0o755
        out.addfile(info)
    elif member.issym():
        info.type, info.linkname, info.mode = tarfile.SYMTYPE, member.linkname, 0o777
        out.addfile(info)
    elif member.isreg() and data is not None:
        info.size, info.mode = len(data), 0o644
        out.addfile(info, io.BytesIO(data))
    else:
        return False
    return True


def _parse(data: bytes) -> dict | None:
    if len(data) > MAX_SIDECAR_BYTES:
        return None
    try:
        doc = json.loads(data.decode("utf-8", "replace"), parse_constant=lambda _name: None)
    except (ValueError, RecursionError):
        return None
    return doc if isinstance(doc, dict) else None
