"""Live resolver: the config equals this machine's /etc/resolv.conf, and the predicted failover
delay equals what real glibc getaddrinfo does in a private network and mount namespace."""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import inspector
from conftest import require_root
from inspector.discover import resolver
from inspector.discover.resolver_conf import ResolverConfig, parse_resolv_conf
from inspector.discover.resolver_delay import all_servers_down, first_server_loss
from inspector.roots.host import HostRoot

REPO = str(Path(inspector.__file__).resolve().parent.parent)


def test_config_equals_etc_resolv_conf():
    text = Path("/etc/resolv.conf").read_text()
    section = resolver.collect(HostRoot("/"))
    listed = [line.split()[1] for line in text.splitlines()
              if line.startswith("nameserver") and len(line.split()) > 1]
    assert section.used_nameservers == listed[:3]
    assert section.ignored_nameservers == listed[3:]
    words = [w for line in text.splitlines() if line.startswith("options")
             for w in line.split()[1:]]
    cfg = section.config
    assert isinstance(cfg, ResolverConfig), cfg
    if not any(w.startswith("timeout:") for w in words):
        assert cfg.timeout == 5
    if not any(w.startswith("attempts:") for w in words):
        assert cfg.attempts == 2
    assert cfg.rotate == ("rotate" in words)
    search = [line.split()[1:] for line in text.splitlines() if line.startswith("search")]
    if search:
        assert cfg.search == search[-1]
    assert section.real_path == "/" + HostRoot("/").resolve("etc/resolv.conf")


# Runs inside `unshare -nm`: loopback up, responders on 127.0.0.x:53, resolv.conf bind-mounted.
GLIBC_SCRIPT = textwrap.dedent("""
    import json, os, socket, subprocess, sys, tempfile, threading, time
    import dns.message, dns.rrset
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)

    def silent(addr):          # bound, never answers: glibc sees no ICMP refusal, only silence
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind((addr, 53)); return s

    def answering(addr):
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind((addr, 53))
        def serve():
            while True:
                data, peer = s.recvfrom(4096)
                query = dns.message.from_wire(data)
                reply = dns.message.make_response(query)
                q = query.question[0]
                if q.rdtype == 1:
                    reply.answer.append(dns.rrset.from_text(q.name, 60, "IN", "A", "192.0.2.7"))
                s.sendto(reply.to_wire(), peer)
        threading.Thread(target=serve, daemon=True).start()
        return s

    keep = []
    results = {}
    for case, servers, options in json.loads(sys.argv[1]):
        conf = tempfile.NamedTemporaryFile("w", suffix=".conf", delete=False)
        for i, kind in enumerate(servers):
            addr = f"127.0.{len(results) + 1}.{i + 1}"
            keep.append(silent(addr) if kind == "silent" else answering(addr))
            conf.write(f"nameserver {addr}\\n")
        conf.write(f"options {options}\\n"); conf.close()
        subprocess.run(["mount", "--bind", conf.name, "/etc/resolv.conf"], check=True)
        start = time.monotonic()
        try:
            answer = sorted({a[4][0] for a in socket.getaddrinfo("probe.test", 80)})
        except socket.gaierror as exc:
            answer = str(exc)
        results[case] = {"seconds": time.monotonic() - start, "answer": answer}
        subprocess.run(["umount", "/etc/resolv.conf"], check=True)
        os.unlink(conf.name)
    print(json.dumps(results))
""")

CASES = [("first_dead", ["silent", "up"], "timeout:1 attempts:2"),
         ("all_dead", ["silent", "silent", "silent"], "timeout:1 attempts:1")]


def test_predicted_failover_equals_real_glibc(tmp_path):
    require_root()
    proc = subprocess.run(["unshare", "-nm", sys.executable, "-c", GLIBC_SCRIPT,
                           json.dumps(CASES)], capture_output=True, text=True, timeout=60,
                          cwd=REPO)
    assert proc.returncode == 0, proc.stderr
    measured = json.loads(proc.stdout)
    for case, servers, options in CASES:
        text = "".join(f"nameserver 127.0.0.{i + 1}\n" for i in range(len(servers)))
        cfg = parse_resolv_conf(text + f"options {options}\n")
        got = measured[case]
        if case == "first_dead":
            assert got["answer"] == ["192.0.2.7"]
            predicted = first_server_loss(cfg).seconds
        else:
            assert isinstance(got["answer"], str)          # the lookup fails
            predicted = all_servers_down(cfg, name="probe.test").seconds
        # 1 + 1 + 1 for three silent servers: 2/3 and 4/3 s round to the 1 s minimum
        assert got["seconds"] == pytest.approx(predicted, abs=0.3), (case, got, predicted)
