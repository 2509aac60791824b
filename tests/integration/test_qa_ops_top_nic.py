"""QA (live view): a NIC deleted and created again under the same name between two samples
(a VPN's tun0 reconnecting, a bond or veth rebuilt) starts its counters from 0. `inspector top`
took the drop for a 32-bit counter wrap and showed 2147372076 B/s (2^32 bytes over a 2 s
interval) on an idle veth. Real veth pairs, re-created while the sampler runs."""
import subprocess
import time

from conftest import require_root
from inspector.host import HostRoot
from inspector.live import LiveSampler, rates


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
        assert first.nics[name].counters[1] > 0, first.nics[name]     # tx_bytes moved
        _ip("del", name)
        _ip("add", name, "type", "veth", "peer", "name", "qaopsr1")
        second = sampler.sample()
        r = rates(first, second)
        assert name not in {n.name for n in r.nics}, [
            (n.name, n.rx_bytes_s, n.tx_bytes_s) for n in r.nics if n.name.startswith("qaops")]
        assert second.nics[name].ifindex != first.nics[name].ifindex
        time.sleep(0.2)
        third = sampler.sample()                      # from the next interval: its own rates
        again = {n.name: n for n in rates(second, third).nics}
        assert again[name].tx_bytes_s < 1e6 and again[name].rx_bytes_s < 1e6
    finally:
        subprocess.run(["ip", "link", "del", name], capture_output=True)
