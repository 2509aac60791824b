"""Where a task in D state waits: its kernel stack's first telling frame (/proc/PID/stack,
root only), and the block device it is doing IO on (its open files: a device node, or a
file on a mounted filesystem).

The generic frames every sleeping task has (schedule, io_schedule, ...) say nothing; the
frame below them names the wait (blkdev_direct_IO, jbd2_log_wait_commit, nfs_wait_on_request,
rwsem_down_write_slowpath).
"""
from __future__ import annotations

from collections.abc import Iterable

from inspector.model import Unknown
from inspector.roots.host import HostRoot, Unavailable

STACK_LIMIT = 8192
MAX_FDS = 512                # open files looked at per task (a database has thousands)
GENERIC = ("__schedule", "schedule", "io_schedule", "schedule_timeout", "io_schedule_timeout",
           "schedule_preempt_disabled", "bit_wait_io", "__wait_on_bit", "out_of_line_wait_on_bit",
           "wait_for_completion", "wait_for_completion_io", "__wait_for_common",
           "wait_for_common_io", "do_wait_for_common", "rq_qos_wait", "__folio_lock",
           "folio_wait_bit_common", "wait_on_page_bit_common", "__cond_resched")


def read_stack(root: HostRoot, task_dir: str) -> list[str] | Unknown:
    """Function names of the task's kernel stack, innermost first."""
    try:
        text = root.read_text(f"{task_dir}/stack", STACK_LIMIT)
    except Unavailable as exc:
        return Unknown(f"/proc/PID/stack {exc.reason}")
    frames = []
    for line in text.splitlines():
        word = line.split("] ", 1)[-1].strip()
        name = word.split("+", 1)[0]
        if name:
            frames.append(name)
    return frames or Unknown("empty kernel stack (kernel hides it)")


def wait_point(wchan: str | Unknown, stack: list[str] | Unknown) -> str:
    """The first telling frame of the stack, else wchan, else "unknown"."""
    if isinstance(stack, list):
        for frame in stack:
            if frame not in GENERIC:
                return frame
    if isinstance(wchan, str) and wchan not in GENERIC:
        return wchan
    if isinstance(stack, list) and stack:
        return stack[0]
    return wchan if isinstance(wchan, str) else "unknown"


def open_paths(root: HostRoot, tgid: int) -> list[str]:
    """Targets of the process's open file descriptors (up to MAX_FDS)."""
    out = []
    for entry in root.try_listdir(f"proc/{tgid}/fd")[:MAX_FDS]:
        target = root.readlink(f"proc/{tgid}/fd/{entry}")
        if target and target.startswith("/"):
            out.append(target)
    return out


def device_of(paths: Iterable[str], disks: Iterable[str],
              mounts: list[tuple[str, str]]) -> str | None:
    """The block device behind the first path that has one: a device node named in
    /proc/diskstats, else the filesystem holding the file. `mounts`: (mountpoint, device
    name), longest mountpoint first."""
    names = set(disks)
    for path in paths:
        if path.startswith("/dev/"):
            name = path[5:]
            if name.startswith("mapper/"):
                continue
            if name in names:
                return name
            continue
        if path.startswith(("/proc/", "/sys/", "/dev/", "socket:", "pipe:", "anon_inode:")):
            continue
        for mountpoint, device in mounts:
            if path == mountpoint or path.startswith(mountpoint.rstrip("/") + "/"):
                if device in names:
                    return device
                break
    return None
