"""A directory tree read as if chrooted into it: the reading side of `--root DIR`.

A tree given to `--root` comes from someone else (a capture, a sosreport, a container's rootfs,
a mounted disk image). Its symlinks must never lead a read to the analyst's own files, so every
path is resolved *inside* the tree, as chroot(2) would (the layout is `lsblk --sysroot`'s, which
follows links out of it): absolute targets start again at the tree's top, `..` stops there.

The kernel does this race-free with openat2(2) and RESOLVE_IN_ROOT (Linux 5.6+), called through
ctypes; RESOLVE_NO_MAGICLINKS also refuses /proc/PID/fd-style links if the tree holds a live
procfs. Where openat2 is missing (older kernels, seccomp filters answering ENOSYS or EPERM) the
same semantics come from a walk one component at a time on directory fds: each component opened
with O_NOFOLLOW relative to its parent's fd, links read with readlinkat and their targets walked
the same way, so a link swapped in during the walk is read as a link, never followed.

Only regular files are read and only directories listed; anything else is refused with what it
is ("a FIFO, not a file"). Opening some device nodes has effects (a watchdog starts counting, a
tape rewinds), so where a device could be reached it is refused before it is opened: its type
is checked on an O_PATH handle, and the file is then reopened from that same handle through
/proc/self/fd, so what was checked is what is read. Every read takes that way, whatever
filesystem the file is on: `tar xf` run as root re-creates the device nodes of a hostile
archive (a sosreport unpacked by a support engineer), so "made in the tree by root" is no
guarantee. The check and second open are a noticeable share of discovery on large trees
(tests/bench/bench_discovery.py prints it for 1,000 multipath maps, which tests/perf must
discover within 0.5 s of CPU, or lsblk's time where lsblk needs more). So that the Python
around them costs little, read_many reads a device's dozen attributes in one loop, directories
come from a small per-thread cache, and a batch's fds are closed together (close_range). A
listing's open never reaches a device: O_DIRECTORY is refused before a device's open runs.
"""
from __future__ import annotations

import ctypes
import errno
import os
import stat
import threading
from collections.abc import Callable, Sequence
from typing import cast

from inspector.roots.fork_locks import lock_renewed_at_fork

RESOLVE_NO_XDEV = 0x01
RESOLVE_NO_MAGICLINKS = 0x02
RESOLVE_IN_ROOT = 0x10
_IN_ROOT = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS
_IN_ROOT_SAME_MOUNT = _IN_ROOT | RESOLVE_NO_XDEV
# The same number on every architecture since the syscall tables were unified (5.1), but alpha.
SYS_OPENAT2 = 437
MAX_LINK_HOPS = 40          # the kernel's own limit (MAXSYMLINKS)
MAX_DEPTH = 128             # directory fds one walk holds open (sysfs nests about 20 deep)

_READ_FLAGS = os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK | os.O_NOCTTY
_PATH_FLAGS = os.O_PATH | os.O_CLOEXEC
_PATH_NOFOLLOW = _PATH_FLAGS | os.O_NOFOLLOW
_DIR_FLAGS = os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC
_S_IFMT, _S_IFREG = stat.S_IFMT(0o177777), stat.S_IFREG
_HELD_MAX = 32                  # fds one read_many holds open before closing them
_NOT_A_NAME = ("", ".", "..")   # last components that open_file and read_many resolve in full
_DIR_NOFOLLOW = os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


class _Forks:
    """Counts the forks this process descends from. A tree compares it with the count it
    was opened under on every read: a number in memory, where os.getpid() is a system call
    per read (glibc no longer caches it), tens of thousands of them on a large tree."""
    count = 0


def _forked() -> None:
    _Forks.count += 1


os.register_at_fork(after_in_child=_forked)


class Refused(OSError):
    """Something other than what was asked for sits at the path (a FIFO, a device ...);
    `strerror` says what, for the reader's 'unknown (...)'."""

    def __init__(self, what: str):
        super().__init__(errno.EINVAL, what)


class _OpenHow(ctypes.Structure):
    _fields_ = [("flags", ctypes.c_uint64), ("mode", ctypes.c_uint64),
                ("resolve", ctypes.c_uint64)]


class _Openat2:
    """openat2(2) through libc's syscall(); `available` is decided once per process."""

    def __init__(self) -> None:
        self.available: bool | None = None
        self._lock = lock_renewed_at_fork()
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            self._syscall = libc.syscall
        except (OSError, AttributeError):
            self.available = False
            return
        self._syscall.restype = ctypes.c_long
        self._syscall.argtypes = [ctypes.c_long, ctypes.c_int, ctypes.c_char_p, ctypes.c_void_p,
                                  ctypes.c_size_t]
        self._hows: dict[tuple[int, int], tuple[_OpenHow, object]] = {}
        self._size = ctypes.sizeof(_OpenHow)

    def _how(self, flags: int, resolve: int):
        how = self._hows.get((flags, resolve))
        if how is None:
            struct = _OpenHow(flags, 0, resolve)
            how = self._hows[flags, resolve] = (struct, ctypes.byref(struct))
        return how[1]

    def __call__(self, dirfd: int, path: bytes, flags: int, resolve: int = _IN_ROOT) -> int:
        how = self._how(flags, resolve)
        for _ in range(8):   # EAGAIN: a rename or mount raced the lookup; the kernel asks to retry
            fd = self._syscall(SYS_OPENAT2, dirfd, path, how, self._size)
            if fd >= 0:
                return fd
            err = ctypes.get_errno()
            if err not in (errno.EAGAIN, errno.EINTR):
                raise OSError(err, os.strerror(err))
        raise OSError(errno.EAGAIN, "the tree kept changing during the lookup")

    def probe(self, dirfd: int) -> bool:
        """True when the kernel (and any seccomp filter) lets openat2 through."""
        with self._lock:
            if self.available is None:
                try:
                    os.close(self(dirfd, b".", _PATH_FLAGS | os.O_DIRECTORY))
                    self.available = True
                except OSError as exc:
                    # ENOSYS: before 5.6; EPERM: a container's seccomp profile. Anything else
                    # is a problem with this tree, not with openat2.
                    self.available = exc.errno not in (errno.ENOSYS, errno.EPERM)
            return self.available


_openat2 = _Openat2()


def _parts(rel: str) -> list[str]:
    return [p for p in rel.split("/") if p and p != "."]


class ConfinedTree:
    """Reads inside the directory `path` with chroot semantics. Methods take paths relative
    to the top of the tree and raise OSError (Refused for what is not a file)."""

    def __init__(self, path: str, *, use_openat2: bool | None = None,
                 top: tuple[int, tuple[int, int]] | None = None):
        """`top`: the tree's top opened elsewhere, as (its O_PATH fd, (st_dev, st_ino) read
        from that fd), which the tree then owns: a bounded child opened it and passed it over
        (inspector.roots.host), so that this process makes no call that could wait on the tree's
        filesystem. A forked reader reopening the tree by path checks it against that identity."""
        self.path = os.path.abspath(path)
        self._lock = lock_renewed_at_fork()
        self._open_fds(None if top is None else top[0])
        if top is None:
            st = os.fstat(self._root_fd)
            self._identity = (st.st_dev, st.st_ino)
        else:
            self._identity = top[1]
        if use_openat2 is None:
            use_openat2 = _openat2.probe(self._root_fd)
        self.uses_openat2 = use_openat2

    @property
    def identity(self) -> tuple[int, int]:
        """(st_dev, st_ino) of the tree's top as it was opened."""
        return self._identity

    def _open_fds(self, root_fd: int | None = None) -> None:
        self._root_fd = (os.open(self.path, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
                         if root_fd is None else root_fd)
        self._reopen_dir: int | None = None
        try:   # /proc/self/fd of this process, to reopen a checked O_PATH handle for reading
            self._reopen_dir = os.open("/proc/self/fd", os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
        except OSError:
            pass
        self._pid = os.getpid()
        self._forks = _Forks.count        # these fds belong to the process after that many forks
        self._local = threading.local()   # per-thread caches of parent directory fds

    @property
    def root_fd(self) -> int:
        """The tree's fd in this process. A forked child (the bounded readers of
        inspector.roots.bounded) may have closed the parent's fds and reused their numbers for
        other files: it opens the tree again, and makes sure it is the same directory."""
        if self._forks != _Forks.count:
            with self._lock:
                if self._forks != _Forks.count:
                    self._open_fds()    # the old numbers are not ours to close any more
                    top = os.fstat(self._root_fd)
                    if (top.st_dev, top.st_ino) != self._identity:
                        os.close(self._root_fd)
                        self._root_fd = -1
                        raise OSError(errno.ESTALE, f"{self.path} is no longer the tree opened")
        return self._root_fd

    def close(self) -> None:
        if getattr(self, "_pid", None) != os.getpid():
            return                      # a forked child: these numbers are the parent's
        for fd in (self._root_fd, self._reopen_dir):
            if fd is not None and fd >= 0:
                os.close(fd)
        self._root_fd, self._reopen_dir = -1, None

    def __del__(self) -> None:
        try:
            self.close()
        except OSError:
            pass

    # ----------------------------------------------------------------- resolution
    def open_path(self, rel: str, flags: int = _PATH_FLAGS) -> int:
        """An fd for `rel` opened with `flags`, every link on the way resolved inside the tree
        (the last one too)."""
        if self.uses_openat2:
            return _openat2(self.root_fd, os.fsencode(rel.lstrip("/")) or b".", flags)
        return self._walk(rel, flags)

    def _walk(self, rel: str, flags: int) -> int:
        """openat2's RESOLVE_IN_ROOT in user space: `stack` holds the fds of the directories
        from the top of the tree to where the walk is, so `..` goes back to the directory the
        walk came from and never above the top."""
        stack = [os.dup(self.root_fd)]
        parts = _parts(rel)
        parts.reverse()          # popped from the end: the next component is parts[-1]
        hops = 0
        try:
            while parts:
                name = parts.pop()
                if name == "..":
                    if len(stack) > 1:
                        os.close(stack.pop())
                    continue
                if len(stack) > MAX_DEPTH:
                    raise OSError(errno.ENAMETOOLONG, os.strerror(errno.ENAMETOOLONG))
                try:
                    stack.append(os.open(name, _DIR_NOFOLLOW, dir_fd=stack[-1]))
                    continue
                except OSError as exc:
                    if exc.errno != errno.ENOTDIR:
                        raise
                target = _link_target(name, stack[-1])
                if target is None:               # neither a directory nor a link
                    if parts:
                        raise OSError(errno.ENOTDIR, os.strerror(errno.ENOTDIR))
                    try:
                        return os.open(name, flags | os.O_NOFOLLOW, dir_fd=stack[-1])
                    except OSError as exc:
                        if exc.errno != errno.ELOOP:
                            raise
                    parts.append(name)           # it became a link since: look again
                else:
                    if target.startswith("/"):   # absolute: from the top of the tree
                        while len(stack) > 1:
                            os.close(stack.pop())
                    parts.extend(reversed(_parts(target)))
                hops += 1
                if hops > MAX_LINK_HOPS:
                    raise OSError(errno.ELOOP, os.strerror(errno.ELOOP))
            return os.open(".", flags, dir_fd=stack[-1])
        finally:
            for fd in stack:
                os.close(fd)

    def _parent(self, rel: str) -> tuple[int, str]:
        """(fd of the resolved parent directory, last component) for the calls that must not
        follow the last link: readlink, lexists. The last component is "." for the top."""
        parts = _parts(rel)
        if not parts or parts[-1] == "..":   # a directory: '..' of the top is the top
            return self.open_path(rel, _PATH_FLAGS | os.O_DIRECTORY), "."
        return (self.open_path("/".join(parts[:-1]), _PATH_FLAGS | os.O_DIRECTORY), parts[-1])

    # ----------------------------------------------------------------- reads
    def open_checked(self, rel: str) -> int:
        """An fd to read the regular file `rel`, opened only after its type was checked on an
        O_PATH handle, from that handle."""
        handle = self.open_path(rel, _PATH_FLAGS)
        try:
            mode = os.fstat(handle).st_mode
            if not stat.S_ISREG(mode):
                raise _not_a_file(mode)
            if self._reopen_dir is not None and self._forks == _Forks.count:
                return os.open(str(handle), _READ_FLAGS, dir_fd=self._reopen_dir)
            # no /proc: open again by name and make sure it is the file that was checked
            fd = self.open_path(rel, _READ_FLAGS)
            before, after = os.fstat(handle), os.fstat(fd)
            if (before.st_dev, before.st_ino) != (after.st_dev, after.st_ino):
                os.close(fd)
                raise OSError(errno.EAGAIN, "the file changed while it was opened")
            return fd
        finally:
            os.close(handle)

    def open_file(self, rel: str) -> int:
        """An fd to read the regular file `rel`, its type checked before it is opened.

        Discovery of a large tree makes tens of thousands of these calls, mostly for files of
        a few directories in turn (sys/block/X/queue/*): the parent directory's O_PATH fd is
        kept in a small per-thread cache (_DirCache), and the last component is opened from it
        with O_NOFOLLOW (a plain openat, cheaper than openat2 through ctypes: bench_discovery.py
        prints both). A last component that is a link, '.' or '..' takes the full
        resolution."""
        root_fd = self.root_fd   # first: a forked child reopens the tree (and the /proc dir)
        if self._reopen_dir is None:
            return self.open_checked(rel)
        parent, _, name = rel.strip("/").rpartition("/")
        handle = -1
        if name not in _NOT_A_NAME:
            handle = os.open(name, _PATH_NOFOLLOW, dir_fd=self._dirs().get(parent, self, root_fd))
            mode = os.fstat(handle).st_mode
            if stat.S_ISLNK(mode):
                os.close(handle)
                handle = -1
        if handle < 0:
            handle = self.open_path(rel, _PATH_FLAGS)
            mode = os.fstat(handle).st_mode
        try:
            if not stat.S_ISREG(mode):
                raise _not_a_file(mode)
            return os.open(str(handle), _READ_FLAGS, dir_fd=self._reopen_dir)
        finally:
            os.close(handle)

    def _dirs(self) -> _DirCache:
        """This thread's cache of directory fds (a forked child starts a new one)."""
        cache = getattr(self._local, "dirs", None)
        if cache is None or cache.forks != _Forks.count:
            cache = self._local.dirs = _DirCache()
        return cache

    def read(self, rel: str, limit: int) -> bytes:
        fd = self.open_file(rel)
        try:
            return os.read(fd, limit)
        finally:
            os.close(fd)

    def read_many(self, directory: str, names: Sequence[str],
                  limit: int) -> list[bytes | OSError]:
        """The files `names` of `directory`, in order: each its bytes or the OSError its own
        read() would raise. A name may go down sub-directories ("queue/rotational"). Each
        directory is resolved once (from the thread's cache); each file is then checked and
        reopened as open_file does, in one loop: discovery reads a dozen attributes per
        device in three directories, and the Python calls around each read cost as much as
        its system calls."""
        root_fd = self.root_fd   # first: a forked child reopens the tree (and the /proc dir)
        reopen = self._reopen_dir
        directory = directory.strip("/")
        if reopen is None:        # no /proc: every file the slow way
            return [_result(self.read, _join(directory, name), limit) for name in names]
        subs, entries = _plan(names)
        # The batch's directories first. The cache owns their fds; none of them is dropped
        # before the loop ends: only this thread uses the cache, nothing below asks it for
        # another directory, and a batch has fewer than it holds (see _plan).
        # The batch's fds (O_PATH handles, read fds and the directories the cache drops for
        # the batch's) are closed together at its end: held open meanwhile they have
        # consecutive numbers, closed by one close_range(2) where two close(2) per file were a
        # third of the batch's system calls.
        held: list[int] = []
        dirs = self._dirs()
        dir_fds: list[int] = []
        dir_errors: list[OSError | None] = []
        try:
            for sub in subs:
                try:
                    dir_fds.append(dirs.get(_join(directory, sub), self, root_fd, held))
                    dir_errors.append(None)
                except OSError as exc:    # each file's read there would fail the same way
                    dir_fds.append(-1)
                    dir_errors.append(exc)
        except BaseException:
            _close_all(held)
            raise
        out: list[bytes | OSError] = []
        append, hold, open_, fstat, read = out.append, held.append, os.open, os.fstat, os.read
        try:
            for index, leaf, name in entries:
                if index < 0:             # '.', '..' or nothing after the last '/'
                    append(_result(self._read_uncached, _join(directory, name), limit))
                    continue
                dir_fd = dir_fds[index]
                if dir_fd < 0:
                    append(cast(OSError, dir_errors[index]))
                    continue
                if len(held) >= _HELD_MAX:
                    _close_all(held)
                try:
                    handle = open_(leaf, _PATH_NOFOLLOW, dir_fd=dir_fd)
                    hold(handle)
                    mode = fstat(handle).st_mode
                    if mode & _S_IFMT != _S_IFREG:
                        if stat.S_ISLNK(mode):     # resolved inside the tree, from its top
                            handle = self.open_path(_join(directory, name), _PATH_FLAGS)
                            hold(handle)
                            mode = fstat(handle).st_mode
                        if not stat.S_ISREG(mode):
                            raise _not_a_file(mode)
                    fd = open_(str(handle), _READ_FLAGS, dir_fd=reopen)
                    hold(fd)
                    append(read(fd, limit))
                except OSError as exc:
                    append(exc)
        finally:
            _close_all(held)
        return out

    def _read_uncached(self, rel: str, limit: int) -> bytes:
        """read() without the directory cache (read_many holds one of its fds meanwhile)."""
        fd = self.open_checked(rel)
        try:
            return os.read(fd, limit)
        finally:
            os.close(fd)

    def scandir(self, rel: str) -> list[tuple[str, bool, bool]]:
        """(name, is_link, is_dir_not_following) of each entry, unsorted."""
        root_fd = self.root_fd
        if self._reopen_dir is not None:
            # the directory's cached O_PATH fd, listed through /proc: half the system calls
            # of listing an fd (os.scandir(fd) dups it, checks it and rewinds it)
            handle = self._dirs().get(rel.strip("/"), self, root_fd)
            with os.scandir(f"/proc/self/fd/{handle}") as it:
                return [(e.name, *_entry_kind(e)) for e in it]
        fd = self.open_path(rel, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC | os.O_NONBLOCK)
        try:
            with os.scandir(fd) as it:
                return [(e.name, *_entry_kind(e)) for e in it]
        finally:
            os.close(fd)

    def names(self, rel: str) -> list[str]:
        """The names in the directory `rel`, unsorted (scandir without the kinds)."""
        root_fd = self.root_fd
        if self._reopen_dir is not None:
            handle = self._dirs().get(rel.strip("/"), self, root_fd)
            return os.listdir(f"/proc/self/fd/{handle}")
        return [name for name, _, _ in self.scandir(rel)]

    def readlink(self, rel: str) -> str:
        root_fd = self.root_fd
        directory, _, last = rel.strip("/").rpartition("/")
        if last not in _NOT_A_NAME:   # discovery reads thousands of links of sys/dev/block
            return os.readlink(last, dir_fd=self._dirs().get(directory, self, root_fd))
        parent, name = self._parent(rel)
        try:
            return os.readlink(name, dir_fd=parent)
        finally:
            os.close(parent)

    def readlinks(self, directory: str, names: Sequence[str]) -> list[str | None]:
        """The target of each link `names` of `directory`; None for what is not a link or
        cannot be read (as HostRoot.readlink)."""
        root_fd = self.root_fd
        directory = directory.strip("/")
        if any(name in _NOT_A_NAME or "/" in name for name in names):
            return [_target_or_none(self, _join(directory, name)) for name in names]
        try:
            dir_fd = self._dirs().get(directory, self, root_fd)
        except OSError:
            return [None for _ in names]
        out: list[str | None] = []
        for name in names:
            try:
                out.append(os.readlink(name, dir_fd=dir_fd))
            except OSError:
                out.append(None)
        return out

    def lstat(self, rel: str) -> os.stat_result:
        root_fd = self.root_fd
        directory, _, last = rel.strip("/").rpartition("/")
        if last not in _NOT_A_NAME:
            return os.stat(last, dir_fd=self._dirs().get(directory, self, root_fd),
                           follow_symlinks=False)
        parent, name = self._parent(rel)
        try:
            return os.stat(name, dir_fd=parent, follow_symlinks=False)
        finally:
            os.close(parent)

    def lexists(self, rel: str) -> bool:
        try:
            self.lstat(rel)
            return True
        except OSError:
            return False

    def is_dir(self, rel: str) -> bool:
        try:
            fd = self.open_path(rel, _PATH_FLAGS)
        except OSError:
            return False
        try:
            return stat.S_ISDIR(os.fstat(fd).st_mode)
        finally:
            os.close(fd)


class _DirCache:
    """A thread's last few directories, resolved inside the tree (O_PATH fds). Only the
    owning thread uses and closes them, so no fd is closed under another's read. A cached
    fd keeps meaning the directory that was resolved inside the tree: what is opened from it
    is opened without following a link."""
    SIZE = 8

    def __init__(self) -> None:
        self.forks = _Forks.count
        self._fds: dict[str, int] = {}
        self._links: set[str] = set()   # last components found to be links (sysfs `device`)
        self._last_parent: str | None = None   # parent of the last directory resolved in full

    def get(self, directory: str, tree: ConfinedTree, root_fd: int,
            dropped: list[int] | None = None) -> int:
        """The fd of `directory` (relative to the top, no '/' at either end); the cache owns
        it: it stays open until a later get() of this thread drops it. A get() adds at most
        two fds (the directory and its parent) and drops the least recently used: closed,
        or added to `dropped` for the caller to close with its own."""
        fds = self._fds
        fd = fds.pop(directory, None)
        if fd is None:
            fd = self._open(directory, tree, root_fd)
            while len(fds) >= self.SIZE:   # drop the least recently used
                old = fds.pop(next(iter(fds)))
                if dropped is None:
                    os.close(old)
                else:
                    dropped.append(old)
        fds[directory] = fd                # most recently used last
        return fd

    def _open(self, directory: str, tree: ConfinedTree, root_fd: int) -> int:
        """A sub-directory of a cached one (sys/block/X/queue after sys/block/X) is opened
        from it with O_NOFOLLOW, one plain openat; so is the second of two siblings in a row
        (dm-0 then dm-1 of sys/devices/virtual/block), whose parent is then kept. Anything
        else, or a link, is resolved from the top."""
        parent, _, name = directory.rpartition("/")
        if name in _NOT_A_NAME or name in self._links:
            return tree.open_path(directory, _DIR_FLAGS)
        fds = self._fds
        if not parent:
            parent_fd: int | None = root_fd
        else:
            parent_fd = fds.pop(parent, None)
            if parent_fd is None and parent == self._last_parent:
                parent_fd = tree.open_path(parent, _DIR_FLAGS)
            if parent_fd is None:
                self._last_parent = parent
                return tree.open_path(directory, _DIR_FLAGS)
            fds[parent] = parent_fd        # (again) most recently used: its siblings follow
        try:
            return os.open(name, _DIR_NOFOLLOW, dir_fd=parent_fd)
        except OSError as exc:
            if exc.errno != errno.ENOTDIR:    # ENOTDIR: a link (or not a directory)
                raise
        if len(self._links) >= self.SIZE * 8:   # a tree of many links: bounded
            self._links.clear()
        self._links.add(name)                 # the next one of that name: at once below
        return tree.open_path(directory, _DIR_FLAGS)

    def __del__(self) -> None:
        if self.forks == _Forks.count:
            for fd in self._fds.values():
                try:
                    os.close(fd)
                except OSError:
                    pass


def _join(directory: str, name: str) -> str:
    return f"{directory}/{name}" if directory and name else directory or name


_Plan = tuple[tuple[str, ...], tuple[tuple[int, str, str], ...]]
_plans: dict[tuple[str, ...], _Plan] = {}


def _plan(names: Sequence[str]) -> _Plan:
    """The sub-directories a read_many batch goes into, and per name (index of its
    sub-directory, last component, name); index -1 for a name that read_many resolves in
    full. Discovery asks for the same few tuples of names thousands of times: kept."""
    key = tuple(names)
    plan = _plans.get(key)
    if plan is None:
        subs: list[str] = []
        entries = []
        for name in key:
            sub, _, leaf = name.rpartition("/")
            if leaf in _NOT_A_NAME or len(subs) >= _DirCache.SIZE // 2 - 1 and sub not in subs:
                # each sub-directory may add two fds to the cache (it and its parent): with
                # more, one could push out another of the same batch
                entries.append((-1, leaf, name))
                continue
            if sub not in subs:
                subs.append(sub)
            entries.append((subs.index(sub), leaf, name))
        plan = (tuple(subs), tuple(entries))
        if len(_plans) < 256:
            _plans[key] = plan
    return plan


def _close_all(fds: list[int]) -> None:
    """Close `fds` (open and owned by the caller, so every number between two of them that
    follow each other is ours too) with one close_range per run of consecutive numbers;
    empties the list."""
    if not fds:
        return
    fds.sort()
    first = last = fds[0]
    for fd in fds[1:]:
        if fd != last + 1:
            os.closerange(first, last + 1)
            first = fd
        last = fd
    os.closerange(first, last + 1)
    fds.clear()


def _target_or_none(tree: ConfinedTree, rel: str) -> str | None:
    try:
        return tree.readlink(rel)
    except OSError:
        return None


def _result(read: Callable[[str, int], bytes], rel: str, limit: int) -> bytes | OSError:
    try:
        return read(rel, limit)
    except OSError as exc:
        return exc


def _link_target(name: str, dir_fd: int) -> str | None:
    """The target of the link `name` in `dir_fd`, None when it is not a link."""
    try:
        return os.readlink(name, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno == errno.EINVAL:
            return None
        raise


def _entry_kind(entry: os.DirEntry) -> tuple[bool, bool]:
    try:
        return entry.is_symlink(), entry.is_dir(follow_symlinks=False)
    except OSError:
        return False, False


def _not_a_file(mode: int) -> OSError:
    if stat.S_ISDIR(mode):
        return OSError(errno.EISDIR, os.strerror(errno.EISDIR))
    if stat.S_ISFIFO(mode):
        return Refused("a FIFO, not a file")
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return Refused("a device node, not a file")
    if stat.S_ISSOCK(mode):
        return Refused("a socket, not a file")
    return Refused("not a regular file")
