"""CPU split from /proc/stat sequences (steal, iowait, CPUs going offline) and NIC rate and
receive-stall sequences."""
from __future__ import annotations

import pytest

from inspector.live.cpustat import CpuStatParseError, cpu_rates, parse_stat
from inspector.live.netstats import NicCounters, StallDetector, nic_rates
from inspector.model import Level, Unknown


def stat(cpu0, cpu1, ctxt, intr, blocked=0):
    tot = [a + b for a, b in zip(cpu0, cpu1)]

    def fmt(name, v):
        return f"{name} " + " ".join(map(str, v)) + " 0 0"
    return "\n".join([fmt("cpu ", tot), fmt("cpu0", cpu0), fmt("cpu1", cpu1),
                      f"intr {intr} 0 0 5", f"ctxt {ctxt}", "btime 1700000000",
                      "processes 100", "procs_running 2", f"procs_blocked {blocked}"])


#            user nice system idle iowait irq softirq steal
BASE0 = [1000, 0, 500, 8000, 100, 0, 50, 0]
BASE1 = [1000, 0, 500, 8000, 100, 0, 50, 0]


def test_steal_and_iowait_percent_overall_and_per_cpu():
    prev = parse_stat(stat(BASE0, BASE1, 1000, 500))
    # cpu0: 100 jiffies: 20 user, 10 sys, 30 idle, 0 iowait, 40 steal (a starved Xen guest)
    # cpu1: 100 jiffies: 10 user, 5 sys, 35 idle, 50 iowait
    cur0 = [1020, 0, 510, 8030, 100, 0, 50, 40]
    cur1 = [1010, 0, 505, 8035, 150, 0, 50, 0]
    cur = parse_stat(stat(cur0, cur1, 3000, 1500, blocked=3))
    r = cpu_rates(prev, cur, 1.0)
    cpu0, cpu1 = r.per_cpu
    assert cpu0.cpu == "cpu0" and cpu0.steal == pytest.approx(40.0) and cpu0.user == pytest.approx(20.0)
    assert cpu1.iowait == pytest.approx(50.0) and cpu1.steal == 0.0
    assert r.overall.steal == pytest.approx(20.0) and r.overall.iowait == pytest.approx(25.0)
    assert r.overall.idle == pytest.approx(32.5)
    total = sum(getattr(r.overall, k) for k in ("user", "nice", "system", "idle", "iowait",
                                                "irq", "softirq", "steal"))
    assert total == pytest.approx(100.0)
    assert r.ctxt_s == 2000.0 and r.intr_s == 1000.0 and r.procs_blocked == 3


def test_guest_columns_are_not_counted_twice():
    prev = parse_stat("cpu 100 0 0 100 0 0 0 0 0 0")
    cur = parse_stat("cpu 200 0 0 100 0 0 0 0 100 0")   # guest time is already in user
    assert cpu_rates(prev, cur, 1.0).overall.user == pytest.approx(100.0)


def test_iowait_going_backwards_is_clamped_and_offline_cpu_is_skipped():
    prev = parse_stat(stat(BASE0, BASE1, 10, 10))
    cur0 = [1050, 0, 500, 8050, 90, 0, 50, 0]          # iowait stepped back (NO_HZ)
    text = stat(cur0, BASE1, 20, 20).replace("\ncpu1 ", "\nxcpu1 ")   # cpu1 went offline
    cur = parse_stat(text)
    r = cpu_rates(prev, cur, 1.0)
    assert [p.cpu for p in r.per_cpu] == ["cpu0"]
    assert r.per_cpu[0].iowait == 0.0 and r.per_cpu[0].user == pytest.approx(50.0)


def test_old_kernel_without_steal_column_and_bad_input():
    prev = parse_stat("cpu 10 0 10 80\ncpu0 10 0 10 80")
    cur = parse_stat("cpu 20 0 20 160\ncpu0 20 0 20 160")
    r = cpu_rates(prev, cur, 1.0)
    assert r.overall.steal == 0.0 and r.overall.idle == pytest.approx(80.0)
    assert isinstance(r.ctxt_s, Unknown)
    with pytest.raises(CpuStatParseError):
        parse_stat("intr 5\nctxt 7")
    with pytest.raises(CpuStatParseError):
        parse_stat("cpu 1 2 x 4")


def nic(rx, tx, name="eth0", state="up", carrier=True, rx_bytes=None):
    rb = rx * 100 if rx_bytes is None else rx_bytes
    return NicCounters(name, state, carrier, (rb, tx * 100, rx, tx, 0, 1, 2, 0))


def test_nic_rates_per_second_and_wrap():
    prev = NicCounters("eth0", "up", True, (2**32 - 1000, 0, 10, 10, 0, 0, 0, 0))
    cur = NicCounters("eth0", "up", True, (1000, 500, 30, 15, 2, 0, 4, None))
    r = nic_rates(prev, cur, 2.0)
    assert r.rx_bytes_s == 1000.0          # wrapped 32-bit counter
    assert r.tx_bytes_s == 250.0 and r.rx_packets_s == 10.0 and r.rx_errors_s == 1.0
    assert r.rx_dropped_s == 2.0 and isinstance(r.tx_dropped_s, Unknown)


Step = tuple[int, int, int, dict]      # t, rx packets, tx packets, nic() keywords


def run_sequence(det: StallDetector, steps: list[Step]):
    """steps: (t, rx_packets, tx_packets, kwargs) -> findings of the last step."""
    findings = []
    for t, rx, tx, kw in steps:
        findings = det.update({"eth0": nic(rx, tx, **kw)}, mono=t, wall=1_700_000_000 + t)
    return findings


def test_stall_found_with_the_time_it_started():
    det = StallDetector(threshold=10)
    steps: list[Step] = [(0, 100, 100, {}), (1, 150, 160, {}), (2, 200, 220, {})]  # both ways
    steps += [(t, 200, 220 + 10 * t, {}) for t in range(3, 12)]           # rx frozen, tx goes on
    assert run_sequence(det, steps) == []                                  # 9 s silent: not yet
    findings = run_sequence(det, [(12, 200, 400, {})])
    assert len(findings) == 1
    f = findings[0]
    assert f.code == "net.stall" and f.level == Level.CRIT and f.subject == "eth0"
    assert "10 s" in f.message
    import time
    started = time.strftime("%H:%M:%S", time.localtime(1_700_000_000 + 2))
    assert started in f.message and any(started in e for e in f.evidence)
    # traffic comes back: the finding goes away
    assert run_sequence(det, [(13, 201, 410, {})]) == []


@pytest.mark.parametrize("kw, note", [
    ({"carrier": False}, "no carrier: a cable problem, not a stall"),
    ({"state": "down"}, "link down"),
    ({"carrier": Unknown("not readable (invalid argument)")}, "carrier unreadable"),
])
def test_no_stall_without_link(kw, note):
    det = StallDetector(threshold=5)
    steps = [(0, 100, 100, kw), (1, 150, 150, kw)] + [(t, 150, 150 + t, kw) for t in range(2, 20)]
    assert run_sequence(det, steps) == [], note


def test_no_stall_on_idle_link_or_one_that_never_received():
    det = StallDetector(threshold=5)
    idle: list[Step] = [(0, 100, 100, {}), (1, 150, 150, {})]
    idle += [(t, 150, 150, {}) for t in range(2, 20)]
    assert run_sequence(det, idle) == []          # nothing sent either: just idle
    det = StallDetector(threshold=5)
    never: list[Step] = [(t, 0, 10 * t, {}) for t in range(0, 20)]
    assert run_sequence(det, never) == []         # never received while watched


def test_vanished_nic_is_forgotten():
    det = StallDetector(threshold=1)
    det.update({"eth0": nic(1, 1)}, mono=0, wall=0)
    det.update({}, mono=1, wall=1)
    assert det._tracks == {}
