"""`inspector fleet --ssh/--hosts/--inventory -o DIR` and the TUI over ssh (`inspector --ssh
HOST` in tmux), against the real sshd."""
from __future__ import annotations

import json
import os
import time
from pathlib import Path

from ssh_fixtures import host_sshd  # noqa: F401  (fixture)

from conftest import run_bin
from tmux_session import tmux  # noqa: F401  (fixture)


def test_fleet_captures_the_hosts_then_shows_them(host_sshd, tmp_path):  # noqa: F811
    hosts = tmp_path / "hosts"
    hosts.write_text(f"# the same host twice, and one that refuses\n{host_sshd.destination}\n")
    inventory = tmp_path / "inventory"
    inventory.write_text(f"[web]\nweb1 ansible_host=127.0.0.1 ansible_port={host_sshd.port} "
                         f"ansible_user=root\n[db]\ndb1 ansible_host=127.0.0.1 ansible_port=1\n")
    out = tmp_path / "fleet"
    started = time.monotonic()
    result = run_bin("fleet", "--hosts", str(hosts), "--inventory", str(inventory),
                     *host_sshd.cli_options(), "--jobs", "2", "--deadline", "2m",
                     "-o", str(out), "--json", timeout=400)
    assert result.returncode == 2, result.stderr      # db1 could not be captured
    assert "db1: not captured" in result.stderr and "Connection refused" in result.stderr
    assert "captured 2 of 3 hosts" in result.stderr
    doc = json.loads(result.stdout)
    assert sorted(row["host"] for row in doc["hosts"]) == ["127.0.0.1", "web1"]
    assert all(not row.get("error") for row in doc["hosts"])
    for host in ("127.0.0.1", "web1"):
        capture = out / host / f"inspector-{host}.tar.gz"
        assert capture.stat().st_mode & 0o777 == 0o600
    assert not (out / "db1").exists()
    assert time.monotonic() - started < 400
    # the directory reads again as any fleet directory
    again = run_bin("fleet", str(out), "--json", timeout=120)
    assert again.returncode == 0
    assert len(json.loads(again.stdout)["hosts"]) == 2


def _loops(server) -> list[int]:
    """The live loops (`sh -s`) running under this sshd."""
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
            stat = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
        except OSError:
            continue
        if cmd[:2] == [b"sh", b"-s"]:
            parent = int(stat[1])
            while parent > 1:
                if parent == server.proc.pid:
                    found.append(int(pid))
                    break
                try:
                    parent = int(Path(f"/proc/{parent}/stat").read_text()
                                 .rpartition(")")[2].split()[1])
                except OSError:
                    break
    return found


def test_the_tui_over_ssh_shows_the_hosts_live_figures(host_sshd, tmux):  # noqa: F811
    tmux.start(f"--ssh {host_sshd.destination} {' '.join(host_sshd.cli_options())}",
               width=160, height=50)
    port = str(host_sshd.port)
    screen = tmux.wait(lambda s: f"live over ssh {host_sshd.destination}" in s
                       and "vda" in s and "%" in s, "the TUI with the host's disks", timeout=180)
    assert port in screen and "capture: no live data" not in screen
    # the live panels move: the disk table is refreshed from the host's frames
    assert _loops(host_sshd), "no live loop on the host while the TUI runs"
    tmux.keys("q")
    deadline = time.monotonic() + 20
    while tmux.has_session() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not tmux.has_session(), tmux.screen()
    # the loop on the host ended with the session: its stdin closed
    deadline = time.monotonic() + 10
    while _loops(host_sshd) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _loops(host_sshd) == []
