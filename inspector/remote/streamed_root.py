"""A host sampled over ssh, as the live samplers read hosts: a HostRoot whose reads are
answered from the last frame of the host's live loop (inspector.remote.live), and, for what
does not move between samples (block device topology, /etc/passwd), from the capture taken
when the session opened. A process's status is read whole when it appears, then refreshed
every STATUS_EVERY samples with the lines the samplers read (Uid, VmSwap, context switches). LiveSampler(root,
clock=root.clock) then gives the same Counters, Rates and live findings as on the host
itself: `top`, the TUI and the live rules run unchanged.

`clock()` starts each sample: it asks the host for a frame and returns the sample's moment on
the host's clock (/proc/uptime in the frame, mapped onto this machine's monotonic clock at the
first frame), so rates are per second of the host's time, whatever the link's delays.
A request that gets no answer in time leaves every streamed source Unknown with the reason.
"""
from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from inspector.live.sampler import READ_TIMEOUT, LiveSampler
from inspector.model import Unknown
from inspector.remote.frames import Frame, StreamError
from inspector.remote.live import LiveStream
from inspector.roots.host import MAX_READ_BYTES, HostRoot, Unavailable

# samples between status reads of every process: a new one's is read at once, and what the
# samplers read there is its user (fixed) and its swap use (slow); each full refresh costs
# the host a grep over every status file (tests/bench/bench_ssh.py)
STATUS_EVERY = 30
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
        self._next: list[str] = []               # paths to ask for with the next frame
        self._next_pids: set[str] = set()        # the processes they are for
        self._status: dict[str, bytes] = {}      # pid -> status, every STATUS_EVERY samples
        self._samples = 0
        self._base: tuple[float, float, float] | None = None   # (uptime, monotonic, wall)

    # ------------------------------------------------------------------ frames
    def clock(self) -> tuple[float, float]:
        """Fetch the sample's frame; (monotonic, wall) of its moment on the host. One request
        per sample: what the last frame showed is needed next (new processes' command lines
        and status, the wait points of tasks in D) rides on it; a new process is listed from
        the sample that brings its command line (the sampler keeps the first it reads). Only
        the first sample asks twice, so the first rates list every process."""
        self._samples += 1
        flags = "s" if self._samples % STATUS_EVERY == 1 else "-"
        try:
            frame = self.stream.ask(flags, self._next, timeout=self.frame_timeout)
            self._answer(frame, self._next_pids)
            self._next, self._next_pids = self._wanted(frame)
            if self._samples == 1 and self._next:
                frame.files.update(self.stream.ask("-", self._next, self.frame_timeout).files)
                self._answer(frame, self._next_pids)
                self._next, self._next_pids = self._wanted(frame)
        except StreamError as exc:
            self.problem = f"ssh {self.remote}: {exc}"
            self._files, self._pids, self._nics, self._tasks = {}, [], [], {}
            return time.monotonic(), time.time()
        self.problem = None
        self._install(frame)
        return self._moment(frame)

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
        out: list[str] = []
        new: set[str] = set()
        blocked = _blocked(frame)
        for key, stat in frame.files.items():
            parts = key.split("/")
            if len(parts) != 3 or parts[0] != "proc" or parts[2] != "stat":
                continue
            pid = parts[1]
            if pid not in self._answered and not _kernel_thread(stat) \
                    and len(new) < MAX_NEW_PER_SAMPLE:
                out += [f"/proc/{pid}/cmdline", f"/proc/{pid}/status"]
                new.add(pid)
            if _state(stat) == "D":
                out += [f"/proc/{pid}/wchan", f"/proc/{pid}/stack", f"/proc/{pid}/status"]
            if blocked and _threads(stat) > 1:
                out += [f"/proc/{pid}/task/*/stat"]
        return list(dict.fromkeys(out)), new      # a path twice would be read twice

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
                elif parts[2] == "task" and len(parts) == 5:
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
        self._pids = sorted((pid for pid, stat in alive.items()
                             if pid in self._answered or _kernel_thread(stat)), key=int)
        self._nics = sorted(nics)
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
        return None

    def _unavailable(self, rel: str, exc: OSError | None = None) -> Unavailable:
        if self.problem:
            return Unavailable(self.problem)
        return Unavailable("not present")

    def read_bytes(self, rel: str, limit: int = MAX_READ_BYTES) -> bytes:
        rel = rel.lstrip("/")
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


def _blocked(frame: Frame) -> bool:
    for line in frame.files.get("proc/stat", b"").splitlines():
        if line.startswith(b"procs_blocked"):
            return line.split()[1:2] != [b"0"]
    return False


class RemoteSampler:
    """LiveSampler over a StreamedRoot, with the API of inspector.live.worker.SamplerProcess
    (`sample()`, `counters()`, `close()`): in this process, since its reads are answered from
    memory and its one wait, the frame, has a deadline."""
    bounded = True

    def __init__(self, root: StreamedRoot, read_timeout: float = READ_TIMEOUT):
        self.root = root
        self._sampler = LiveSampler(root, clock=root.clock, read_timeout=read_timeout)

    def sample(self):
        return self._sampler.sample()

    counters = sample

    def close(self) -> None:
        self.root.close()


__all__ = ["RemoteSampler", "StreamedRoot", "Unknown"]
