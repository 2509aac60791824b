"""Where an output file goes (`-o`, `--textfile`, `--db`), found without trusting other users'
symlinks.

Inspector runs as root on paths in shared directories (/tmp, /var/tmp). A path resolved in
userspace (os.path.realpath) reaches the kernel without links, so fs.protected_symlinks never
sees them: the walk below applies the kernel's rule itself. In a sticky world-writable
directory a symlink is followed only when it is ours or the directory owner's; another user's
link there is refused, naming the link and its owner. The same rule keeps another user's
regular file there from being replaced (fs.protected_regular).

The walk holds a descriptor on each directory and opens the next one relative to it with
O_NOFOLLOW, checking it is the directory just examined, so a component swapped for a link
after its check is not followed either. What it returns (a Place) keeps the descriptor of the
final directory: the caller creates and renames inside it (`dir_fd`), never by path.

A path ending in `/` (or `/.`, `/..`) names a directory: it never creates a file (coreutils'
`cp x newdir/`: "Not a directory")."""
from __future__ import annotations

import os
import pwd
import stat
from dataclasses import dataclass

MAX_SYMLINKS = 40          # the kernel's limit on links followed in one lookup (ELOOP)
_STICKY_WORLD_WRITABLE = stat.S_ISVTX | stat.S_IWOTH
_DIR_FLAGS = os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


class OutputError(Exception):
    """An output path we refuse to write; the message is one line naming the path."""


class NoSuchDirectory(OutputError):
    """A directory on the path does not exist (a reader may take that as nothing there)."""


_KINDS = ((stat.S_ISBLK, "a block device"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"),
          (stat.S_ISLNK, "a symbolic link"))


def file_kind(mode: int) -> str:
    """'a block device', 'a directory' ... for a message; 'a regular file' for one."""
    if stat.S_ISREG(mode):
        return "a regular file"
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def owner_name(uid: int) -> str:
    try:
        return f"{pwd.getpwuid(uid).pw_name} (uid {uid})"
    except KeyError:
        return f"uid {uid}"


@dataclass
class Place:
    """A directory entry an output goes to: `name` in the directory open as `dir_fd`
    (O_PATH), whose path is `directory`; `entry` is what is there now (lstat), None if new."""
    dir_fd: int
    directory: str
    name: str
    entry: os.stat_result | None

    @property
    def path(self) -> str:
        return self.directory if self.name == "." else os.path.join(self.directory, self.name)

    def entry_now(self) -> os.stat_result | None:
        try:
            return os.lstat(self.name, dir_fd=self.dir_fd)
        except FileNotFoundError:
            return None

    def close(self) -> None:
        if self.dir_fd >= 0:
            os.close(self.dir_fd)
            self.dir_fd = -1

    def __enter__(self) -> Place:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _is_sticky_world_writable(st: os.stat_result) -> bool:
    return st.st_mode & _STICKY_WORLD_WRITABLE == _STICKY_WORLD_WRITABLE


def _trusted_owner(owner: int, directory: os.stat_result) -> bool:
    """The kernel's test (fs/namei.c may_follow_link, may_create_in_sticky): in a sticky
    world-writable directory only our own entries and its owner's are trusted."""
    return (not _is_sticky_world_writable(directory)
            or owner in (os.geteuid(), directory.st_uid))


def _parts(path: str) -> list[str]:
    return [p for p in path.split("/") if p not in ("", ".")]


def _names_directory(path: str) -> bool:
    return path.split("/")[-1] in ("", ".", "..")


def walk(path: str) -> Place:
    """The entry `path` names, its links followed under the kernel's rule. A missing final
    name is a new entry (None); anything else missing, another user's link in a sticky
    world-writable directory, a loop, a non-directory in the middle: OutputError."""
    if not path:
        raise OutputError("an empty path names no file")
    if "\0" in path:
        raise OutputError(f"{path!r}: a path cannot hold a NUL byte")
    names_directory = _names_directory(path)
    absolute = path.startswith("/")
    fd = os.open("/" if absolute else ".", _DIR_FLAGS)
    where = "/" if absolute else os.getcwd()
    pending = _parts(path)[::-1]         # a stack: the next name is last
    links = 0
    try:
        while pending:
            name = pending.pop()
            last = not pending
            if name == "..":
                fd = _step(path, fd, "..", None)
                where = os.path.dirname(where)
                continue
            here = os.path.join(where, name)
            try:
                st = os.lstat(name, dir_fd=fd)
            except FileNotFoundError:
                if last and not names_directory:
                    return Place(fd, where, name, None)
                why = " (a path ending in / names a directory)" if last else ""
                raise NoSuchDirectory(f"{path}: no such directory {here}{why}") from None
            if stat.S_ISLNK(st.st_mode):
                links += 1
                if links > MAX_SYMLINKS:
                    raise OutputError(f"{path}: too many levels of symbolic links")
                target = _readlink_trusted(path, fd, where, name, st)
                if last and _names_directory(target):
                    names_directory = True
                if target.startswith("/"):
                    fd = _step(path, fd, "/", None)
                    where = "/"
                pending.extend(_parts(target)[::-1])
                continue
            if not stat.S_ISDIR(st.st_mode):
                if last and not names_directory:
                    return Place(fd, where, name, st)
                raise OutputError(f"{path}: {here} is not a directory")
            if last:
                return Place(fd, where, name, st)
            fd = _step(path, fd, name, st)
            where = here
        # the path ends at a directory reached by '..', a link or '/': that directory itself
        return Place(fd, where, ".", os.fstat(fd))
    except BaseException:
        os.close(fd)
        raise


def _step(path: str, fd: int, name: str, seen: os.stat_result | None) -> int:
    """Into directory `name` of `fd` ('/': the root): never through a link, and only if it is
    the directory just examined (`seen`). `fd` is closed once the step is made (else the
    caller closes it)."""
    try:
        new = os.open(name, _DIR_FLAGS, dir_fd=fd)
    except OSError as exc:
        raise OutputError(f"{path}: {name}: {exc.strerror or exc}") from None
    if seen is not None:
        now = os.fstat(new)
        if (now.st_dev, now.st_ino) != (seen.st_dev, seen.st_ino):
            os.close(new)
            raise OutputError(f"{path}: {name} changed while the path was looked up")
    os.close(fd)
    return new


def _readlink_trusted(path: str, fd: int, where: str, name: str, st: os.stat_result) -> str:
    """The target of link `name`, if the kernel's protected_symlinks rule lets us follow it."""
    directory = os.fstat(fd)
    if not _trusted_owner(st.st_uid, directory):
        raise OutputError(
            f"{path}: refusing to follow {os.path.join(where, name)}, a symlink owned by "
            f"{owner_name(st.st_uid)} in the sticky world-writable directory {where} (only "
            "links of yours or of the directory's owner are followed there)")
    target = os.readlink(name, dir_fd=fd)
    again = os.lstat(name, dir_fd=fd)
    if (again.st_ino, again.st_uid) != (st.st_ino, st.st_uid):
        raise OutputError(f"{path}: {os.path.join(where, name)} changed while it was read")
    return target


def check_entry(path: str, place: Place, entry: os.stat_result | None,
                doing: str = "replace") -> None:
    """OutputError unless `entry` (what is at `place` now) may be replaced by a new regular
    file (or written into, `doing`): nothing there, or a regular file not planted by another
    user in a sticky world-writable directory."""
    if entry is None:
        return
    via = f" ({place.path})" if place.path != os.path.abspath(path) else ""
    if not stat.S_ISREG(entry.st_mode):
        raise OutputError(f"{path}{via} is {file_kind(entry.st_mode)}: refusing to replace it "
                          "(write to a regular file or a new path)")
    directory = os.fstat(place.dir_fd)
    if not _trusted_owner(entry.st_uid, directory):
        raise OutputError(
            f"{path}{via}: refusing to {doing} a file owned by {owner_name(entry.st_uid)} in "
            f"the sticky world-writable directory {place.directory} (only files of yours or "
            "of the directory's owner are replaced there)")


def locate(path: str) -> Place:
    """Where a file written to `path` goes: a new name or a regular file we may replace, in a
    directory held open (the caller closes the Place). OutputError otherwise."""
    try:
        place = walk(path)
    except OSError as exc:         # a directory we may not search, an I/O error
        raise OutputError(f"{path}: {exc.strerror or exc}") from None
    try:
        check_entry(path, place, place.entry)
    except BaseException:
        place.close()
        raise
    return place


def is_directory(path: str) -> bool:
    """Whether `path` names an existing directory (its links followed under the rule);
    OutputError for a link the rule refuses, or a path ending in / that names none."""
    try:
        with walk(path) as place:
            return place.entry is not None and stat.S_ISDIR(place.entry.st_mode)
    except OSError as exc:
        raise OutputError(f"{path}: {exc.strerror or exc}") from None
