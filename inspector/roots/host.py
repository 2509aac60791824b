"""HostRoot: the one door through which every collector reads the host.

A root is a directory in the layout of `lsblk --sysroot` (sys/, proc/, etc/, dev/, run/ ...):
"/" on a live host, or an unpacked capture. What is not a file (CPUID leaves, outputs of
commands, uname, uid, selected environment variables) is a *fact*: live, it is produced on the
machine; in a capture, it is read from the sidecar file `inspector-sidecar.json` at the root.

A root other than "/" is someone else's tree: every read, listing, readlink and existence test
on it is resolved inside it, as chroot(2) would (inspector.roots.confined): a link to /etc/passwd reads
the tree's etc/passwd, `..` stops at its top, a FIFO or a device node is refused unread.

Readers never raise for host problems: `read_text` raises `Unavailable` with a human reason that
collectors turn into `Unknown(reason)`; the `try_*` helpers return the Unknown directly.

A live root can *record* every access (files read, directories listed, links followed, facts
produced) so that `inspector capture` writes exactly what discovery read and nothing else.
"""
from __future__ import annotations

import errno
import json
import math
import os
import shutil
import stat
import subprocess
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from inspector.children.pipes import no_sigpipe
from inspector.model import Unknown
from inspector.roots.bounded import TimedOut, WithFds, Worker, WorkerFailed
from inspector.roots.confined import ConfinedTree, Refused
from inspector.roots.fork_locks import lock_renewed_at_fork

SIDECAR_NAME = "inspector-sidecar.json"
SIDECAR_VERSION = 1
MAX_READ_BYTES = 4 * 1024 * 1024  # /proc files can be endless (kmsg); nothing we parse is bigger
LINE_BYTES = 65536                # what read_line reads of a file for its first line
# A sidecar is foreign input: bounded in size (a real one is tens of kB; 1000 drives of smartctl
# JSON stay far below), in containers (an empty object costs 64 bytes of memory for its 2 bytes
# of JSON) and in depth (nothing we write nests past 6).
MAX_SIDECAR_BYTES = 64 * 1024 * 1024
MAX_SIDECAR_CONTAINERS = 2_000_000
MAX_SIDECAR_DEPTH = 64
LATEST_PLAUSIBLE_TIME = 253402300799.0   # 9999-12-31: past it no clock or formatter copes
# A tree's top and its sidecar answer in milliseconds; one silent this long is on a filesystem
# that does not answer (a hung FUSE or NFS mount), and --root says so rather than hang.
OPEN_TIMEOUT = 5.0

# Where vendors install their CLIs when they are not on PATH.
VENDOR_PATHS = ("/usr/sbin", "/sbin", "/usr/local/sbin", "/usr/local/bin", "/usr/bin", "/bin",
                "/opt/hio/bin", "/usr/share/hio", "/opt/fio/bin", "/usr/lib/fio")

# Never captured, whatever a collector asks for (defence in depth: collectors do not read these).
_DENY_SUFFIXES = ("/environ", "/mem", "/kcore", "/kmsg", "/pagemap", "/cmdline_secrets")
_DENY_PREFIXES = ("etc/ssh/", "etc/shadow", "etc/gshadow", "root/", "home/", "etc/ssl/private")


class Unavailable(Exception):
    """A host read failed; `reason` is what the user sees after 'unknown'."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason

    def unknown(self) -> Unknown:
        return Unknown(self.reason)


def _reason(exc: OSError) -> str:
    if isinstance(exc, Refused):
        return exc.strerror or str(exc)
    if exc.errno in (errno.ENOENT, errno.ENOTDIR):
        return "not present"
    if exc.errno in (errno.EACCES, errno.EPERM):
        return "permission denied"
    if exc.errno == errno.EIO:
        return "I/O error"
    if exc.errno == errno.EINVAL:
        return "not readable (invalid argument)"
    if exc.errno == errno.ELOOP:
        return "too many levels of symbolic links"
    if exc.errno == errno.ENAMETOOLONG:
        return "path too long"
    return exc.strerror or str(exc)


@dataclass
class CommandResult:
    """Outcome of an external command (live) or its recording (capture)."""
    argv: list[str]
    returncode: int | None = None
    stdout: str = ""
    stderr: str = ""
    error: str | None = None      # not installed, timed out after N s, not recorded in capture ...
    duration: float = 0.0

    @property
    def ok(self) -> bool:
        return self.error is None and self.returncode == 0

    def to_json(self) -> dict:
        return {"argv": self.argv, "returncode": self.returncode, "stdout": self.stdout,
                "stderr": self.stderr, "error": self.error, "duration": round(self.duration, 4)}

    @classmethod
    def from_json(cls, d: dict) -> CommandResult:
        """From a recording; a capture is foreign input: a field of the wrong type raises
        ValueError rather than travel on into a parser."""
        if not isinstance(d, dict):
            raise ValueError("not an object")
        returncode, error = d.get("returncode"), d.get("error")
        stdout, stderr = d.get("stdout", ""), d.get("stderr", "")
        if (not isinstance(stdout, str) or not isinstance(stderr, str)
                or not (returncode is None or type(returncode) is int)
                or not (error is None or isinstance(error, str))):
            raise ValueError("field of the wrong type")
        argv = d.get("argv", [])
        return cls(argv=[str(a) for a in argv] if isinstance(argv, list) else [],
                   returncode=returncode, stdout=stdout, stderr=stderr, error=error,
                   duration=float(d.get("duration", 0.0) or 0.0))


@dataclass
class _Recording:
    files: dict[str, bytes] = field(default_factory=dict)
    dirs: dict[str, list[tuple[str, str]]] = field(default_factory=dict)  # rel -> [(name, kind)]
    links: dict[str, str] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=lock_renewed_at_fork)


class HostRoot:
    """Read access to a host tree plus its facts. `HostRoot("/")` is the live machine."""

    # a live host read over ssh (inspector.remote.streamed_root): its files are not this
    # machine's, so nothing reads this machine directly for it (statvfs, /dev/kmsg)
    remote: str | None = None

    def __init__(self, path: str = "/", *, record: bool = False, label: str | None = None,
                 fact_source: Callable[[str, str], Any] | None = None,
                 timeout: float = OPEN_TIMEOUT):
        """`fact_source(kind, key)`: where a non-live root's facts come from instead of a
        sidecar (a sosreport's command outputs: inspector.captures.sosreport); Unknown when absent.
        `timeout`: the bound on opening a non-live tree and reading its sidecar, past which
        this raises Unavailable("no answer from ... after N s")."""
        self.path = os.path.abspath(path)
        self._prefix = self.path.rstrip("/") + "/"
        self.live = self.path == "/"
        self.label = label or ("live" if self.live else self.path)
        self._facts: dict[str, dict[str, Any]] = {}
        self._facts_lock = lock_renewed_at_fork()
        self._recording = _Recording() if record else None
        self._fact_source = None if self.live else fact_source
        self.sidecar_meta: dict[str, Any] = {}
        # None on the live root, whose reads keep their fast path (the samplers do hundreds a
        # second); a tree opened elsewhere, or the reason it cannot be.
        self._tree: ConfinedTree | str | None = None
        if not self.live:
            self._tree, sidecar = _open_tree(self.path, fact_source is None, timeout)
            if sidecar is not None:
                self._load_sidecar(sidecar)

    # ----------------------------------------------------------------- paths
    @staticmethod
    def _rel(rel: str) -> str:
        return rel.lstrip("/")

    def host_path(self, rel: str) -> str:
        """Path on this machine of `rel` (e.g. "sys/block") inside the root, no link resolution."""
        rel = self._rel(rel)
        return os.path.join(self.path, rel) if rel else self.path

    def resolve(self, rel: str) -> str:
        """Resolve symlinks *inside the root*: absolute targets are re-rooted, `..` stops at the root.

        Returns the resolved path relative to the root (no leading slash)."""
        return self._resolve(rel)[0]

    def _resolve(self, rel: str) -> tuple[str, bool]:
        """(resolved path, whether a `..` had to stop at the top: a link leaving the root)."""
        parts = [p for p in self._rel(rel).split("/") if p and p != "."]
        out: list[str] = []
        hops = 0
        climbed = False
        while parts:
            part = parts.pop(0)
            if part == "..":
                if out:
                    out.pop()
                else:
                    climbed = True
                continue
            candidate = "/".join(out + [part])
            target = self._readlink_raw(candidate)
            if target is None:
                out.append(part)
                continue
            hops += 1
            if hops > 40:
                raise Unavailable("too many levels of symbolic links")
            if target.startswith("/"):
                out = []
            parts = [p for p in target.split("/") if p and p != "."] + parts
        return "/".join(out), climbed

    def _unavailable(self, rel: str, exc: OSError) -> Unavailable:
        """The reason a read of a non-live root failed; a path missing because a link on the
        way climbed above the top says so rather than 'not present'."""
        reason = _reason(exc)
        if reason == "not present":
            try:
                if self._resolve(rel)[1]:
                    reason = "link leaves the root"
            except Unavailable as loop:
                reason = loop.reason
        return Unavailable(reason)

    def _confined(self) -> ConfinedTree:
        """The tree of a non-live root, or Unavailable when it could not be opened."""
        tree = self._tree
        if isinstance(tree, str):
            raise Unavailable(tree)
        assert tree is not None      # asked of a non-live root only
        return tree

    def _readlink_raw(self, rel: str) -> str | None:
        try:
            if self._tree is None:
                target = os.readlink(self.host_path(rel))
            else:
                target = self._confined().readlink(rel)
        except (OSError, Unavailable):
            return None
        if self._recording is not None:
            with self._recording.lock:
                self._recording.links[rel] = target
        return target

    # ----------------------------------------------------------------- reads
    def read_bytes(self, rel: str, limit: int = MAX_READ_BYTES) -> bytes:
        rel = rel.lstrip("/")
        if self._tree is not None:
            try:
                data = self._confined().read(rel, limit)
            except OSError as exc:
                raise self._unavailable(rel, exc) from None
            if self._recording is not None:
                self._record_file(self._resolved_for_record(rel), data)
            return data
        try:
            # os.open/os.read: a third cheaper than a file object, which the live samplers
            # (hundreds of small /proc reads per sample) feel; the path by concatenation, as
            # os.path.join costs a tenth of a multipath root's discovery. O_NONBLOCK: a FIFO
            # in a tree given to --root must not block the open or the read (regular, proc
            # and sysfs files ignore the flag)
            fd = os.open(self._prefix + rel if rel else self.path,
                         os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK)
            try:
                data = os.read(fd, limit)
                if not data and stat.S_ISFIFO(os.fstat(fd).st_mode):
                    raise Unavailable("a FIFO, not a file")
            finally:
                os.close(fd)
        except OSError as exc:
            raise Unavailable(_reason(exc)) from None
        if self._recording is not None:
            self._record_file(self._resolved_for_record(rel), data)
        return data

    def read_many(self, directory: str, names: Sequence[str],
                  limit: int = MAX_READ_BYTES) -> list[bytes | Unavailable]:
        """The files `names` of `directory`, in order: each its bytes or the Unavailable that
        read_bytes would raise for it. On a non-live root the directory is resolved once for
        all of them (ConfinedTree.read_many); every file is checked and recorded as one
        read_bytes call would."""
        directory = directory.strip("/")
        tree = self._tree
        if tree is None:
            if type(self).read_bytes is not HostRoot.read_bytes:   # a root with its own reads
                return [self._read_or_unavailable(_join(directory, name), limit)
                        for name in names]
            return self._read_many_live(directory, names, limit)
        if isinstance(tree, str):
            return [Unavailable(tree) for _ in names]
        # each OSError replaced in place by its Unavailable
        results: list[Any] = tree.read_many(directory, names, limit)
        recording = self._recording
        for i, result in enumerate(results):
            if type(result) is not bytes:       # OSError: the reason
                results[i] = self._unavailable(_join(directory, names[i]), result)
            elif recording is not None:
                rel = self._resolved_for_record(_join(directory, names[i]))
                self._record_file(rel, result)
        return results

    def _read_many_live(self, directory: str, names: Sequence[str],
                        limit: int) -> list[bytes | Unavailable]:
        """read_bytes of each name on the live root, in one loop (its flags and reasons)."""
        prefix = f"{self._prefix}{directory}/" if directory else self._prefix
        recording = self._recording
        out: list[bytes | Unavailable] = []
        for name in names:
            try:
                fd = os.open(prefix + name, os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK)
                try:
                    data = os.read(fd, limit)
                    if not data and stat.S_ISFIFO(os.fstat(fd).st_mode):
                        out.append(Unavailable("a FIFO, not a file"))
                        continue
                finally:
                    os.close(fd)
            except OSError as exc:
                out.append(Unavailable(_reason(exc)))
                continue
            out.append(data)
            if recording is not None:
                self._record_file(self._resolved_for_record(_join(directory, name)), data)
        return out

    def _read_or_unavailable(self, rel: str, limit: int) -> bytes | Unavailable:
        try:
            return self.read_bytes(rel, limit)
        except Unavailable as exc:
            return exc

    def read_text(self, rel: str, limit: int = MAX_READ_BYTES) -> str:
        return self.read_bytes(rel, limit).decode("utf-8", "replace")

    def read_line(self, rel: str) -> str:
        """First line, stripped: the shape of nearly every sysfs attribute."""
        text = self.read_text(rel, LINE_BYTES)
        return text.split("\n", 1)[0].strip()

    def try_line(self, rel: str) -> str | Unknown:
        try:
            return self.read_line(rel)
        except Unavailable as exc:
            return exc.unknown()

    def try_text(self, rel: str) -> str | Unknown:
        try:
            return self.read_text(rel)
        except Unavailable as exc:
            return exc.unknown()

    def try_lines(self, directory: str, names: Sequence[str]) -> list[str | Unknown]:
        """try_line of each of `names` in `directory`, read in one batch (read_many)."""
        return [data.unknown() if isinstance(data, Unavailable)
                else data.decode("utf-8", "replace").split("\n", 1)[0].strip()
                for data in self.read_many(directory, names, LINE_BYTES)]

    def try_int(self, rel: str, base: int = 10) -> int | Unknown:
        return int_of_line(self.try_line(rel), rel, base)

    def exists(self, rel: str) -> bool:
        """True when `rel` is there, a dangling link included (lexists)."""
        rel = self._rel(rel)
        if self._tree is None:
            found = os.path.lexists(self.host_path(rel))
        else:
            try:
                found = self._confined().lexists(rel)
            except Unavailable:
                found = False
        if found and self._recording is not None:
            self._record_existence(self._resolved_for_record(rel, keep_last=True))
        return found

    def is_dir(self, rel: str) -> bool:
        if self._tree is None:
            return os.path.isdir(self.host_path(self.resolve(rel)))
        try:
            return self._confined().is_dir(self._rel(rel))
        except Unavailable:
            return False

    def listdir(self, rel: str) -> list[str]:
        """Sorted entries of a directory; raises Unavailable."""
        rel = self._rel(rel)
        if self._tree is not None and self._recording is None:   # the kinds are not needed
            try:
                names = self._confined().names(rel)
            except OSError as exc:
                raise self._unavailable(rel, exc) from None
            names.sort()
            return names
        try:
            if self._tree is None:
                with os.scandir(self.host_path(rel)) as it:
                    entries = [(e.name, _kind(e)) for e in it]
            else:
                entries = [(name, "link" if link else "dir" if is_dir else "file")
                           for name, link, is_dir in self._confined().scandir(rel)]
        except OSError as exc:
            raise (Unavailable(_reason(exc)) if self._tree is None
                   else self._unavailable(rel, exc)) from None
        entries.sort()
        if self._recording is not None:
            rel = self._resolved_for_record(rel)
            links = {name: self._readlink_raw(f"{rel}/{name}" if rel else name)
                     for name, kind in entries if kind == "link"}
            with self._recording.lock:
                self._recording.dirs[rel] = entries
                for name, target in links.items():
                    if target is not None:
                        self._recording.links[f"{rel}/{name}"] = target
        return [name for name, _ in entries]

    def try_listdir(self, rel: str) -> list[str]:
        try:
            return self.listdir(rel)
        except Unavailable:
            return []

    def readlink(self, rel: str) -> str | None:
        rel = self._rel(rel)
        if self._recording is not None:
            # record the link where it really is, or a capture would hold both a link and a
            # directory at a path that goes through another link
            rel = self._resolved_for_record(rel, keep_last=True)
        return self._readlink_raw(rel)

    def readlinks(self, directory: str, names: Sequence[str]) -> list[str | None]:
        """readlink of each of `names` in `directory` (sys/dev/block's thousands of links):
        on a non-live root without recording, one resolution of the directory for all."""
        directory = directory.strip("/")
        tree = self._tree
        if not isinstance(tree, ConfinedTree) or self._recording is not None:
            return [self.readlink(_join(directory, name)) for name in names]
        return tree.readlinks(directory, names)

    def link_name(self, rel: str) -> str | None:
        """Last component of a symlink's target (sysfs `driver`, `subsystem`, ...)."""
        target = self.readlink(rel)
        return os.path.basename(target.rstrip("/")) if target else None

    # ----------------------------------------------------------------- facts
    def fact(self, kind: str, key: str, producer: Callable[[], Any]) -> Any:
        """A non-file fact. Live: `producer()` (JSON-serialisable), cached and recorded.
        Capture: the recorded value, or Unknown when the capture does not carry it."""
        with self._facts_lock:
            bucket = self._facts.setdefault(kind, {})
            if key in bucket:
                return _decode_fact(bucket[key])
        if self.live:
            value = producer()
        elif self._fact_source is not None:
            value = self._fact_source(kind, key)
        else:
            return Unknown(f"not recorded in capture ({kind} {key})")
        with self._facts_lock:
            self._facts.setdefault(kind, {})[key] = _encode_fact(value)
        return value

    def run(self, argv: list[str], timeout: float = 5.0, extra_paths: Iterable[str] = VENDOR_PATHS,
            input: str | None = None) -> CommandResult:
        """Run a command (looked up on PATH, then the vendors' usual paths) with a hard timeout."""
        key = " ".join(argv)

        def produce() -> dict:
            return _run_command(argv, timeout, extra_paths, input).to_json()

        value = self.fact("command", key, produce)
        if isinstance(value, Unknown):
            return CommandResult(argv=list(argv), error=value.reason)
        try:
            return CommandResult.from_json(value)
        except (TypeError, ValueError, AttributeError):
            return CommandResult(argv=list(argv), error="malformed recording in capture")

    def environ(self, name: str) -> str | None:
        value = self.fact("env", name, lambda: os.environ.get(name))
        return value if isinstance(value, str) else None

    def uname(self) -> dict | Unknown:
        def produce() -> dict:
            u = os.uname()
            return {"sysname": u.sysname, "nodename": u.nodename, "release": u.release,
                    "version": u.version, "machine": u.machine}
        value = self.fact("uname", "uname", produce)
        if isinstance(value, Unknown):
            return value
        if (not isinstance(value, dict)
                or not all(isinstance(value.get(k), str) for k in ("nodename", "release", "machine"))):
            return Unknown("malformed uname in capture")
        return value

    def uid(self) -> int | Unknown:
        value = self.fact("uid", "uid", os.geteuid)
        if isinstance(value, Unknown) or type(value) is int:
            return value
        return Unknown("malformed uid in capture")

    # ----------------------------------------------------------------- sidecar
    def _load_sidecar(self, data: bytes) -> None:
        """The facts of a capture from its sidecar (read by _open_tree), refused whole, with
        the reason, when it is too deep or not JSON; times that no clock can hold (NaN, 1e308)
        become unknown."""
        try:
            doc = _parse_sidecar(data)
        except ValueError as exc:
            raise Unavailable(f"corrupt sidecar {SIDECAR_NAME}: {exc}") from None
        if not isinstance(doc, dict) or not isinstance(doc.get("facts", {}), dict):
            raise Unavailable(f"corrupt sidecar {SIDECAR_NAME}: not an object")
        self._facts = {k: dict(v) for k, v in doc.get("facts", {}).items() if isinstance(v, dict)}
        self.sidecar_meta = {k: v for k, v in doc.items() if k != "facts"}
        meta = self.sidecar_meta
        if "captured_at" in meta and not _plausible_time(meta["captured_at"]):
            meta["captured_at"] = None
        times = self._facts.get("time", {})
        if "collected_at" in times and not _plausible_time(times["collected_at"]):
            times["collected_at"] = {"__unknown__": "implausible capture time in the sidecar"}

    def sidecar(self) -> dict:
        with self._facts_lock:
            return {"version": SIDECAR_VERSION, "captured_at": time.time(),
                    "facts": json.loads(json.dumps(self._facts))}

    # ----------------------------------------------------------------- recording
    @property
    def recording(self) -> _Recording | None:
        return self._recording

    def _resolved_for_record(self, rel: str, keep_last: bool = False) -> str:
        """Where `rel` really lives, so a capture stores files under their real directory and
        the symlinks leading there (recorded while resolving) as links."""
        if keep_last:
            parent, _, name = rel.rpartition("/")
            base = self.resolve(parent) if parent else ""
            return f"{base}/{name}" if base else name
        return self.resolve(rel)

    def _record_file(self, rel: str, data: bytes) -> None:
        recording = self._recording
        if recording is None or _denied(rel):
            return
        with recording.lock:
            recording.files[rel] = data

    def _record_existence(self, rel: str) -> None:
        recording = self._recording
        if recording is None:
            return
        target = self._readlink_raw(rel)
        is_dir = target is None and self.is_dir(rel)
        with recording.lock:
            if target is not None:
                recording.links[rel] = target
            elif is_dir:
                recording.dirs.setdefault(rel, [])
            elif rel not in recording.files:
                recording.files.setdefault(rel, b"")


def _open_tree(path: str, with_sidecar: bool,
               timeout: float) -> tuple[ConfinedTree | str, bytes | None]:
    """The confined tree at `path` (or why it cannot be opened) and its sidecar's bytes (None
    without one). Both wait on the tree's filesystem, so a forked child does them
    (inspector.roots.bounded: a thread stuck in a read the kernel never answers would keep this
    process from exiting) and passes the tree's fd back; Unavailable "no answer from ... after
    N s" when it has not answered by `timeout`."""
    give_up = time.monotonic() + timeout
    where = path
    try:
        with Worker(_TreeOpener(path)) as child:
            answer = child.call("tree", timeout)
            if isinstance(answer, str):
                return answer, None
            (identity, uses_openat2), (fd,) = answer.value, answer.fds
            os.set_inheritable(fd, False)
            tree = ConfinedTree(path, use_openat2=uses_openat2, top=(fd, identity))
            if not with_sidecar:
                return tree, None
            where = os.path.join(path, SIDECAR_NAME)
            outcome = child.call("sidecar", max(0.0, give_up - time.monotonic()))
    except TimedOut:
        raise Unavailable(f"no answer from {where} after {round(timeout, 1):g} s (a hung "
                          "filesystem? look for processes in D state)") from None
    except WorkerFailed as exc:
        raise Unavailable(f"cannot open {where}: {exc}") from None
    if outcome[0] == "refused":
        raise Unavailable(outcome[1])
    return tree, outcome[1]


class _TreeOpener:
    """What _open_tree's child does: "tree" opens the tree and answers its identity with its
    fd; "sidecar" reads the sidecar, confined like any file of the tree (never a FIFO or a
    device) and bounded in size: ("data", bytes | None) or ("refused", reason)."""

    def __init__(self, path: str):
        self.path = path
        self.tree: ConfinedTree | None = None

    def __call__(self, request: str) -> Any:
        if request == "tree":
            try:
                self.tree = ConfinedTree(self.path)
            except OSError as exc:
                return _reason(exc)
            # a duplicate: the child closes what it sends, and reads the sidecar after
            return WithFds((self.tree.identity, self.tree.uses_openat2),
                           [os.dup(self.tree.root_fd)])
        if self.tree is None:               # "sidecar" comes after a "tree" that opened
            return ("refused", f"unreadable sidecar {SIDECAR_NAME}: the tree is not open")
        too_big = ("refused", f"sidecar {SIDECAR_NAME} is over {MAX_SIDECAR_BYTES >> 20} "
                              "MiB: not a capture Inspector wrote")
        try:
            fd = self.tree.open_checked(SIDECAR_NAME)     # type checked before it is opened
            try:
                if os.fstat(fd).st_size > MAX_SIDECAR_BYTES:
                    return too_big
                data = _read_to_end(fd, MAX_SIDECAR_BYTES + 1)
            finally:
                os.close(fd)
        except FileNotFoundError:
            return ("data", None)     # a plain sysroot tree: facts are unknown
        except OSError as exc:
            return ("refused", f"unreadable sidecar {SIDECAR_NAME}: {_reason(exc)}")
        return too_big if len(data) > MAX_SIDECAR_BYTES else ("data", data)


def int_of_line(value: str | Unknown, rel: str, base: int = 10) -> int | Unknown:
    """The integer a try_line result holds, or why not (`rel`: the file it came from)."""
    if isinstance(value, Unknown):
        return value
    try:
        return int(value, base)
    except ValueError:
        return Unknown(f"unparsable value {value[:40]!r} in /{rel.lstrip('/')}")


def _join(directory: str, name: str) -> str:
    return f"{directory}/{name}" if directory else name


def _read_to_end(fd: int, limit: int) -> bytes:
    chunks, size = [], 0
    while size < limit and (chunk := os.read(fd, min(limit - size, 1 << 20))):
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks)


def _parse_sidecar(data: bytes) -> Any:
    """JSON within the sidecar's bounds; ValueError with the reason otherwise."""
    if data.count(b"{") + data.count(b"[") > MAX_SIDECAR_CONTAINERS:
        raise ValueError(f"more than {MAX_SIDECAR_CONTAINERS} objects and lists")
    try:
        # NaN and Infinity are not JSON: unknown (None), not a float that breaks a formatter
        doc = json.loads(data, parse_constant=lambda _name: None)
    except RecursionError:
        raise ValueError("nested too deeply") from None
    stack = [(doc, 1)]
    while stack:    # nested past what we write: refused before a recursive reader meets it
        node, depth = stack.pop()
        if depth > MAX_SIDECAR_DEPTH:
            raise ValueError(f"nested more than {MAX_SIDECAR_DEPTH} levels deep")
        children = node.values() if isinstance(node, dict) else node
        stack.extend((c, depth + 1) for c in children if isinstance(c, (dict, list)))
    return doc


def _plausible_time(value: Any) -> bool:
    return (type(value) in (int, float) and math.isfinite(value)
            and 0 <= value <= LATEST_PLAUSIBLE_TIME)


def _kind(entry: os.DirEntry) -> str:
    try:
        if entry.is_symlink():
            return "link"
        if entry.is_dir(follow_symlinks=False):
            return "dir"
    except OSError:
        pass
    return "file"


def _denied(rel: str) -> bool:
    return rel.endswith(_DENY_SUFFIXES) or rel.startswith(_DENY_PREFIXES)


def _encode_fact(value: Any) -> Any:
    if isinstance(value, Unknown):
        return {"__unknown__": value.reason}
    if isinstance(value, tuple):
        return list(value)
    return value


def _decode_fact(value: Any) -> Any:
    if isinstance(value, dict) and set(value) == {"__unknown__"}:
        return Unknown(value["__unknown__"])
    return value


def which(name: str, extra_paths: Iterable[str] = VENDOR_PATHS) -> str | None:
    found = shutil.which(name)
    if found:
        return found
    for directory in extra_paths:
        candidate = os.path.join(directory, name)
        if os.access(candidate, os.X_OK) and not os.path.isdir(candidate):
            return candidate
    return None


def _run_command(argv: list[str], timeout: float, extra_paths: Iterable[str],
                 input: str | None) -> CommandResult:
    result = CommandResult(argv=list(argv))
    exe = which(argv[0], extra_paths) if "/" not in argv[0] else argv[0]
    if exe is None:
        result.error = f"{argv[0]} not installed"
        return result
    start = time.monotonic()
    try:
        # start_new_session so a hung vendor CLI and its children are killed as a group
        proc = subprocess.Popen([exe, *argv[1:]], stdin=subprocess.PIPE if input else subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                start_new_session=True, env={**os.environ, "LC_ALL": "C"})
    except OSError as exc:
        result.error = f"{argv[0]}: {exc.strerror or exc}"
        return result
    try:
        with no_sigpipe():      # a tool that stops reading its input is its failure, not ours
            out, err = proc.communicate(input.encode() if input else None, timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        result.error = f"{argv[0]} timed out after {timeout:g} s"
        result.duration = time.monotonic() - start
        return result
    result.duration = time.monotonic() - start
    result.returncode = proc.returncode
    result.stdout = out.decode("utf-8", "replace")
    result.stderr = err.decode("utf-8", "replace")
    return result


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, 9)
    except OSError:
        pass
    try:
        proc.communicate(timeout=1)
    except (subprocess.TimeoutExpired, OSError, ValueError):
        pass


def is_regular_file(path: str) -> bool:
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        return False
