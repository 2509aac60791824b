"""A real receive stall on a real link: a veth pair in a private network namespace (its own
sysfs mounted, so the host's NICs are untouched). Raw Ethernet frames (no IP at all) flow both
ways, then the peer stops sending while st0 keeps transmitting: carrier stays on, operstate up,
rx_packets freezes. The sampler, reading /sys/class/net like on any host, must raise net.stall
for st0 only, with a start time at the moment the peer went quiet."""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import time

from conftest import require_root

CHILD = textwrap.dedent(r"""
    import json, socket, subprocess, time
    def sh(*argv):
        subprocess.run(argv, check=True)
    sh("mount", "-t", "sysfs", "sysfs", "/sys")          # this namespace's NICs only
    for path in ("all", "default"):                     # no IPv6 chatter to feed rx counters
        with open(f"/proc/sys/net/ipv6/conf/{path}/disable_ipv6", "w") as f:
            f.write("1")
    sh("ip", "link", "add", "st0", "type", "veth", "peer", "name", "st1")
    sh("ip", "link", "set", "st0", "up")
    sh("ip", "link", "set", "st1", "up")
    from inspector.roots.host import HostRoot
    from inspector.live import LiveSampler
    socks = {}
    for name in ("st0", "st1"):
        s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
        s.bind((name, 0))
        socks[name] = s
    frame = b"\xff" * 6 + b"\x02\x00\x00\x00\x00\x01" + b"\x88\xb5" + b"inspector-test".ljust(46)
    sampler = LiveSampler(HostRoot("/"), stall_seconds=1.0, process_io=False)
    deadline = time.monotonic() + 10
    while open("/sys/class/net/st0/operstate").read().strip() != "up":
        assert time.monotonic() < deadline, "veth never came up"
        time.sleep(0.02)
    out = {"during_traffic": [], "during_stall": []}
    t0 = time.monotonic()
    while time.monotonic() - t0 < 0.6:                  # both ways
        socks["st0"].send(frame); socks["st1"].send(frame)
        out["during_traffic"] += [f.code for f in sampler.sample().findings]
        time.sleep(0.05)
    out["quiet_at"] = time.time()
    last = []
    while time.monotonic() - t0 < 2.2:                  # the peer stops; st0 keeps sending
        socks["st0"].send(frame)
        last = sampler.sample().findings
        out["during_stall"] += [f.code for f in last]
        time.sleep(0.05)
    out["final"] = [{"code": f.code, "subject": f.subject, "message": f.message,
                     "evidence": f.evidence} for f in last]
    snap = sampler.sample()
    out["st0"] = {"operstate": snap.nics["st0"].operstate, "carrier": snap.nics["st0"].carrier}
    print(json.dumps(out))
""")


def test_real_receive_stall_on_veth_is_reported():
    require_root()
    proc = subprocess.run(["unshare", "--net", "--mount", "--propagation", "private",
                           sys.executable, "-c", CHILD],
                          capture_output=True, text=True, timeout=30)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["st0"] == {"operstate": "up", "carrier": True}
    assert out["during_traffic"] == []
    assert "net.stall" in out["during_stall"]
    final = out["final"]
    assert [f["subject"] for f in final] == ["st0"]          # st1 still receives: no stall
    # the stall started at the last sample that saw st0 receive: within a second before quiet
    candidates = {time.strftime("%H:%M:%S", time.localtime(out["quiet_at"] - k / 10))
                  for k in range(11)}
    assert any(c in final[0]["message"] for c in candidates), (final[0], candidates)
