"""Counters that restart from 0 are a new device in `inspector top`, not a 32-bit wrap.

md0 stopped and re-assembled (or a disk removed and rescanned under the same name and
major:minor) starts its /proc/diskstats counters from 0. `top` took the drop for a 32-bit wrap:
~4.29e9 reads in one interval, r/s in the billions. It is a new device (rates from the next
interval); a genuine wrap from just under 2^32 still counts as a wrap. A NIC re-created under
its name does the same (below)."""
import subprocess
import time

from conftest import require_root
from inspector.live import LiveSampler, rates
from inspector.live.diskstats import disk_rates, parse_diskstats
from inspector.roots.host import HostRoot


def line(name, maj, mnr, rd, rsec, wr, wsec, io_ms):
    return f"{maj} {mnr} {name} {rd} 0 {rsec} {rd} {wr} 0 {wsec} {wr} 0 {io_ms} {io_ms}"


def test_reassembled_md_is_new_not_a_wrap():
    prev = parse_diskstats("\n".join([line("sda", 8, 0, 50_000, 400_000, 9_000, 72_000, 900),
                                      line("md0", 9, 0, 991_042, 8_085_456, 317_289, 2_538_224,
                                           0)]))
    cur = parse_diskstats("\n".join([line("sda", 8, 0, 50_100, 400_800, 9_010, 72_080, 950),
                                     line("md0", 9, 0, 40, 320, 0, 0, 0)]))
    rates, changes = disk_rates(prev, cur, 1.0)
    assert [r.name for r in rates] == ["sda"], [(r.name, r.r_s) for r in rates]
    assert changes.appeared == ["md0"]


def test_a_real_32_bit_wrap_is_still_a_wrap():
    prev = parse_diskstats(line("sda", 8, 0, 2**32 - 10, 800, 0, 0, 2**32 - 200))
    cur = parse_diskstats(line("sda", 8, 0, 90, 1600, 0, 0, 300))
    rates, changes = disk_rates(prev, cur, 1.0)
    assert [r.name for r in rates] == ["sda"] and rates[0].r_s == 100.0
    assert not changes.appeared


# A NIC deleted and created again under the same name between two samples (a VPN's tun0
# reconnecting, a bond or veth rebuilt) starts its counters from 0. `inspector top` took the drop
# for a 32-bit counter wrap and showed 2147372076 B/s (2^32 bytes over a 2 s interval) on an idle
# veth. Real veth pairs, re-created while the sampler runs.

def _ip(*args):
    subprocess.run(["ip", "link", *args], check=True, capture_output=True, timeout=10)


def test_a_recreated_nic_is_new_not_a_wrap():
    require_root()
    name = "qaopsr0"
    _ip("add", name, "type", "veth", "peer", "name", "qaopsr1")
    try:
        _ip("set", name, "up")
        _ip("set", "qaopsr1", "up")
        time.sleep(1.5)          # IPv6 DAD and router solicitations: a few hundred bytes
        sampler = LiveSampler(HostRoot("/"), process_io=False)
        first = sampler.sample()
        assert isinstance(first.nics, dict), first.nics
        tx_bytes = first.nics[name].counters[1]
        assert tx_bytes is not None and tx_bytes > 0, first.nics[name]     # tx_bytes moved
        _ip("del", name)
        _ip("add", name, "type", "veth", "peer", "name", "qaopsr1")
        second = sampler.sample()
        r = rates(first, second)
        assert isinstance(r.nics, list) and isinstance(second.nics, dict), (r.nics, second.nics)
        assert name not in {n.name for n in r.nics}, [
            (n.name, n.rx_bytes_s, n.tx_bytes_s) for n in r.nics if n.name.startswith("qaops")]
        assert second.nics[name].ifindex != first.nics[name].ifindex
        time.sleep(0.2)
        third = sampler.sample()                      # from the next interval: its own rates
        third_rates = rates(second, third).nics
        assert isinstance(third_rates, list), third_rates
        again = {n.name: n for n in third_rates}
        tx, rx = again[name].tx_bytes_s, again[name].rx_bytes_s
        assert isinstance(tx, float) and isinstance(rx, float), again[name]
        assert tx < 1e6 and rx < 1e6
    finally:
        subprocess.run(["ip", "link", "del", name], capture_output=True)
