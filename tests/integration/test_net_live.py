"""Live NIC discovery against the real tools on this machine: ethtool -k, ethtool -i, ip, sysctl."""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from conftest import require_root
from inspector.captures.capture import open_root, write_capture
from inspector.discover import net
from inspector.roots.host import HostRoot

# The tests marked serial compare this host's NICs with the tools' reading of the same moment:
# alone, after the parallel part of `make test` (other workers' veths come and go). The two
# in a network namespace of their own see only their NICs


def ethtool_k(ifname: str) -> list[str]:
    out = subprocess.run(["ethtool", "-k", ifname], capture_output=True, text=True, timeout=10,
                         check=True).stdout.splitlines()
    assert out[0] == f"Features for {ifname}:"
    return out[1:]


@pytest.fixture(scope="module")
def live() -> net.NetSection:
    return net.collect(HostRoot("/"))


@pytest.mark.serial
def test_every_nic_offloads_equal_ethtool_k_line_by_line(live):
    names = [n.name for n in live.nics]
    assert "eth0" in names and "lo" in names
    for nic in live.nics:
        ours = [o.ethtool_line() for o in nic.offloads]
        assert ours == ethtool_k(nic.name), nic.name


@pytest.mark.serial
def test_link_attributes_equal_ip_link(live):
    links = {d["ifname"]: d for d in json.loads(subprocess.run(
        ["ip", "-j", "link", "show"], capture_output=True, text=True, timeout=10,
        check=True).stdout)}
    assert set(links) == {n.name for n in live.nics}
    for nic in live.nics:
        link = links[nic.name]
        assert nic.mtu == link["mtu"], nic.name
        assert nic.tx_queue_len == link.get("txqlen", nic.tx_queue_len), nic.name
        assert nic.admin_up == ("UP" in link["flags"]), nic.name
        assert nic.operstate.upper() == link["operstate"], nic.name
        if nic.kind != "loopback":
            assert nic.mac == link["address"], nic.name


@pytest.mark.serial
def test_eth0_driver_and_bus_equal_ethtool_i(live):
    eth0 = next(n for n in live.nics if n.name == "eth0")
    info = dict(line.split(": ", 1) for line in subprocess.run(
        ["ethtool", "-i", "eth0"], capture_output=True, text=True, timeout=10,
        check=True).stdout.splitlines() if ": " in line)
    assert eth0.driver == info["driver"]
    assert eth0.kind == "virtio-net" and eth0.bus == "virtio"   # Firecracker/KVM guest
    assert eth0.carrier is True and eth0.admin_up is True


@pytest.mark.serial
def test_sysctls_equal_sysctl_n(live):
    for sc in live.sysctls:
        value = subprocess.run(["sysctl", "-n", sc.name], capture_output=True, text=True,
                               timeout=10, check=True).stdout
        assert sc.value == " ".join(value.split()), sc.name


@pytest.mark.serial
def test_capture_carries_offloads(tmp_path):
    recording = HostRoot("/", record=True)
    before = net.collect(recording)
    write_capture(recording, str(tmp_path / "cap.tar.gz"))
    replay = net.collect(open_root(str(tmp_path / "cap.tar.gz")))
    assert isinstance(before.nics, list) and isinstance(replay.nics, list), (before, replay)
    assert [(n.name, n.kind, n.driver, n.mtu) for n in replay.nics] == \
        [(n.name, n.kind, n.driver, n.mtu) for n in before.nics]
    assert [n.offloads for n in replay.nics] == [n.offloads for n in before.nics]


NETNS_SCRIPT = textwrap.dedent("""
    import json, subprocess, sys
    sys.path.insert(0, {repo!r})
    from inspector.discover import net
    from inspector.roots.host import HostRoot
    sh = lambda *a: subprocess.run(a, check=True, capture_output=True)
    sh("ip", "link", "add", "va", "type", "veth", "peer", "name", "vb")
    sh("ip", "link", "set", "va", "up")
    # sg off drags TSO down while it stays wanted: ethtool prints "[requested on]"
    sh("ethtool", "-K", "va", "sg", "off", "gro", "off", "rx-gro-list", "on")
    sh("ip", "link", "add", "d0", "type", "ifb")
    out = {{}}
    for nic in net.collect(HostRoot("/")).nics:
        out[nic.name] = {{"ours": [o.ethtool_line() for o in nic.offloads],
                         "ethtool": subprocess.run(["ethtool", "-k", nic.name], check=True,
                             capture_output=True, text=True).stdout.splitlines()[1:],
                         "kind": nic.kind, "carrier": str(nic.carrier)}}
    print(json.dumps(out))
""")


def test_changed_features_in_a_private_netns():
    """veth and ifb in a throwaway network namespace: [requested on], off, fixed states match."""
    require_root()
    import inspector
    repo = str(__import__("pathlib").Path(inspector.__file__).resolve().parent.parent)
    # a private mount namespace too: /sys must be remounted to show the new netns' NICs
    proc = subprocess.run(["unshare", "-nm", "sh", "-c", 'mount -t sysfs sysfs /sys && '
                           'exec "$0" -c "$1"', sys.executable, NETNS_SCRIPT.format(repo=repo)],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert set(result) == {"lo", "va", "vb", "d0"}
    for name, item in result.items():
        assert item["ours"] == item["ethtool"], name
    va = result["va"]["ours"]
    assert "\ttx-tcp-segmentation: off [requested on]" in va
    assert "generic-receive-offload: off" in va and "rx-gro-list: on" in va
    # va is up but its peer is down: no carrier; vb is down: carrier unreadable
    assert result["va"]["carrier"] == "False"
    assert result["vb"]["carrier"].startswith("unknown")
    assert result["va"]["kind"] == "virtual" and result["lo"]["kind"] == "loopback"


@pytest.mark.serial
def test_feature_bits_equal_pyroute2(live):
    """Our three ioctls read the same bits as pyroute2's IoctlEthtool, row for row."""
    from pyroute2.ethtool.ioctl import IoctlEthtool  # type: ignore[import-untyped]  # no hints

    from inspector.discover.net_offloads import _ioctl_feature_rows
    for nic in live.nics:
        eth = IoctlEthtool(nic.name)
        try:
            bits = eth.get_features()
            theirs = [{"name": n, "available": bits.is_available(n),
                       "requested": bits.is_requested(n), "active": bits.is_active(n),
                       "never_changed": bits.is_never_changed(n)}
                      for n in bits.keys() if n]  # noqa: SIM118  (pyroute2's iter gives tuples)
        finally:
            eth.close()
        assert _ioctl_feature_rows(nic.name) == theirs, nic.name


# No-carrier findings on real veth pairs and bridges (a private network namespace) say what to
# check for that kind of interface, and a capture of them says the same.

SCRIPT = textwrap.dedent("""
    import json, subprocess, sys, tempfile, os
    sys.path.insert(0, {repo!r})
    from inspector.captures.capture import open_root, write_capture
    from inspector.report.collect import build_report
    from inspector.roots.host import HostRoot
    sh = lambda *a: subprocess.run(a, check=True, capture_output=True)
    sh("ip", "link", "add", "va", "type", "veth", "peer", "name", "vb")   # vb stays down
    sh("ip", "link", "set", "va", "up")
    sh("ip", "link", "add", "brc", "type", "bridge")                      # port vc, peer down
    sh("ip", "link", "add", "vc", "type", "veth", "peer", "name", "vd")
    sh("ip", "link", "set", "vc", "master", "brc")
    sh("ip", "link", "set", "vc", "up")
    sh("ip", "link", "set", "brc", "up")
    sh("ip", "link", "add", "brz", "type", "bridge")                      # like an idle docker0
    sh("ip", "link", "add", "ve", "type", "veth", "peer", "name", "vf")
    sh("ip", "link", "set", "ve", "master", "brz")
    sh("ip", "link", "set", "brz", "up")
    sh("ip", "link", "set", "ve", "nomaster")
    def summary(root):
        report = build_report(root, ["net"])
        nics = {{n.name: str(n.speed_mbps) for n in report.sections["net"].nics}}
        return {{"findings": [[f.level.label, f.subject, f.message, f.evidence, f.advice]
                              for f in report.findings], "speed": nics}}
    live = HostRoot("/", record=True)
    out = {{"live": summary(live)}}
    path = os.path.join(tempfile.mkdtemp(), "cap.tar.gz")
    write_capture(live, path)
    out["capture"] = summary(open_root(path))
    print(json.dumps(out))
""")


def test_veth_and_bridge_without_carrier():
    require_root()
    import inspector
    repo = str(__import__("pathlib").Path(inspector.__file__).resolve().parent.parent)
    proc = subprocess.run(["unshare", "-nm", "sh", "-c", 'mount -t sysfs sysfs /sys && '
                           'exec "$0" -c "$1"', sys.executable, SCRIPT.format(repo=repo)],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    live = result["live"]
    found = {f[1]: f for f in live["findings"]}
    level, _, message, evidence, advice = found["va"]
    assert level == "warn" and message == "interface is up but the device under it is down"
    assert "cable" not in advice and "ip -d link show va" in advice
    level, _, message, evidence, advice = found["brc"]
    assert level == "warn" and "none of its ports has a link" in message
    assert "ports: vc" in evidence and "bridge link" in advice and "bonding" not in advice
    assert found["brz"][0] == "ok"          # no port at all: nothing to fix
    assert "vb" not in found                # administratively down: not a finding
    # a veth says 10000 Mb/s with its peer down; without carrier there is no speed
    assert live["speed"]["va"].startswith("unknown")
    assert result["capture"] == live
