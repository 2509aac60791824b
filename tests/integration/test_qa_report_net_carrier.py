"""QA: no-carrier findings on real veth pairs and bridges (a private network namespace) say
what to check for that kind of interface, and a capture of them says the same."""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap

from conftest import require_root

SCRIPT = textwrap.dedent("""
    import json, subprocess, sys, tempfile, os
    sys.path.insert(0, {repo!r})
    from inspector.capture import open_root, write_capture
    from inspector.collect import build_report
    from inspector.host import HostRoot
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
