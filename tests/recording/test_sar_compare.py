"""The recorder beside sysstat's own collector, over the same seconds, under a real load.

fio does O_DIRECT random reads and writes on a loop device; paced UDP senders pass traffic both
ways over a veth pair between two private network namespaces. `inspector record --samples`
and sadc (what `sar` reads) run in the first namespace at the same 1 s interval, sadc started
on one of the recorder's sample instants. Around every sample instant both loads are stopped
(SIGSTOP) for half a second, so the two collectors, a few milliseconds apart, read the same
counters: each of the 4 intervals must agree within 2% (`sar -d`, `sar -n DEV`, `sar -n
EDEV`; sar prints two decimals, so 0.011 absolute too). The CPU split cannot be frozen (the
rest of the machine keeps running): `sar -u` within 2 percentage points per interval.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time

import pytest

from conftest import inspector_bin
from recording_helpers import (
    committed,
    loop_device,
    start_recorder,
    stop,
    udp_sender,
    veth_namespaces,
    wait_for_intervals,
)

# alone, after the parallel part of `make test`: compares the host's live figures with sar's of the same seconds
pytestmark = pytest.mark.serial

SADC = "/usr/lib/sysstat/sadc"
# every interval is compared field by field on its own, the load gated the same way around
# each: 4 prove what 6 did (there were 6), 2 s less of load and waiting
INTERVALS = 4
QUIET = 0.25          # seconds without load either side of each sample instant

# sadf -j field -> our figure, per kind
DISK = {"tps": lambda d: d["r_s"] + d["w_s"] + d["d_s"],
        "rkB": lambda d: d["rkB_s"], "wkB": lambda d: d["wkB_s"],
        "areq-sz": lambda d: _areq(d), "aqu-sz": lambda d: d["aqu_sz"],
        "await": lambda d: _await(d), "util-percent": lambda d: d["util"]}
NIC = {"rxpck": "rx_packets_s", "txpck": "tx_packets_s", "rxkB": "rx_bytes_s",
       "txkB": "tx_bytes_s"}
EDEV = {"rxerr": "rx_errors_s", "txerr": "tx_errors_s", "rxdrop": "rx_dropped_s",
        "txdrop": "tx_dropped_s"}
CPU = {"usr": "user", "nice": "nice", "sys": "system", "iowait": "iowait", "irq": "irq",
       "soft": "softirq", "steal": "steal", "idle": "idle"}


def _await(d: dict) -> float:
    ops = d["r_s"] + d["w_s"]
    return (d["r_s"] * d["r_await"] + d["w_s"] * d["w_await"]) / ops if ops else 0.0


def _areq(d: dict) -> float:
    ops = d["r_s"] + d["w_s"]
    return (d["rkB_s"] + d["wkB_s"]) / ops if ops else 0.0


class Gate(threading.Thread):
    """SIGSTOP the load QUIET seconds before each sample instant, SIGCONT QUIET after."""

    def __init__(self, procs: list[subprocess.Popen], first: float, every: float, count: int):
        super().__init__(daemon=True)
        self.procs, self.first, self.every, self.count = procs, first, every, count
        self.done = threading.Event()

    def _signal(self, sig: int) -> None:
        for p in self.procs:
            if p.poll() is None:
                os.kill(p.pid, sig)

    def run(self) -> None:
        for k in range(self.count):
            instant = self.first + k * self.every
            for at, sig in ((instant - QUIET, signal.SIGSTOP), (instant + QUIET, signal.SIGCONT)):
                delay = at - time.time()
                if delay > 0 and self.done.wait(delay):
                    self._signal(signal.SIGCONT)
                    return
                self._signal(sig)
        self.done.set()


def _sadf(path: str) -> list[dict]:
    out = subprocess.run(["sadf", "-j", path, "--", "-d", "-n", "DEV,EDEV", "-u", "ALL"],
                         capture_output=True, text=True, check=True,
                         env={**os.environ, "LC_ALL": "C"}).stdout
    return json.loads(out)["sysstat"]["hosts"][0]["statistics"]


def _close(ours: float, theirs: float, what: str, abs_tol: float = 0.011) -> None:
    assert ours == pytest.approx(theirs, rel=0.02, abs=abs_tol), (what, ours, theirs)


def test_recorded_intervals_match_sar_under_real_load(tmp_path):
    db = str(tmp_path / "h.sqlite")
    sa = str(tmp_path / "sa")
    with loop_device(tmp_path) as dev, veth_namespaces() as (ns_a, ns_b):
        loop = os.path.basename(dev)
        load = [subprocess.Popen(
            ["fio", "--name=load", f"--filename={dev}", "--rw=randrw", "--rwmixread=60",
             "--bs=4k", "--direct=1", "--ioengine=psync", "--thread", "--rate_iops=600,400",
             "--time_based", "--runtime=120", "--output-format=terse"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL),
            udp_sender(ns_b, "10.77.0.1", rate=3000, size=700),     # received on va
            udp_sender(ns_a, "10.77.0.2", rate=1500, size=1200)]    # sent from va
        recorder = start_recorder(db, netns=ns_a, every="1s")
        gate = sadc = None
        try:
            # its schedule from its first interval (as regular as the next: 1.000 +- 0.02 s
            # apart here, loaded or not); the next instant far enough away for the gate to
            # stop the load QUIET before it
            rows = wait_for_intervals(db, 1, recorder)
            first = rows[-1][1] + 1.0
            while first < time.time() + QUIET + 0.25:
                first += 1.0
            gate = Gate(load, first, 1.0, INTERVALS + 2)
            gate.start()
            time.sleep(max(0.0, first - time.time()))
            sadc = subprocess.Popen(["ip", "netns", "exec", ns_a, SADC, "-S", "DISK", "1",
                                     str(INTERVALS + 1), sa], stderr=subprocess.PIPE)
            assert sadc.stderr is not None
            assert sadc.wait(timeout=INTERVALS + 10) == 0, sadc.stderr.read()
            # the recorder's interval ending at sadc's last sample instant (it was waited
            # for as two more than needed: 2 s)
            _wait_for_interval_ending(db, first + INTERVALS - QUIET, recorder)
        finally:
            if gate is not None:
                gate.done.set()
                gate.join(timeout=5)
            for p in load:
                p.kill()
                p.wait()
            status, err = stop(recorder)
        assert status == 0, err
        theirs = _sadf(sa)
        replay = subprocess.run([inspector_bin(), "top", "--db", db, "--json", "--from",
                                 f"@{first - 0.5}"], capture_output=True, text=True, timeout=30)
        assert replay.returncode == 0, replay.stderr
        ours = [json.loads(line) for line in replay.stdout.splitlines()]

    assert len(theirs) == INTERVALS
    compared = 0
    for j, stat in enumerate(theirs):
        end = first + j + 1            # sadc sampled on the recorder's schedule from `first`
        assert abs(_utc(stat) - end) <= 1.0, (stat["timestamp"], end)
        match = min(ours, key=lambda r: abs(r["wall"] - end))
        assert abs(match["wall"] - end) < QUIET, (end, [r["wall"] for r in ours])
        assert match["interval"] == pytest.approx(1.0, abs=0.1)
        disk = next(d for d in stat["disk"] if d["disk-device"] == loop)
        mine = next(d for d in match["disks"] if d["name"] == loop)
        assert disk["tps"] > 100, disk            # the load was there, not 0 against 0
        for field, figure in DISK.items():
            _close(figure(mine), disk[field], f"{loop} {field}")
        nic = next(n for n in stat["network"]["net-dev"] if n["iface"] == "va")
        edev = next(n for n in stat["network"]["net-edev"] if n["iface"] == "va")
        my_nic = next(n for n in match["nics"] if n["name"] == "va")
        assert nic["rxpck"] > 500 and nic["txpck"] > 500, nic
        for field, attr in NIC.items():
            scale = 1024.0 if field.endswith("kB") else 1.0
            _close(my_nic[attr] / scale, nic[field], f"va {field}")
        for field, attr in EDEV.items():
            _close(my_nic[attr], edev[field], f"va {field}")
        cpu = next(c for c in stat["cpu-load"] if c["cpu"] == "all")
        for field, attr in CPU.items():
            _close(match["cpu"]["overall"][attr], cpu[field], f"cpu {field}", abs_tol=2.0)
        compared += 1
    assert compared == INTERVALS


def _wait_for_interval_ending(db: str, after: float, recorder: subprocess.Popen,
                              timeout: float = 30) -> None:
    """Until the recorder has committed an interval ending after `after` (unix seconds)."""
    deadline = time.monotonic() + timeout
    while not any(ts > after for _, ts in committed(db)):
        assert recorder.poll() is None, f"recorder exited {recorder.returncode}"
        assert time.monotonic() < deadline, (after, committed(db)[-3:])
        time.sleep(0.05)


def _utc(stat: dict) -> float:
    """End of a sadf interval as unix seconds (sadf prints UTC date and time, to the second)."""
    import calendar
    ts = stat["timestamp"]
    return calendar.timegm(time.strptime(f"{ts['date']} {ts['time']}", "%Y-%m-%d %H:%M:%S"))
