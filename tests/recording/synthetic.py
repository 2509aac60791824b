"""A synthetic host whose counters advance: Snapshots as LiveSampler makes them, for any number
of disks and NICs, fast enough to write a day of intervals in seconds (tests and
tests/bench/bench_record.py). Busy by default: every disk and NIC moves every interval, the
worst case for the database's size."""
from __future__ import annotations

import random

from inspector.live.cpustat import CpuCounters, LoadAvg
from inspector.live.diskstats import DiskCounters, DiskInfo
from inspector.live.netstats import NicCounters
from inspector.live.procs import DStateProc, ProcIo, ProcStat
from inspector.live.sampler import Counters
from inspector.model import Finding, Level, Unknown

START = 1_741_910_400.0      # 2025-03-14 00:00:00 UTC


class SyntheticHost:
    def __init__(self, disks: int | list[str] = 20, nics: int | list[str] = 8, seed: int = 1,
                 busy: float = 1.0, processes: int = 100):
        self.rng = random.Random(seed)
        self.busy = busy                  # share of devices that move in an interval
        disk_names = disks if isinstance(disks, list) else \
            [f"sd{_letters(i)}" for i in range(disks)]
        nic_names = nics if isinstance(nics, list) else [f"eth{i}" for i in range(nics)]
        self.disks = {name: [0] * 17 for name in disk_names}
        self.topology = {name: DiskInfo(name, "disk") for name in self.disks}
        self.nics = {name: [0] * 8 for name in nic_names}
        self.operstate = {name: "up" for name in self.nics}
        self.cpu = [0] * 8
        self.ctxt = self.intr = 0
        self.proc_io = {pid: [0, 0] for pid in range(1000, 1000 + processes)}
        self.dstate: list[DStateProc] | Unknown = []
        self.findings: list[Finding] = []
        self.unknown: dict[str, Unknown] = {}

    def add_md(self, name: str, members: list[str]) -> None:
        self.disks[name] = [0] * 17
        self.topology[name] = DiskInfo(name, "md", members=list(members))

    def snapshot(self, t: float) -> Counters:
        """The counters `t` seconds after START, advanced since the previous call."""
        rng = self.rng
        for c in self.disks.values():
            if rng.random() >= self.busy:
                c[8] = 0
                continue
            r, w = rng.randint(1000, 3000), rng.randint(1500, 4000)
            inc = [r, rng.randint(0, 300), r * rng.choice((8, 16, 256)), r * rng.randint(1, 4),
                   w, rng.randint(0, 500), w * rng.choice((8, 16, 64)), w * rng.randint(1, 6),
                   0, rng.randint(3000, 9000), rng.randint(5000, 30000), rng.randint(0, 20),
                   0, rng.randint(0, 4000), rng.randint(0, 50), rng.randint(10, 100),
                   rng.randint(10, 200)]
            for k in range(17):
                c[k] += inc[k]
            c[8] = rng.randint(0, 4)
        for c in self.nics.values():
            if rng.random() >= self.busy:
                continue
            packets = rng.randint(50_000, 120_000)
            inc = [packets * rng.randint(60, 1500), packets * rng.randint(60, 1500), packets,
                   packets, 0, 0, rng.choice((0, 0, 0, 3)), 0]
            for k in range(8):
                c[k] += inc[k]
        for k, v in enumerate((800, 20, 300, 600, 50, 10, 30, 40)):
            self.cpu[k] += v + rng.randint(0, v)
        self.ctxt += rng.randint(10_000, 50_000)
        self.intr += rng.randint(5_000, 30_000)
        for io in self.proc_io.values():
            if rng.random() < 0.1:
                io[0] += rng.randint(0, 10 ** 7)
                io[1] += rng.randint(0, 10 ** 7)
        disks = {name: DiskCounters(name, 8, i, *c) for i, (name, c) in enumerate(self.disks.items())}
        nics = {name: NicCounters(name, self.operstate[name], self.operstate[name] == "up",
                                  tuple(c), i + 2) for i, (name, c) in enumerate(self.nics.items())}
        snap = Counters(
            mono=t, wall=START + t, source="synthetic", uptime=1000.0 + t,
            disks=disks, topology=dict(self.topology), nics=nics,
            cpu=CpuCounters(tuple(self.cpu), {"cpu0": tuple(self.cpu)}, self.ctxt, self.intr,
                            rng.randint(1, 5), rng.randint(0, 2)),
            load=LoadAvg(round(rng.uniform(0, 8), 2), 1.25, 0.5, 3, 412),
            dstate=self.dstate, findings=list(self.findings),
            procs={pid: ProcStat(pid, f"worker-{pid}", "S", pid) for pid in self.proc_io},
            proc_io={pid: ProcIo(*io) for pid, io in self.proc_io.items()})
        for part, value in self.unknown.items():
            setattr(snap, part, value)
        return snap


def _letters(i: int) -> str:
    """a, b, ... z, aa, ab: sd names as the kernel gives them."""
    out = ""
    i += 1
    while i:
        i, r = divmod(i - 1, 26)
        out = chr(97 + r) + out
    return out


def stall_finding(nic: str) -> Finding:
    return Finding(level=Level.CRIT, subject=nic, code="net.stall",
                   message=f"{nic} has received nothing for 12 s while still transmitting")
