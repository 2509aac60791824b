"""Unpacking a capture tarball given to `--root` (tar.gz, tar.xz as sos writes, tar.bz2, tar),
member by member, trusting nothing in it.

tarfile's `data` filter is not relied on: it does not exist before Python 3.11.4 (Debian 12's
3.11.2 has no `filter=`), and on 3.11.2-3.11.12 a chain of symlinks under names long enough
to overflow PATH_MAX in os.path.realpath gets files written outside the destination
(CVE-2025-4517). Here:

- names are normalised and checked first: an absolute name, a `..` component, a NUL, a
  component over 255 bytes, a path over 1024 bytes or deeper than 128 levels refuses the whole
  capture (no tool that writes captures or sosreports makes one);
- only directories, regular files and symlinks are made; hardlinks, devices, FIFOs, sparse and
  other members are skipped (counted in `Extracted.skipped`);
- every entry is created relative to a directory fd opened with O_NOFOLLOW (mkdirat, openat
  with O_CREAT|O_EXCL|O_NOFOLLOW, symlinkat): nothing is ever created through a link, so a
  member under a name the archive made a symlink is skipped, never written where it points;
- a symlink is kept only when its target, read from where the link sits, stays inside the tree
  (absolute targets are rewritten relative to the top, as `inspector capture` does) and has the
  canonical form `../../a/b` (no `..` after a name, which a link on the way could redirect);
- modes are not taken from the archive: directories 0755, files 0644 (less the umask), no
  setuid, setgid or sticky bit, owner the user unpacking;
- the unpacked stream is bounded as it is read: at most INSPECTOR_MAX_UNPACKED_BYTES bytes
  (default 20 times the capture's size, at least 256 MiB) and INSPECTOR_MAX_ENTRIES members
  (default 200,000); both environment variables take a whole number to raise or lower them;
- the compressed stream is read to its end, so gzip's CRC and length, xz's and bzip2's checks
  are verified: a capture with flipped bytes is refused as corrupt, never read as a host.
"""
from __future__ import annotations

import bz2
import errno
import gzip
import lzma
import os
import stat
import tarfile
import zlib
from dataclasses import dataclass, field

UNPACK_RATIO = 20
MIN_UNPACKED_BYTES = 256 * 1024 * 1024
DEFAULT_MAX_ENTRIES = 200_000
MAX_PATH_BYTES = 1024          # relative; PATH_MAX is 4096 with the temp dir in front
MAX_NAME_BYTES = 255
MAX_DEPTH = 128
MAX_HEADER_BYTES = 1024 * 1024  # a pax or GNU long-name header; tarfile holds it in memory
CHUNK = 1024 * 1024
_OPEN_DIRS = 256               # directory fds kept open while unpacking

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_NEW_FILE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


class ExtractError(Exception):
    """The capture cannot be unpacked; str() is one line for the user."""


class _Skip(Exception):
    """This member is left out; str() says why."""


@dataclass
class Limits:
    max_bytes: int
    max_entries: int

    @classmethod
    def for_archive(cls, size: int, environ=os.environ) -> Limits:
        return cls(_env_int(environ, "INSPECTOR_MAX_UNPACKED_BYTES",
                            max(UNPACK_RATIO * size, MIN_UNPACKED_BYTES)),
                   _env_int(environ, "INSPECTOR_MAX_ENTRIES", DEFAULT_MAX_ENTRIES))


@dataclass
class Extracted:
    files: int = 0
    dirs: int = 0
    links: int = 0
    unpacked_bytes: int = 0
    skipped: dict[str, int] = field(default_factory=dict)

    def skip(self, reason: str) -> None:
        self.skipped[reason] = self.skipped.get(reason, 0) + 1


def extract(archive: str, dest: str, limits: Limits | None = None) -> Extracted:
    """Unpack `archive` into the existing, empty, private directory `dest`. ExtractError says
    why it cannot be; what was unpacked before is the caller's to remove."""
    fd = _open_regular(archive)
    raw = os.fdopen(fd, "rb")
    with raw:
        limits = limits or Limits.for_archive(os.fstat(fd).st_size)
        inner = _decompressor(raw)
        stream = _Metered(inner, limits.max_bytes)
        try:
            try:
                # "r:" over a stream that only seeks forward: tarfile's own stream mode ("r|")
                # copies its whole read buffer on every small read (60,000 small files: 27 s)
                tar = tarfile.open(  # noqa: SIM115  (closed by the `with tar` below)
                    fileobj=stream,  # type: ignore[call-overload]  # reads like a file: enough
                    mode="r:", tarinfo=_BoundedTarInfo)
            except tarfile.ReadError:
                if inner is raw:
                    raise ExtractError("not a readable capture: not gzip, bzip2, xz or tar "
                                       "data") from None
                raise
            with tar, _Writer(dest) as writer:
                return _unpack(tar, stream, writer, limits)
        except (tarfile.TarError, EOFError, zlib.error, lzma.LZMAError) as exc:
            raise ExtractError(f"corrupt or truncated capture: {_first_line(exc)}") from None
        except OSError as exc:
            if isinstance(exc, gzip.BadGzipFile) or exc.errno is None:
                # gzip's CRC and length, bz2's "Invalid data stream": a damaged capture
                raise ExtractError(f"corrupt or truncated capture: {_first_line(exc)}") from None
            raise ExtractError(f"cannot unpack: {exc.strerror or exc}") from None


def _unpack(tar: tarfile.TarFile, stream: _Metered, writer: _Writer,
            limits: Limits) -> Extracted:
    done = Extracted()
    entries = 0
    while (member := tar.next()) is not None:
        tar.members.clear()  # type: ignore[attr-defined]  # else every TarInfo is kept
        entries += 1
        if entries > limits.max_entries:
            raise ExtractError(f"more than {limits.max_entries} entries (INSPECTOR_MAX_ENTRIES "
                               "raises the limit)")
        parts = _member_parts(member.name)
        if not parts:
            continue               # "./": the top itself
        writer.trim()
        try:
            if member.isdir():
                writer.directory(parts)
                done.dirs += 1
            elif member.type in (tarfile.REGTYPE, tarfile.AREGTYPE, tarfile.CONTTYPE) \
                    and member.sparse is None:
                # the data read straight from the stream: tarfile.extractfile() builds a
                # buffered file object per member (a third of the time of 200,000 small files)
                stream.seek(member.offset_data)
                writer.file(parts, stream, member.size)
                done.files += 1
            elif member.issym():
                writer.symlink(parts, member.linkname)
                done.links += 1
            else:
                done.skip(_kind(member))
        except _Skip as why:
            done.skip(str(why))
    # tarfile stops at the end-of-archive block, and as quietly where the data just ends: a
    # tar cut at a member boundary reads as a whole one with fewer members. The zero block
    # was read when there is one (the stream is past the next header's place).
    if stream.count <= tar.offset:      # tarfile's read position
        raise ExtractError("truncated capture: it ends after a member, without the tar "
                           "end-of-archive blocks (a copy cut short?)")
    # what follows must be zeros, read to the end of the compressed stream so that its
    # checksum is verified
    while chunk := stream.read(CHUNK):
        if chunk.strip(b"\0"):
            raise ExtractError("corrupt capture: data after the end of the archive")
    done.unpacked_bytes = stream.count
    return done


# ----------------------------------------------------------------------------- reading
def _open_regular(path: str) -> int:
    """An fd to read `path`, a regular file: its type is checked before it is opened (`--root
    /dev/watchdog` must not start a watchdog, a FIFO must not block), then it is reopened from
    the checked handle."""
    try:
        handle = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except OSError as exc:
        raise ExtractError(f"cannot open: {exc.strerror or exc}") from None
    try:
        if not stat.S_ISREG(os.fstat(handle).st_mode):
            raise ExtractError("not a regular file")
        try:
            return os.open(f"/proc/self/fd/{handle}", os.O_RDONLY | os.O_CLOEXEC)
        except OSError as exc:
            raise ExtractError(f"cannot open: {exc.strerror or exc}") from None
    finally:
        os.close(handle)


def _decompressor(raw):
    head = raw.peek(6)[:6] if hasattr(raw, "peek") else b""
    if head.startswith(b"\x1f\x8b"):
        return gzip.GzipFile(fileobj=raw, mode="rb")
    if head.startswith(b"\xfd7zXZ\x00") or head.startswith(b"\x5d\x00\x00"):
        return lzma.LZMAFile(raw)
    if head.startswith(b"BZh"):
        return bz2.BZ2File(raw)
    if head.startswith(b"\x28\xb5\x2f\xfd"):
        raise ExtractError("zstd-compressed: unpack it first (unzstd) and give the directory")
    return raw             # a plain tar, or not a tar at all (tarfile says which)


class _Metered:
    """The decompressed stream, refused past `limit` bytes: a bomb stops as soon as it has
    unpacked the limit, whatever part of the archive (data, headers, padding) carries it.
    It seeks forward only (by reading): a header that sends tarfile backwards (a negative size,
    CVE-2025-8194's endless loop) is an error, never a rewind of the decompressor."""

    def __init__(self, inner, limit: int):
        self.inner, self.limit, self.count = inner, limit, 0

    def read(self, size: int = -1) -> bytes:
        if size is None or size < 0:
            size = CHUNK
        data = self.inner.read(min(size, self.limit - self.count + 1))
        self.count += len(data)
        if self.count > self.limit:
            raise ExtractError(f"unpacks to more than {self.limit} bytes "
                               "(INSPECTOR_MAX_UNPACKED_BYTES raises the limit)")
        return data

    def tell(self) -> int:
        return self.count

    def seek(self, offset: int, whence: int = 0) -> int:
        if whence == 1:
            offset += self.count
        elif whence != 0:
            raise tarfile.ReadError("seek from the end of a compressed stream")
        if offset < self.count:
            raise tarfile.ReadError("a member points backwards in the archive")
        while self.count < offset:
            if not self.read(min(CHUNK, offset - self.count)):
                break
        return self.count


class _BoundedTarInfo(tarfile.TarInfo):
    """tarfile reads a pax or GNU long-name header whole into memory: bounded first.
    (_proc_member is tarfile's per-member dispatch, the same since Python 2.)"""

    def _proc_member(self, tarfile_):
        if self.type in (tarfile.XHDTYPE, tarfile.XGLTYPE, tarfile.SOLARIS_XHDTYPE,
                         tarfile.GNUTYPE_LONGNAME, tarfile.GNUTYPE_LONGLINK) \
                and self.size > MAX_HEADER_BYTES:
            raise ExtractError(f"an extended header of {self.size} bytes (at most "
                               f"{MAX_HEADER_BYTES})")
        return super()._proc_member(tarfile_)  # type: ignore[misc]  # tarfile's own hook


# ----------------------------------------------------------------------------- names
def _member_parts(name: str) -> tuple[str, ...]:
    """The components of a member's name, or ExtractError for a name no capture has."""
    if "\x00" in name:
        raise ExtractError(f"unsafe member name {name[:80]!r}: NUL byte")
    if name.startswith("/"):
        raise ExtractError(f"unsafe member name {name[:80]!r}: absolute")
    if len(os.fsencode(name)) > MAX_PATH_BYTES:
        raise ExtractError(f"unsafe member name {name[:80]!r}...: over {MAX_PATH_BYTES} bytes")
    parts = tuple(p for p in name.split("/") if p not in ("", "."))
    if ".." in parts:
        raise ExtractError(f"unsafe member name {name[:80]!r}: '..'")
    if len(parts) > MAX_DEPTH:
        raise ExtractError(f"unsafe member name {name[:80]!r}...: over {MAX_DEPTH} levels deep")
    if any(len(os.fsencode(p)) > MAX_NAME_BYTES for p in parts):
        raise ExtractError(f"unsafe member name {name[:80]!r}...: a component over "
                           f"{MAX_NAME_BYTES} bytes")
    return parts


def link_target_inside(parts: tuple[str, ...], target: str) -> str:
    """The target to give the link at `parts`: `target` when, read lexically from the link's
    directory, it stays inside the tree (an absolute one rewritten relative to the top);
    _Skip otherwise."""
    if not target or "\x00" in target or len(os.fsencode(target)) > MAX_PATH_BYTES:
        raise _Skip("link with an empty, NUL or overlong target")
    comps = [c for c in target.split("/") if c not in ("", ".")]
    depth = len(parts) - 1                   # directories above the link
    ups = 0
    while ups < len(comps) and comps[ups] == "..":
        ups += 1
    if ".." in comps[ups:]:
        raise _Skip("link with '..' after a name")
    if target.startswith("/"):
        if ups:
            raise _Skip("link with '..' after a name")
        comps = [".."] * depth + comps
    elif ups > depth:
        raise _Skip("link leaving the tree")
    return "/".join(comps) or "."


# ----------------------------------------------------------------------------- writing
class _Writer:
    """Creates entries under `dest` through directory fds, never following a link."""

    def __init__(self, dest: str):
        self.top = os.open(dest, _DIR_FLAGS)
        self.dirs: dict[tuple[str, ...], int] = {(): self.top}

    def __enter__(self) -> _Writer:
        return self

    def __exit__(self, *exc) -> None:
        for fd in self.dirs.values():
            os.close(fd)
        self.dirs.clear()

    def trim(self) -> None:
        """Bound the fds kept open (called between members only: none is in use)."""
        if len(self.dirs) > _OPEN_DIRS:
            for key, fd in list(self.dirs.items()):
                if key:
                    os.close(fd)
                    del self.dirs[key]

    def directory(self, parts: tuple[str, ...]) -> int:
        known_fd = self.dirs.get(parts)
        if known_fd is not None:
            return known_fd
        parent = self.directory(parts[:-1])
        name = parts[-1]
        for attempt in range(2):
            try:
                fd = os.open(name, _DIR_FLAGS, dir_fd=parent)
                break
            except FileNotFoundError:
                if attempt:
                    raise
                os.mkdir(name, 0o755, dir_fd=parent)
            except OSError as exc:
                if exc.errno in (errno.ENOTDIR, errno.ELOOP):
                    raise _Skip("path through a link or a file") from None
                raise
        self.dirs[parts] = fd
        return fd

    def file(self, parts: tuple[str, ...], data: _Metered, size: int) -> None:
        """A new regular file of the next `size` bytes of `data`."""
        parent, name = self.directory(parts[:-1]), parts[-1]
        try:
            fd = os.open(name, _NEW_FILE, 0o644, dir_fd=parent)
        except FileExistsError:
            # a later member replaces an earlier regular file, as tar does; never a link or a
            # directory, whose place it would take
            if not stat.S_ISREG(os.stat(name, dir_fd=parent, follow_symlinks=False).st_mode):
                raise _Skip("name taken by a directory or a link") from None
            os.unlink(name, dir_fd=parent)
            fd = os.open(name, _NEW_FILE, 0o644, dir_fd=parent)
        try:
            while size > 0:
                chunk = data.read(min(CHUNK, size))
                if not chunk:
                    raise tarfile.ReadError("unexpected end of data")
                size -= len(chunk)
                view = memoryview(chunk)
                while view:
                    view = view[os.write(fd, view):]
        finally:
            os.close(fd)

    def symlink(self, parts: tuple[str, ...], target: str) -> None:
        target = link_target_inside(parts, target)
        parent, name = self.directory(parts[:-1]), parts[-1]
        try:
            os.symlink(target, name, dir_fd=parent)
        except FileExistsError:
            raise _Skip("name taken") from None


def _kind(member: tarfile.TarInfo) -> str:
    if member.islnk():
        return "hardlink"
    if member.ischr() or member.isblk():
        return "device"
    if member.isfifo():
        return "FIFO"
    if member.sparse is not None or member.type == tarfile.GNUTYPE_SPARSE:
        return "sparse file"
    return "other member type"


def _env_int(environ, name: str, default: int) -> int:
    text = environ.get(name)
    if text is None or not text.strip():
        return default
    try:
        value = int(text.strip())
    except ValueError:
        value = -1
    if value <= 0:
        raise ExtractError(f"{name}={text[:40]!r} must be a whole number greater than 0")
    return value


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0].rstrip(":")
