"""--ssh against a real sshd on loopback: the report read over ssh with only a POSIX shell on
the host equals the local report of the same host, field for field; a root holding nothing but
busybox (or dash, or bash) and the host's /proc and /sys gives the same storage, CPU and NICs.
The real `inspector` binary, the system ssh, throwaway keys."""
from __future__ import annotations

import json
import os
import subprocess
import tarfile
import time
from pathlib import Path

import pytest
from ssh_fixtures import bash_sshd, chroot_sshd, host_sshd  # noqa: F401  (fixtures)

from conftest import inspector_bin, run_bin
from inspector.shipped import shipped_path

# Figures that move between two reads of a live host a second apart (counters, load, the
# clock) and what names the source: every other field must be equal.
MOVING = ("/host/collected_at", "/host/source", "/sections/cpu/cpu_times/",
          "/sections/cpu/load_average", "/sections/cpu/volatile/", "/statistics/")


def differences(local, remote, path=""):
    out = []
    if isinstance(local, dict) and isinstance(remote, dict):
        for key in sorted(set(local) | set(remote)):
            where = f"{path}/{key}"
            if key not in local or key not in remote:
                out.append((where, local.get(key, "<absent>"), remote.get(key, "<absent>")))
            else:
                out += differences(local[key], remote[key], where)
    elif isinstance(local, list) and isinstance(remote, list) and len(local) == len(remote):
        for i, (a, b) in enumerate(zip(local, remote)):
            out += differences(a, b, f"{path}[{i}]")
    elif local != remote:
        out.append((path, local, remote))
    return out


def unexplained(diffs):
    return [d for d in diffs if not any(m in d[0] for m in MOVING)]


def bracketed(before, remote, after, path=""):
    """Differences of `remote` from the local reports read just before and just after it
    that are in neither: other tests on this machine make and remove loop devices meanwhile,
    and a field that changed then is whatever it was when the remote read ran."""
    seen_after = {d[0] for d in differences(after, remote, path)}
    return [d for d in unexplained(differences(before, remote, path)) if d[0] in seen_after]


@pytest.fixture
def partitioned_loop(tmp_path):
    """A loop device with one partition: discovery lists the partition (loop0p1) beside the
    disk, so a capture must carry its udev properties too (capture.sh once read only
    /sys/block, and the report over ssh lost every device's udev on a host that had one)."""
    image = tmp_path / "parted.img"
    with open(image, "wb") as f:
        f.truncate(8 << 20)
        f.seek(446)     # an MBR: one Linux partition, sectors 2048..10239
        f.write(bytes([0, 0, 0, 0, 0x83, 0, 0, 0]) + (2048).to_bytes(4, "little")
                + (8192).to_bytes(4, "little"))
        f.seek(510)
        f.write(b"\x55\xaa")
    device = subprocess.run(["losetup", "-f", "--show", str(image)], capture_output=True,
                            text=True, check=True, timeout=30).stdout.strip()
    name = os.path.basename(device)
    try:
        # partx adds it through BLKPG: this kernel's own scan (losetup -P) finds no MBR table
        subprocess.run(["partx", "-a", device], capture_output=True, timeout=30)
        assert os.path.exists(f"/sys/class/block/{name}p1")
        yield name
    finally:
        subprocess.run(["losetup", "-d", device], capture_output=True, timeout=30)


def report_json(*args: str) -> dict:
    result = run_bin(*args, "report", "--json", timeout=240)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def _agrees(local, remote, after) -> bool:
    return bracketed(local, remote, after) == [] and \
        remote["sections"]["storage"]["devices"] == local["sections"]["storage"]["devices"]


def test_report_over_ssh_equals_the_local_report(host_sshd, bash_sshd,  # noqa: F811
                                                 partitioned_loop):
    # the script read by the host's /bin/sh (dash) and by bash between the same two local
    # reads (a local report is a start of the binary and a discovery: one pair for both, not
    # one each). Another test's loop device can come and go within a remote read alone, which
    # no local read brackets: a real difference stays over three tries, that one does not;
    # a shell that agreed is not read again
    servers = {"sh": host_sshd, "bash": bash_sshd}
    reads: dict[str, tuple[dict, dict, dict]] = {}
    for _ in range(3):
        todo = [shell for shell in servers if shell not in reads or not _agrees(*reads[shell])]
        if not todo:
            break
        local = report_json()
        remotes = {shell: report_json("--ssh", servers[shell].destination,
                                      *servers[shell].cli_options()) for shell in todo}
        after = report_json()
        reads.update({shell: (local, remotes[shell], after) for shell in todo})
    for shell, (local, remote, after) in reads.items():
        sshd = servers[shell]
        diffs = differences(local, remote)
        assert bracketed(local, remote, after) == [], shell
        assert remote["host"]["source"] == f"ssh {sshd.destination}"
        # the comparison saw the sections, not two empty documents
        assert set(remote["sections"]) >= {"storage", "net", "cpu", "virt", "dns"}
        assert remote["sections"]["storage"]["devices"] == local["sections"]["storage"]["devices"]
        assert remote["sections"]["storage"]["devices"][f"{partitioned_loop}p1"]["udev"][
            "DEVTYPE"] == "partition"
        assert len(diffs) < 60, shell


@pytest.fixture(scope="module")
def local_reports() -> list[dict]:
    """The local reports the shells' roots read: the one read after a root's capture is the
    one before the next root's (a local report is a start of the binary and a discovery). A
    difference is excused only where the capture equals the read before or the one after: a
    real one equals neither, however old the read before."""
    return []


def _root_differences(local, remote, after) -> list:
    """What a root with only a shell got wrong: storage and CPU field for field but what
    needs more than /proc and /sys (udev's database under /run, CPUID through /dev/cpu:
    unknown in such a root, and says so; the kernel shows a chrooted process only the mounts
    under its root), and every NIC with its driver, address, MTU, state and queues but its
    offloads (below)."""
    wrong = []
    for section in ("storage", "cpu"):
        diffs = bracketed(local["sections"][section], remote["sections"][section],
                          after["sections"][section], f"/sections/{section}")
        wrong += [d for d in diffs if not any(w in d[0] for w in ("/udev", "cpuid", "/mounts"))]
    diffs = bracketed(local["sections"]["net"]["nics"], remote["sections"]["net"]["nics"],
                      after["sections"]["net"]["nics"], "/nics")
    return wrong + [d for d in diffs if "/offloads" not in d[0]]


def test_a_root_with_only_a_shell_gives_the_hosts_storage_cpu_and_nics(chroot_sshd, tmp_path,  # noqa: F811
                                                                      local_reports):
    assert not chroot_sshd.chroot.has_python()
    out = tmp_path / "host.tar.gz"
    local = local_reports[-1] if local_reports else report_json()
    # another test's loop device can exist only while the capture runs, which no local read
    # brackets: a real difference stays over three tries, that one does not
    for _ in range(3):
        result = run_bin("capture", "--ssh", chroot_sshd.destination,
                         *chroot_sshd.cli_options(), "-o", str(out), timeout=240)
        assert result.returncode == 0, result.stderr
        after = report_json()
        local_reports.append(after)
        assert out.stat().st_mode & 0o777 == 0o600
        remote = report_json("--root", str(out))
        if _root_differences(local, remote, after) == []:
            break
        local = after
        out.unlink()
    assert _root_differences(local, remote, after) == []
    assert [n["mac"] for n in remote["sections"]["net"]["nics"]] == \
        [n["mac"] for n in local["sections"]["net"]["nics"]]
    # no ethtool in the root: the offloads are unknown with the reason, not empty
    offloads = remote["sections"]["net"]["nics"][0]["offloads"]
    assert "ethtool not installed" in json.dumps(offloads)


def test_the_shipped_script_alone_makes_the_capture(host_sshd, tmp_path,  # noqa: F811
                                                   partitioned_loop):
    """`ssh HOST sh -s < capture.sh > host.tar.gz`, no Inspector involved, then --root."""
    path = run_bin("files", "capture.sh").stdout.strip()
    assert path == shipped_path("capture.sh") and Path(path).is_file()
    out = tmp_path / "host.tar.gz"
    argv = ["ssh", "-T", *[w for o in host_sshd.options() for w in ("-o", o)],
            host_sshd.destination, "sh", "-s"]
    with open(path, "rb") as script, open(out, "wb") as dest:
        subprocess.run(argv, stdin=script, stdout=dest, check=True, timeout=240)
    with tarfile.open(out) as tar:       # plain tar.gz: GNU tar and busybox tar read it too
        names = tar.getnames()
    assert "inspector-sidecar.json" in names and "proc/diskstats" in names
    before = report_json()
    from_file = report_json("--root", str(out))
    after = report_json()
    assert bracketed(before, from_file, after) == []
    assert from_file["sections"]["storage"]["devices"][f"{partitioned_loop}p1"]["udev"] == \
        {"DEVTYPE": "partition"}


def test_a_host_whose_key_is_not_known_is_not_read(host_sshd, tmp_path):  # noqa: F811
    options = [o for o in host_sshd.options() if not o.startswith("UserKnownHostsFile")]
    empty = tmp_path / "known_hosts"
    empty.write_text("")
    argv = ["--ssh", host_sshd.destination]
    for o in [*options, f"UserKnownHostsFile={empty}", "StrictHostKeyChecking=yes"]:
        argv += ["--ssh-option", o]
    result = run_bin(*argv, "report", timeout=60)
    assert result.returncode == 2
    assert "Host key verification failed" in result.stderr
    for option in ("StrictHostKeyChecking=no", "UserKnownHostsFile=/dev/null",
                   "stricthostkeychecking off"):
        result = run_bin("--ssh", host_sshd.destination, "--ssh-option", option, "report")
        assert result.returncode == 2
        assert "never turns host key checking off" in result.stderr


def test_check_over_ssh_is_a_nagios_answer(host_sshd):  # noqa: F811
    result = run_bin("--ssh", host_sshd.destination, *host_sshd.cli_options(), "check",
                     "--timeout", "60s", timeout=90)
    assert result.returncode in (0, 1, 2), result.stdout + result.stderr
    assert result.stdout.startswith("INSPECTOR ")
    result = run_bin("--ssh", "ssh://root@127.0.0.1:1", "check", "--timeout", "20s", timeout=60)
    assert result.returncode == 3
    assert result.stdout.startswith("INSPECTOR UNKNOWN - ssh ssh://root@127.0.0.1:1")


def test_probes_and_commands_that_read_files_here_are_refused(host_sshd):  # noqa: F811
    for argv in (["snapshot", "--probe", "dns"], ["diff", "a", "b"], ["probe", "dns"]):
        started = time.monotonic()
        result = run_bin("--ssh", host_sshd.destination, *argv)
        assert result.returncode == 2, argv
        assert "--ssh" in result.stderr or "this machine" in result.stderr
        assert time.monotonic() - started < 30
    assert not os.path.exists("a")
    assert inspector_bin()
