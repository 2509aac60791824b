"""NIC discovery and net findings on fixture roots (Xen netfront, virtio, igb, dom0 netback)."""
from __future__ import annotations

import os
import shutil

from conftest import fixture_root, run_cli
from inspector.discover import net
from inspector.discover.net_offloads import Offload, find_offload
from inspector.model import Level, Unknown
from inspector.report.collect import build_report
from inspector.roots.host import HostRoot


def collect(name: str) -> net.NetSection:
    return net.collect(HostRoot(str(fixture_root(name))))


def nic(section: net.NetSection, name: str) -> net.Nic:
    assert isinstance(section.nics, list), section.nics
    return next(n for n in section.nics if n.name == name)


def offload(offloads: list[Offload] | Unknown, name: str) -> Offload:
    found = find_offload(offloads, name)
    assert found is not None, f"{name} not among the offloads: {offloads}"
    return found


def findings(name: str, code_prefix: str = "net."):
    report = build_report(HostRoot(str(fixture_root(name))), ["net"])
    return [f for f in report.findings if f.code.startswith(code_prefix)]


def test_xen_pv_guest_netfront_with_tso_on_warns():
    section = collect("xen-pv-guest")
    eth0 = nic(section, "eth0")
    assert (eth0.kind, eth0.driver, eth0.bus, eth0.device) == ("xen-netfront", "vif", "xen",
                                                                "vif-0")
    assert offload(eth0.offloads, "tcp-segmentation-offload").on
    assert offload(eth0.offloads, "tx-tcp-segmentation").group == "tcp-segmentation-offload"
    assert offload(eth0.offloads, "generic-segmentation-offload").on
    assert isinstance(eth0.speed_mbps, Unknown)          # netfront reports no speed
    assert isinstance(section.nics, list) and [n.name for n in section.nics] == ["lo", "eth0"]
    assert nic(section, "lo").kind == "loopback"
    found = findings("xen-pv-guest")
    assert [(f.code, f.subject, f.level) for f in found] == [("net.xen_tso", "eth0", Level.WARN)]
    assert "TSO and GSO" in found[0].message
    assert "tcp-segmentation-offload: on" in found[0].evidence
    assert "ethtool -K eth0 tso off gso off" in found[0].advice


def test_xenserver_hvm_with_tso_off_is_quiet():
    eth0 = nic(collect("xenserver-hvm"), "eth0")
    assert eth0.kind == "xen-netfront"
    tso = offload(eth0.offloads, "tx-tcp-segmentation")
    assert tso.on is False and tso.fixed is False and tso.requested is None
    assert findings("xenserver-hvm") == []


def test_dom0_netback_is_not_netfront():
    vif = nic(collect("net-xen-dom0"), "vif3.0")
    assert vif.kind == "xen-netback" and vif.bus == "xen-backend"
    assert offload(vif.offloads, "tcp-segmentation-offload").on
    assert findings("net-xen-dom0") == []


def test_kvm_virtio_guest():
    eth0 = nic(collect("kvm-virtio-guest"), "eth0")
    assert (eth0.kind, eth0.driver, eth0.bus, eth0.transport) == ("virtio-net", "virtio_net",
                                                                   "virtio", "pci")
    assert eth0.device == "virtio0"
    assert isinstance(eth0.speed_mbps, Unknown) and isinstance(eth0.duplex, Unknown)
    assert isinstance(eth0.offloads, list), eth0.offloads
    assert [o.ethtool_line() for o in eth0.offloads][:3] == [
        "rx-checksumming: on [fixed]", "tx-checksumming: on", "\ttx-checksum-ipv4: off [fixed]"]


def test_physical_nics_counters_carrier_and_findings():
    section = collect("net-errors")
    eno1, eno2, eno3 = (nic(section, n) for n in ("eno1", "eno2", "eno3"))
    assert (eno1.kind, eno1.driver, eno1.bus, eno1.speed_mbps, eno1.duplex) == (
        "physical", "igb", "pci", 1000, "full")
    assert (eno1.rx_queues, eno1.tx_queues, eno1.carrier_changes) == (4, 4, 57)
    assert eno1.statistics.rx_errors == 12 and eno1.statistics.rx_dropped == 25000
    assert (eno2.admin_up, eno2.carrier, eno2.operstate) == (True, False, "down")
    assert eno3.admin_up is False and isinstance(eno3.carrier, Unknown)
    assert nic(section, "br0").kind == "bridge" and nic(section, "br0").devtype == "bridge"
    veth_tso = offload(nic(section, "veth1a2b").offloads, "tx-tcp-segmentation")
    assert veth_tso.on is True and veth_tso.requested is None
    got = sorted((f.code, f.subject) for f in findings("net-errors"))
    assert got == [("net.carrier_down", "eno2"), ("net.drops", "eno1"), ("net.errors", "eno1")]


def test_sysctls_against_tuning():
    by_name = {s.name: s for s in collect("net-errors").sysctls}
    assert by_name["net.core.netdev_max_backlog"].meets_tuning is True      # 250000 >= 30000
    assert by_name["net.ipv4.tcp_timestamps"].meets_tuning is False
    assert by_name["net.ipv4.tcp_congestion_control"].meets_tuning is True  # htcp
    assert by_name["net.ipv4.tcp_rmem"].value == "4096 131072 6291456"      # tabs normalised
    assert by_name["net.ipv4.tcp_rmem"].meets_tuning is False
    bare = {s.name: s for s in collect("nvme-bare-metal").sysctls}
    assert all(s.meets_tuning is True for s in bare.values() if s.name != "net.core.rmem_default"
               and s.name != "net.core.wmem_default")
    assert len(bare) == 11


def test_garbage_and_missing_files_never_raise(tmp_path):
    root = tmp_path / "r"
    shutil.copytree(fixture_root("net-errors"), root, symlinks=True)
    base = root / "sys/devices/pci0000:00/0000:02:00.0/net/eno1"
    (base / "mtu").write_text("lots\n")
    (base / "statistics/rx_errors").unlink()
    os.remove(root / "proc/sys/net/core/somaxconn")
    (root / "inspector-sidecar.json").write_text('{"facts": {"ethtool_features": '
                                                 '{"eno1": "garbage", "eno2": [{"x": 1}]}}}')
    section = net.collect(HostRoot(str(root)))
    eno1 = nic(section, "eno1")
    assert isinstance(eno1.mtu, Unknown) and "unparsable" in eno1.mtu.reason
    assert isinstance(eno1.statistics.rx_errors, Unknown)
    assert isinstance(eno1.offloads, Unknown) and "malformed" in eno1.offloads.reason
    assert isinstance(nic(section, "eno2").offloads, Unknown)
    assert isinstance(nic(section, "eno3").offloads, Unknown)     # not recorded
    somax = {s.name: s for s in section.sysctls}["net.core.somaxconn"]
    assert isinstance(somax.value, Unknown)
    empty = net.collect(HostRoot(str(tmp_path / "nothing")))
    assert isinstance(empty.nics, Unknown)


def test_report_renders_fixture_roots():
    for name in ("xen-pv-guest", "net-errors", "kvm-virtio-guest"):
        result = run_cli("report", "--section", "net", "--root", str(fixture_root(name)))
        assert result.status == 0, result.err
        assert "cannot render" not in result.out
    out = run_cli("report", "--section", "net", "--root", str(fixture_root("xen-pv-guest"))).out
    assert "xen-netfront" in out and "tso on" in out
    doc = run_cli("report", "--json", "--section", "net", "--root",
                  str(fixture_root("xen-pv-guest"))).json()
    eth0 = next(n for n in doc["sections"]["net"]["nics"] if n["name"] == "eth0")
    assert len(eth0["offloads"]) > 50          # the JSON carries every feature line
    assert {"name": "tcp-segmentation-offload", "on": True, "fixed": None, "requested": None,
            "group": None, "kernel_name": None} in eth0["offloads"]
