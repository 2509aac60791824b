"""A host sampled over ssh, as the live samplers read hosts: a HostRoot whose reads are
answered from the last frame of the host's live loop (inspector.remote.live), and, for what
does not move between samples (block device topology, /etc/passwd), from the capture taken
when the session opened. What a frame carries is cut to what moved (inspector.remote:
process_io, netdev): a process's status is read when it appears, then every STATUS_EVERY
samples; filesystem fill comes from the host's df every FILL_EVERY_S (fill.py), the kernel
log when the OOM kill count rose (kernel_log.py). LiveSampler(root, clock=root.clock) then
gives the same Counters, Rates and live findings as on the host itself: `top`, the TUI and
the live rules run unchanged.

`clock()` starts each sample: it asks the host for a frame and returns the sample's moment on
the host's clock (/proc/uptime in the frame, mapped onto this machine's monotonic clock at the
first frame), so rates are per second of the host's time, whatever the link's delays.
A request that gets no answer in time leaves every streamed source Unknown with the reason.
"""
from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from inspector.live.filesystems import FsUse
from inspector.live.sampler import READ_TIMEOUT, LiveSampler
from inspector.model import Unknown
from inspector.remote.fill import fill_rows, parse_gnu, parse_posix
from inspector.remote.frames import Frame, StreamError, StreamTimeout
from inspector.remote.kernel_log import as_kmsg
from inspector.remote.live import (
    DF_BLOCKS,
    DF_GNU,
    DF_INODES,
    DF_TIMEOUT_S,
    KERNEL_LOG,
    MOUNTINFO,
    LiveStream,
)
from inspector.remote.netdev import parse_net_dev
from inspector.remote.process_io import ProcessIo
from inspector.roots.host import MAX_READ_BYTES, HostRoot, Unavailable

# samples between two status reads of a process: a new one's is read at once, then in turn
# (a thirtieth of them each sample): what the samplers read there is its user (fixed) and its
# swap use (slow)
STATUS_EVERY = 30
FILL_EVERY_S = 15.0        # between two df: each costs the host a df and a timeout (3 ms)
FILL_SLACK_S = 0.5         # (so at 1 Hz it rides on every fifteenth frame)
FILL_RETRY_S = 60.0        # after a df that gave nothing: a hung mount would cost each try
THREAD_WALK_EVERY = 5      # samples between two walks of a process's threads (see _wanted)
MAX_NEW_PER_SAMPLE = 2000  # command lines asked at once (a fork bomb is not read whole)
# what the capture answers: the parts of the host that do not change between samples
STATIC = ("sys/block/", "sys/devices/", "sys/dev/block/", "sys/class/block/", "etc/")


class StreamedRoot(HostRoot):
    """Reads from the live loop's frames; `static` (the session's capture) for the rest."""

    def __init__(self, stream: LiveStream, static: HostRoot, frame_timeout: float = 1.5):
        super().__init__("/", label=f"ssh {stream.target.destination}")
        self.remote = stream.target.destination
        self.stream = stream
        self.static = static
        self.frame_timeout = frame_timeout
        self.problem: str | None = None          # why the last frame did not come
        self._files: dict[str, bytes] = {}
        self._pids: list[str] = []
        self._nics: list[str] = []
        self._tasks: dict[str, list[str]] = {}
        self._cmdlines: dict[str, bytes] = {}    # pid -> command line, read once
        self._answered: set[str] = set()         # pids whose command line came
        self._next: list[str] = []               # words for the next frame (see live.py)
        self._next_pids: set[str] = set()        # the processes they are for
        self._status: dict[str, bytes] = {}      # pid -> status, read in turn
        self._io = ProcessIo()                   # whose io the frames read
        self._net: dict[str, dict[str, bytes]] = {}   # /proc/net/dev of the frame, by NIC
        self._samples = 0
        self._waiting: set[str] = set()          # pids with a thread in D at the last walk
        self._md = False                         # md devices in the last frame's diskstats
        # filesystem fill: df every FILL_EVERY_S (inspector.remote.fill)
        self.filesystems: list[FsUse] | Unknown = Unknown("over ssh: df not run yet")
        self.filesystems_wall: float | None = None
        self._fill_next = float("-inf")
        self._oom_kills: int | None = None
        self._kernel_log: bytes | Unavailable = Unavailable("not read yet")
        self._base: tuple[float, float, float] | None = None   # (uptime, monotonic, wall)

    # ------------------------------------------------------------------ frames
    def clock(self) -> tuple[float, float]:
        """Fetch the sample's frame; (monotonic, wall) of its moment on the host. One request
        per sample: what the last frame showed is needed next (new processes' command lines
        and status, the wait points of tasks in D) rides on it; a new process is listed from
        the sample that brings its command line (the sampler keeps the first it reads). Only
        the first sample asks twice, so the first rates list every process."""
        self._samples += 1
        flags = ""
        if self._samples == 1 or self._md:
            flags += "m"
        if self._io.sweep_due():
            flags += "a"
        # after a frame given up on, the host's awk may still be writing it: what grep reads
        # beside it (df; with mawk and busybox, command lines and wait channels) waits for the
        # next frame (inspector.remote.live, direct_ok)
        direct = self.stream.direct_ok
        fill = direct and self._fill_due()
        timeout = self.frame_timeout + (DF_TIMEOUT_S if fill else 0.0)
        words, asked = self._next, self._next_pids
        if not direct and self.stream.by_grep:
            words, asked = [w for w in words if w[:1] not in self.stream.by_grep], set()
        try:
            frame = self.stream.ask(flags + ("f" if fill else ""), words, timeout=timeout)
            self._answer(frame, asked)
            self._next, self._next_pids = self._wanted(frame)
            self._name_io(frame)
            if self._samples == 1 and self._next:
                frame.files.update(self.stream.ask("-", self._next, self.frame_timeout).files)
                self._answer(frame, self._next_pids)
                self._next, self._next_pids = self._wanted(frame)
                self._name_io(frame)
            self._kernel_log = self._read_kernel_log(frame)
        except StreamError as exc:
            self.problem = f"ssh {self.remote}: {exc}"
            self._files, self._pids, self._nics, self._tasks = {}, [], [], {}
            if fill:
                self._fill_failed(f"no frame with df within {timeout:g} s ({exc})")
            return time.monotonic(), time.time()
        self.problem = None
        self._install(frame)
        moment = self._moment(frame)
        if fill:
            self._take_fill(frame, moment[1])
        return moment

    # ------------------------------------------------------------------ fill, kernel log
    def _fill_due(self) -> bool:
        if self.stream.has.get("df") not in ("gnu", "posix"):
            self.filesystems = Unknown(
                f"over ssh: df not run on {self.remote}: it has no `timeout` command to bound "
                "it (a df stuck on a hung mount would stop the live view)")
            return False
        return time.monotonic() >= self._fill_next

    def _take_fill(self, frame: Frame, wall: float) -> None:
        def text(key: str) -> str:
            return frame.files.get(key, b"").decode("utf-8", "surrogateescape")
        table = parse_gnu(text(DF_GNU)) if self.stream.has.get("df") == "gnu" else \
            parse_posix(text(DF_BLOCKS), text(DF_INODES))
        rows = fill_rows(text(MOUNTINFO), table)
        if isinstance(rows, Unknown):
            self._fill_failed(f"{rows.reason} within its {DF_TIMEOUT_S} s timeout (a hung "
                              "mount?)")
            return
        self.filesystems, self.filesystems_wall = rows, wall
        self._fill_next = time.monotonic() + FILL_EVERY_S - FILL_SLACK_S

    def _fill_failed(self, reason: str) -> None:
        self.filesystems = Unknown(f"over ssh: {reason}; df tried again in {FILL_RETRY_S:g} s")
        self.filesystems_wall = None
        self._fill_next = time.monotonic() + FILL_RETRY_S

    def _read_kernel_log(self, frame: Frame) -> bytes | Unavailable:
        """The kernel log, read when the host's OOM kill count rose (as the sampler reads it:
        on the first sample too when there were kills); else what was read before."""
        kills = _oom_kills(frame)
        seen, self._oom_kills = self._oom_kills, kills
        if kills is None or not (kills > seen if seen is not None else kills > 0):
            return self._kernel_log
        if self.stream.has.get("kmsg", "-") == "-":
            return Unavailable(f"over ssh: {self.remote} has neither dd with iflag=nonblock "
                               "nor dmesg to read it")
        try:
            data = self.stream.ask("k", timeout=self.frame_timeout).files.get(KERNEL_LOG)
        except StreamTimeout as exc:
            return Unavailable(f"not read over ssh: {exc}")
        if not data:
            return Unavailable(f"nothing read from /dev/kmsg on {self.remote} (needs root "
                               "or kernel.dmesg_restrict=0)")
        return as_kmsg(data)

    def _answer(self, frame: Frame, asked: set[str]) -> None:
        """The processes whose command line this frame answers (an empty one too: a zombie)."""
        for pid in asked:
            if f"proc/{pid}/stat" in frame.files:
                self._answered.add(pid)
                self._cmdlines.setdefault(pid, frame.files.get(f"proc/{pid}/cmdline", b""))

    def _wanted(self, frame: Frame) -> tuple[list[str], set[str]]:
        """What to ask for with the next frame: the command line and status of user-space
        processes not seen yet (kernel threads have neither), the wait points of tasks in D,
        and the threads of multi-threaded processes while the kernel counts blocked tasks."""
        out: list[str] = []                 # the loop's words (inspector.remote.live)
        new: set[str] = set()
        blocked = _blocked(frame)
        waiting: set[str] = set()           # processes with a thread in D in this frame
        turn = (self._samples + 1) % STATUS_EVERY
        for key, stat in frame.files.items():
            parts = key.split("/")
            if len(parts) == 5 and parts[2] == "task" and parts[4] == "stat" \
                    and parts[3] != parts[1] and _state(stat) == "D":
                waiting.add(parts[1])
                out += [f"w{parts[1]}/{parts[3]}", f"s{parts[1]}/{parts[3]}"]
            if len(parts) != 3 or parts[0] != "proc" or parts[2] != "stat":
                continue
            pid = parts[1]
            user = not _kernel_thread(stat)
            if pid not in self._answered and user and len(new) < MAX_NEW_PER_SAMPLE:
                out += [f"c{pid}", f"s{pid}"]
                new.add(pid)
            elif user and int(pid) % STATUS_EVERY == turn:
                out.append(f"s{pid}")        # its turn: swap use moves slowly
            if _state(stat) == "D":
                out += [f"w{pid}", f"s{pid}"]
            # a thread found in D is looked at every sample (its time in D counts on); the
            # others in turn, a process's threads every THREAD_WALK_EVERY samples: a java
            # of a thousand threads costs the host a thousand stat files per walk
            if blocked and _threads(stat) > 1 and (
                    pid in self._waiting or (int(pid) + self._samples) % THREAD_WALK_EVERY == 0
                    or self._samples == 1):
                out.append(f"t{pid}")
        self._waiting = waiting if blocked else set()
        return list(dict.fromkeys(out)), new      # a file twice would be read twice

    def _name_io(self, frame: Frame) -> None:
        """Tell the loop whose io the next frame reads (inspector.remote.process_io)."""
        stats = {key.split("/")[1]: stat for key, stat in frame.files.items()
                 if key.endswith("/stat") and key.count("/") == 2 and key.startswith("proc/")
                 and not _kernel_thread(stat)}
        ios = {pid: io for pid in stats if (io := frame.files.get(f"proc/{pid}/io")) is not None}
        self._io.update(stats, ios)
        add, remove = self._io.changes()
        self.stream.read_io_of(add, remove)

    def _install(self, frame: Frame) -> None:
        files = frame.files
        nics: set[str] = set()
        tasks: dict[str, list[str]] = {}
        for key, data in list(files.items()):
            parts = key.split("/")
            if parts[0] == "proc" and len(parts) > 2 and parts[1].isdigit():
                if parts[2] == "cmdline":
                    self._cmdlines[parts[1]] = data
                elif parts[2] == "status" and len(parts) == 3:
                    self._status[parts[1]] = data
                elif parts[2] == "task" and len(parts) == 5 and parts[4] == "stat":
                    tasks.setdefault(parts[1], []).append(parts[3])
            elif parts[:3] == ["sys", "class", "net"] and len(parts) > 3:
                nics.add(parts[3])
        alive = {key[len("proc/"):-len("/stat")]: files[key] for key in files
                 if key.startswith("proc/") and key.endswith("/stat") and key.count("/") == 2}
        for cache in (self._cmdlines, self._status):
            for pid in [p for p in cache if p not in alive]:
                del cache[pid]
        self._answered &= set(alive)
        self._files = files
        self._net = parse_net_dev(files.get("proc/net/dev", b""))
        self._md = _has_md(files.get("proc/diskstats", b""))
        self._pids = sorted((pid for pid, stat in alive.items()
                             if pid in self._answered or _kernel_thread(stat)), key=int)
        self._nics = sorted(nics | set(self._net))
        self._tasks = tasks

    def _moment(self, frame: Frame) -> tuple[float, float]:
        try:
            uptime = float(frame.files["proc/uptime"].split()[0])
        except (KeyError, IndexError, ValueError):
            return time.monotonic(), time.time()
        if self._base is None:
            wall = self.stream.remote_wall or time.time()
            self._base = (uptime, time.monotonic(), wall)
        up0, mono0, wall0 = self._base
        return mono0 + (uptime - up0), wall0 + (uptime - up0)

    def frame_files(self) -> set[str]:
        """What the last frame read ("proc/12/stat", ...): what the host paid for."""
        return set(self._files)

    # ------------------------------------------------------------------ reads
    def _streamed(self, rel: str) -> bytes | None:
        data = self._files.get(rel)
        if data is not None:
            return data
        parts = rel.split("/")
        if len(parts) == 3 and parts[0] == "proc":
            if parts[2] == "cmdline":
                return self._cmdlines.get(parts[1])
            if parts[2] == "status":
                return self._status.get(parts[1])
            if parts[2] == "io" and f"proc/{parts[1]}/stat" in self._files:
                return self._io.io(parts[1])      # not read this frame: it did not move
        if len(parts) == 6 and parts[:3] == ["sys", "class", "net"] and parts[4] == "statistics":
            return self._net.get(parts[3], {}).get(parts[5])
        return None

    def _unavailable(self, rel: str, exc: OSError | None = None) -> Unavailable:
        if self.problem:
            return Unavailable(self.problem)
        return Unavailable("not present")

    def read_bytes(self, rel: str, limit: int = MAX_READ_BYTES) -> bytes:
        rel = rel.lstrip("/")
        if rel == "dev/kmsg":
            if isinstance(self._kernel_log, Unavailable):
                raise self._kernel_log
            return self._kernel_log[:limit]
        data = self._streamed(rel)
        if data is not None:
            return data[:limit]
        if rel.startswith(STATIC):
            return self.static.read_bytes(rel, limit)
        raise self._unavailable(rel)

    def exists(self, rel: str) -> bool:
        rel = rel.lstrip("/")
        if self._streamed(rel) is not None or self._is_streamed_dir(rel):
            return True
        return rel.startswith(STATIC) and self.static.exists(rel)

    def _is_streamed_dir(self, rel: str) -> bool:
        parts = rel.split("/")
        if rel in ("proc", "sys/class/net"):
            return True
        if len(parts) == 2 and parts[0] == "proc":
            return parts[1] in self._pids
        if len(parts) == 4 and parts[:3] == ["sys", "class", "net"]:
            return parts[3] in self._nics
        return len(parts) == 3 and parts[0] == "proc" and parts[2] == "task" \
            and parts[1] in self._tasks

    def is_dir(self, rel: str) -> bool:
        rel = rel.lstrip("/")
        if self._is_streamed_dir(rel):
            return True
        return rel.startswith(STATIC) and self.static.is_dir(rel)

    def listdir(self, rel: str) -> list[str]:
        rel = rel.lstrip("/")
        parts = rel.split("/")
        if rel == "proc":
            if self.problem:
                raise Unavailable(self.problem)
            return list(self._pids)
        if rel == "sys/class/net":
            if self.problem:
                raise Unavailable(self.problem)
            return list(self._nics)
        if len(parts) == 3 and parts[0] == "proc" and parts[2] == "task":
            if parts[1] in self._tasks:
                return sorted(self._tasks[parts[1]], key=int)
            raise self._unavailable(rel)
        if rel.startswith(STATIC) or rel == "sys/block":
            return self.static.listdir(rel)
        raise self._unavailable(rel)

    def _readlink_raw(self, rel: str) -> str | None:
        if rel.startswith(STATIC) or rel.startswith("sys/block"):
            return self.static.readlink(rel)
        return None

    def fact(self, kind: str, key: str, producer: Callable[[], Any]) -> Any:
        """The capture's facts: nothing about the host is produced on this machine."""
        return self.static.fact(kind, key, producer)

    def close(self) -> None:
        self.stream.close()


def _stat_fields(stat: bytes) -> list[bytes]:
    return stat.rpartition(b")")[2].split()


PF_KTHREAD = 0x00200000


def _kernel_thread(stat: bytes) -> bool:
    fields = _stat_fields(stat)
    try:
        return bool(int(fields[6]) & PF_KTHREAD)
    except (IndexError, ValueError):
        return False


def _state(stat: bytes) -> str:
    fields = _stat_fields(stat)
    return fields[0].decode("ascii", "replace") if fields else "?"


def _threads(stat: bytes) -> int:
    fields = _stat_fields(stat)
    try:
        return int(fields[17])
    except (IndexError, ValueError):
        return 1


def _has_md(diskstats: bytes) -> bool:
    return any(line.split()[2:3] and line.split()[2].startswith(b"md")
               for line in diskstats.splitlines())


def _oom_kills(frame: Frame) -> int | None:
    for line in frame.files.get("proc/vmstat", b"").splitlines():
        if line.startswith(b"oom_kill "):
            value = line.split()[1:2]
            return int(value[0]) if value and value[0].isdigit() else None
    return None


def _blocked(frame: Frame) -> bool:
    for line in frame.files.get("proc/stat", b"").splitlines():
        if line.startswith(b"procs_blocked"):
            return line.split()[1:2] != [b"0"]
    return False


NEVER = 1e18


class RemoteSampler:
    """LiveSampler over a StreamedRoot, with the API of inspector.live.worker.SamplerProcess
    (`sample()`, `counters()`, `close()`): in this process, since its reads are answered from
    memory and its one wait, the frame, has a deadline."""
    bounded = True

    def __init__(self, root: StreamedRoot, read_timeout: float = READ_TIMEOUT):
        self.root = root
        # the sampler's own sweep (statvfs, here) never runs: the host's df fills it in
        self._sampler = LiveSampler(root, clock=root.clock, read_timeout=read_timeout,
                                    filesystems_every=NEVER)

    def sample(self):
        counters = self._sampler.sample()
        counters.filesystems = self.root.filesystems
        counters.filesystems_wall = self.root.filesystems_wall
        return counters

    counters = sample

    def close(self) -> None:
        self.root.close()


__all__ = ["RemoteSampler", "StreamedRoot", "Unknown"]
