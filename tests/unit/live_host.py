"""A fixture host for the live sampler: a temp tree in the layout of / whose counter files a
test writes and advances between samples, read by the real LiveSampler through a HostRoot,
on a virtual clock (one second per step unless told) so no test sleeps."""
from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from inspector.config import LiveThresholds
from inspector.health.live.session import LiveSession, Step
from inspector.live.findings import LiveFinding
from inspector.live.sampler import LiveSampler
from inspector.roots.host import HostRoot

T0 = 1_780_000_000.0


class LiveHost:
    def __init__(self, path: Path, cpus: int = 2):
        self.path = path
        self.cpus = cpus
        self.jiffies = [[0] * 8 for _ in range(cpus)]     # user nice system idle iowait irq softirq steal
        self.running, self.blocked = 1, 0
        self.disks: dict[str, list[int]] = {}             # name -> 11 classic counters
        self.vmstat = {"pgmajfault": 0, "pswpin": 0, "pswpout": 0, "oom_kill": 0,
                       "nr_dirty": 0, "nr_writeback": 0}
        self.softnet = [0, 0, 0]
        self.kmsg: list[str] = []
        self.clock = 0.0
        for d in ("proc", "sys/block", "sys/class/net", "proc/net", "dev", "etc"):
            (path / d).mkdir(parents=True, exist_ok=True)
        self.write("etc/passwd", "root:x:0:0::/root:/bin/sh\nmysql:x:27:27::/:/bin/false\n")
        self.write("proc/uptime", "1000.0 1000.0\n")
        self.write("proc/loadavg", "0.5 0.5 0.5 1/100 1000\n")
        self.write("proc/meminfo", "MemTotal: 8000000 kB\nMemAvailable: 6000000 kB\n")
        self.flush()

    def write(self, rel: str, text: str) -> None:
        target = self.path / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(target.name + ".tmp")
        tmp.write_text(text)
        os.replace(tmp, target)

    # ------------------------------------------------------------------ devices
    def add_disk(self, name: str, members: Sequence[str] = (), major: int = 8, minor: int = 0):
        self.disks[name] = [0] * 11
        self.majmin = getattr(self, "majmin", {})
        self.majmin[name] = (major, minor or len(self.disks) * 16)
        (self.path / f"sys/block/{name}/slaves").mkdir(parents=True, exist_ok=True)
        for m in members:
            (self.path / f"sys/block/{name}/slaves/{m}").mkdir(exist_ok=True)

    def disk_io(self, name: str, writes: int, ms_each: float, busy_ms: float = 1000.0):
        c = self.disks[name]
        c[4] += writes
        c[6] += writes * 8
        c[7] += int(writes * ms_each)
        c[9] += int(busy_ms)
        c[10] += int(writes * ms_each)

    def add_nic(self, name: str):
        base = f"sys/class/net/{name}"
        self.write(f"{base}/operstate", "up\n")
        self.write(f"{base}/carrier", "1\n")
        self.write(f"{base}/ifindex", "2\n")
        for c in ("rx_bytes", "tx_bytes", "rx_packets", "tx_packets", "rx_errors",
                  "tx_errors", "rx_dropped", "tx_dropped"):
            self.write(f"{base}/statistics/{c}", "0\n")

    def nic_add(self, name: str, counter: str, n: int):
        p = self.path / f"sys/class/net/{name}/statistics/{counter}"
        self.write(str(p.relative_to(self.path)), f"{int(p.read_text()) + n}\n")

    def carrier(self, name: str, up: bool):
        self.write(f"sys/class/net/{name}/carrier", "1\n" if up else "0\n")
        self.write(f"sys/class/net/{name}/operstate", "up\n" if up else "down\n")

    # ------------------------------------------------------------------ writing out
    def cpu_spend(self, **shares: float):
        """One second of every CPU split as given in percent (idle takes the rest)."""
        names = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")
        for cpu in self.jiffies:
            used = 0
            for i, name in enumerate(names):
                if name in shares:
                    cpu[i] += int(shares[name])
                    used += int(shares[name])
            cpu[3] += 100 - used

    def flush(self):
        total = [sum(c[i] for c in self.jiffies) for i in range(8)]
        lines = ["cpu  " + " ".join(map(str, total + [0, 0]))]
        lines += [f"cpu{i} " + " ".join(map(str, c + [0, 0])) for i, c in enumerate(self.jiffies)]
        lines += ["ctxt 100", f"procs_running {self.running}", f"procs_blocked {self.blocked}"]
        self.write("proc/stat", "\n".join(lines) + "\n")
        majmin = getattr(self, "majmin", {})
        self.write("proc/diskstats", "".join(
            f"{majmin[n][0]:4} {majmin[n][1]:7} {n} " + " ".join(map(str, c)) + "\n"
            for n, c in self.disks.items()))
        self.write("proc/vmstat", "".join(f"{k} {v}\n" for k, v in self.vmstat.items()))
        self.write("proc/net/softnet_stat", " ".join(f"{v:08x}" for v in self.softnet)
                   + " 00000000" * 8 + "\n")
        self.write("dev/kmsg", "\n".join(self.kmsg) + ("\n" if self.kmsg else ""))

    # ------------------------------------------------------------------ sampling
    def session(self, thresholds: LiveThresholds | None = None, **kw) -> LiveSession:
        sampler = LiveSampler(HostRoot(str(self.path)),
                              clock=lambda: (self.clock, T0 + self.clock))

        def read():
            counters = sampler.sample()
            counters.wall = T0 + self.clock     # a tree without a capture's time: ours
            return counters
        return LiveSession(read, thresholds, **kw)

    def step(self, session: LiveSession, seconds: float = 1.0) -> Step:
        self.flush()
        self.clock += seconds
        return session.step()


def codes(step: Step, active: bool = True) -> dict[tuple[str, str], LiveFinding]:
    return {(lf.finding.code, lf.finding.subject): lf for lf in step.findings
            if lf.active == active}
