"""Benchmark: the live findings against glances' alerts on the same faults, made for real.

Per fault, Inspector's live rules (the sampler's child, 1 s steps) and `glances --stdout-json
alert -t 1` watch side by side while the fault runs: CPU saturation (busy loops), a dd held
in D state by a blkio throttle under a loop device (the device saturated), a memory cgroup
whose reader thrashes (memory pressure), a tmpfs filling at 16 MiB/s. Printed per fault and
tool: whether it flagged the fault, how many seconds after it started, and whether it named
the culprit (the process, the device, the mount point). Goal (issue 25): every fault flagged
with its culprit within 10 s; glances' alerts are the floor.

Run as root on a host with cgroup v1 blkio and memory (the project's VM):
`.venv/bin/python tests/bench/bench_live_findings.py [--seconds 15]`.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from inspector.health.live.session import LiveSession
from inspector.live.worker import SamplerProcess
from inspector.roots.host import HostRoot


@dataclass
class Fault:
    name: str
    codes: set[str]                 # our finding codes that flag it
    glances_types: set[str]         # glances alert types that flag it
    culprits: list[str] = field(default_factory=list)   # texts naming the culprit


@dataclass
class Seen:
    after: float | None = None      # seconds after the fault started: flagged
    named_after: float | None = None   # ... and the culprit named
    what: str = ""

    def note(self, t: float, named: bool, what: str) -> bool:
        """Record an observation; True once the culprit is named (watching can stop)."""
        if self.after is None:
            self.after, self.what = t, what
        if named and self.named_after is None:
            self.named_after, self.what = t, what
        return self.named_after is not None


# ------------------------------------------------------------------------------ faults
def _run(*argv: str) -> str:
    return subprocess.run(argv, check=True, capture_output=True, text=True, timeout=20).stdout


@contextlib.contextmanager
def busy_loops() -> Iterator[Fault]:
    loops = [subprocess.Popen([sys.executable, "-c", "while True: pass"])
             for _ in range(2 * (os.cpu_count() or 1) + 2)]
    try:
        yield Fault("CPU saturation (busy loops)", {"live.cpu.saturated"},
                    {"CPU_TOTAL", "CPU_USER", "LOAD"}, [f"pid {p.pid}" for p in loops])
    finally:
        for p in loops:
            p.kill()
            p.wait()


@contextlib.contextmanager
def throttled_dd(tmp: Path) -> Iterator[Fault]:
    image = tmp / "base.img"
    with open(image, "wb") as fh:
        fh.truncate(32 << 20)
    base = _run("losetup", "-f", "--show", str(image)).strip()
    top = _run("losetup", "-f", "--show", "--direct-io=on", base).strip()
    group = Path("/sys/fs/cgroup/blkio") / f"inspector-bench-{uuid.uuid4().hex[:8]}"
    group.mkdir()
    majmin = _run("lsblk", "-dno", "MAJ:MIN", base).strip()
    (group / "blkio.throttle.write_bps_device").write_text(f"{majmin} 4096\n")
    dd = subprocess.Popen(["sh", "-c", f"echo $$ > {group}/cgroup.procs && exec dd "
                           f"if=/dev/zero of={top} bs=64k count=1 oflag=direct"],
                          stderr=subprocess.DEVNULL)
    try:
        yield Fault(f"dd held in D by a blkio throttle ({os.path.basename(top)})",
                    {"live.tasks.dstate", "live.disk.saturated", "live.cpu.iowait"},
                    {"CPU_IOWAIT", "DISKIO", "LOAD"},
                    [f"pid {dd.pid}", os.path.basename(top)])
    finally:
        (group / "blkio.throttle.write_bps_device").write_text(f"{majmin} 0\n")
        dd.wait(20)
        for _ in range(50):
            with contextlib.suppress(OSError):
                group.rmdir()
                break
            time.sleep(0.1)
        for dev in (top, base):
            subprocess.run(["losetup", "-d", dev], capture_output=True, timeout=20)


THRASH = ("import mmap, os, sys\nfd = os.open(sys.argv[1], os.O_RDONLY)\n"
          "os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)\n"
          "m = mmap.mmap(fd, 0, prot=mmap.PROT_READ)\nwhile True:\n"
          "    for i in range(0, len(m), 4096):\n        m[i]\n")


@contextlib.contextmanager
def thrashing_reader(tmp: Path) -> Iterator[Fault]:
    data = Path("/var/tmp") / f"inspector-bench-{uuid.uuid4().hex[:8]}"
    with open(data, "wb") as fh:
        fh.write(os.urandom(1 << 20) * 128)
        fh.flush()
        os.fsync(fh.fileno())
    group = Path("/sys/fs/cgroup/memory") / f"inspector-bench-{uuid.uuid4().hex[:8]}"
    group.mkdir()
    (group / "memory.limit_in_bytes").write_text("48M\n")
    reader = subprocess.Popen(["sh", "-c", f"echo $$ > {group}/cgroup.procs && exec "
                               f"{sys.executable} -c '{THRASH}' {data}"])
    try:
        yield Fault("memory pressure (a reader thrashing in a 48M cgroup)",
                    {"live.mem.pressure", "live.mem.majfault"}, {"MEM", "MEMSWAP"},
                    [f"pid {reader.pid}"])
    finally:
        reader.kill()
        reader.wait()
        for _ in range(50):
            with contextlib.suppress(OSError):
                group.rmdir()
                break
            time.sleep(0.1)
        data.unlink(missing_ok=True)


@contextlib.contextmanager
def filling_tmpfs(tmp: Path) -> Iterator[Fault]:
    mnt = tmp / "fill"
    mnt.mkdir()
    _run("mount", "-t", "tmpfs", "-o", "size=256m", "tmpfs", str(mnt))
    writer = subprocess.Popen(["sh", "-c", f"while :; do head -c 8388608 /dev/zero > "
                               f"{mnt}/f.$(date +%s%N); sleep 0.5; done"])
    try:
        yield Fault(f"tmpfs filling at 16 MiB/s ({mnt})",
                    {"live.fs.time_to_full", "live.fs.fill"}, {"FS"}, [str(mnt)])
    finally:
        writer.kill()
        writer.wait()
        subprocess.run(["umount", "-l", str(mnt)], capture_output=True, timeout=20)


# ------------------------------------------------------------------------------ watchers
def watch_ours(fault_box: list, started: list, seconds: float, seen: Seen,
               ready: threading.Event) -> None:
    with SamplerProcess(HostRoot("/")) as sampler:
        session = LiveSession(sampler.sample)
        session.step()
        ready.set()
        while not started:
            time.sleep(0.05)
        t0 = started[0]
        next_at = time.monotonic()
        while time.monotonic() - t0 < seconds and seen.named_after is None:
            next_at += 1.0
            time.sleep(max(0.0, next_at - time.monotonic()))
            fault = fault_box[0]
            for lf in session.step().findings:
                if lf.active and lf.finding.code in fault.codes:
                    text = f"{lf.finding.subject} {lf.finding.message}"
                    if seen.note(time.monotonic() - t0, any(c in text for c in fault.culprits),
                                 f"{lf.finding.code}: {lf.finding.message[:110]}"):
                        break


def watch_glances(fault_box: list, started: list, seconds: float, seen: Seen,
                  ready: threading.Event) -> None:
    proc = subprocess.Popen(["glances", "--stdout-json", "alert", "-t", "1", "--stop-after",
                             str(int(seconds) + 5)], stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True, bufsize=1)
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            if not line.startswith("alert: "):
                continue
            if not started:
                ready.set()
                continue
            alerts = json.loads(line[len("alert: "):])
            t0 = started[0]
            fault = fault_box[0]
            # an alert still open (end -1) of a kind that flags this fault, as its panel shows
            for a in alerts:
                if a[1] != -1 or a[3] not in fault.glances_types \
                        or a[2] not in ("WARNING", "CRITICAL"):
                    continue
                text = json.dumps(a)
                named = any(c.replace("pid ", '"pid": ') in text or c in text
                            for c in fault.culprits)
                if seen.note(time.monotonic() - t0, named, f"{a[3]} {a[2]}"):
                    return
            if time.monotonic() - t0 > seconds:
                return
    finally:
        proc.kill()
        proc.wait()


def compare(make: Callable[[], contextlib.AbstractContextManager], seconds: float) -> None:
    ours, theirs = Seen(), Seen()
    fault_box: list = [Fault("", set(), set())]
    started: list = []
    ready = [threading.Event(), threading.Event()]
    threads = [threading.Thread(target=watch_ours, args=(fault_box, started, seconds, ours,
                                                          ready[0])),
               threading.Thread(target=watch_glances, args=(fault_box, started, seconds,
                                                            theirs, ready[1]))]
    for t in threads:
        t.start()
    for r in ready:
        r.wait(30)
    time.sleep(1.5)       # both have a baseline
    with make() as fault:
        fault_box[0] = fault
        started.append(time.monotonic())
        for t in threads:
            t.join(seconds + 10)
    print(f"\n{fault.name}")
    for tool, seen in (("inspector", ours), ("glances", theirs)):
        if seen.after is None:
            print(f"  {tool:<10} not flagged within {seconds:g} s")
            continue
        named = (f"culprit named after {seen.named_after:4.1f} s"
                 if seen.named_after is not None else "culprit NOT named")
        print(f"  {tool:<10} flagged after {seen.after:4.1f} s, {named}: {seen.what}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=15.0)
    args = parser.parse_args()
    if os.geteuid() != 0 or not shutil.which("glances"):
        print("needs root and glances (apt-get install glances)", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="bench-live-") as tmp:
        base = Path(tmp)
        compare(busy_loops, args.seconds)
        compare(lambda: throttled_dd(base), args.seconds)
        compare(lambda: thrashing_reader(base), args.seconds)
        compare(lambda: filling_tmpfs(base), args.seconds)
    return 0


if __name__ == "__main__":
    sys.exit(main())
