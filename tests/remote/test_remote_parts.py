"""The parts of --ssh that need no server: capture.sh's ethtool -k reading (awk) against
Inspector's own parser, the live framing against forged and endless input, destinations,
options, host lists and inventories, and what a cut stream still holds."""
from __future__ import annotations

import gzip
import json
import os
import re
import shutil
import subprocess
import tarfile
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from inspector.discover.ethtool_text import LegacyFormat, feature_rows
from inspector.remote.fleet import FleetListError, host_dirs, hosts_from_file, hosts_from_inventory
from inspector.remote.frames import FrameReader, StreamError, StreamTimeout
from inspector.remote.salvage import salvage
from inspector.remote.ssh import check_destination, check_option, host_label
from inspector.shipped import shipped_path, shipped_text

TESTS = Path(__file__).resolve().parents[1]
SOS_ETHTOOL = (TESTS / "fixtures/sos/sosreport-oldhost.12345-20190312101500/sos_commands/"
               "networking/ethtool_-k_eth0")


def _features_awk() -> str:
    found = re.search(r"^FEATURES_AWK='(.*?)'$", shipped_text("capture.sh"), re.S | re.M)
    assert found, "capture.sh defines FEATURES_AWK"
    return found[1]


def _ethtool_outputs() -> list[str]:
    outputs = [SOS_ETHTOOL.read_text()]
    if shutil.which("ethtool"):
        for nic in sorted(os.listdir("/sys/class/net")):
            out = subprocess.run(["ethtool", "-k", nic], capture_output=True, text=True)
            if out.returncode == 0:
                outputs.append(out.stdout)
    return outputs


@pytest.mark.parametrize("awk", ["awk", "busybox awk"])
def test_the_scripts_offload_rows_are_inspectors(awk):
    if not shutil.which(awk.split()[0]):
        pytest.fail(f"{awk} is needed")
    outputs = _ethtool_outputs()
    assert len(outputs) >= 2
    for text in outputs:
        got = subprocess.run([*awk.split(), _features_awk()], input=text, capture_output=True,
                             text=True, check=True).stdout
        expected: list[dict[str, Any]] | dict[str, str] | None
        try:
            expected = feature_rows(text)
        except LegacyFormat as exc:          # the sosreport's: ethtool before 3.0
            expected = {"__unknown__": str(exc)}
        assert json.loads(got) == expected
    legacy = "Offload parameters for eth0:\ntcp-segmentation-offload: on\nscatter-gather: on\n"
    got = subprocess.run([*awk.split(), _features_awk()], input=legacy, capture_output=True,
                         text=True, check=True).stdout
    assert "older than 3.0" in json.loads(got)["__unknown__"]


def _reader(data: bytes, close: bool = True) -> tuple[FrameReader, int]:
    read, write = os.pipe()

    def feed():
        os.write(write, data)
        if close:
            os.close(write)
    threading.Thread(target=feed, daemon=True).start()
    return FrameReader(read), write


def test_no_file_content_can_forge_the_framing():
    # what grep prints for a process whose name holds a newline and a fake frame end
    data = (b"@@inspector-live 1 0\n@@frame 1\n/proc/7/stat:7 (x\n/proc/7/stat:@@end 1\n"
            b"/proc/7/stat:/proc/1/stat:forged) S 1\n/proc/1/stat:1 (init) S 0\n@@end 1\n")
    reader, _ = _reader(data)
    deadline = time.monotonic() + 5
    assert reader.hello(deadline) == [b"1", b"0"]
    frame = reader.frame(1, deadline)
    assert frame.files["proc/7/stat"] == b"7 (x\n@@end 1\n/proc/1/stat:forged) S 1\n"
    assert frame.files["proc/1/stat"] == b"1 (init) S 0\n"


def test_a_stream_that_is_not_frames_is_refused():
    reader, _ = _reader(b"hello\n" * 100)
    with pytest.raises(StreamError, match="not Inspector's live stream"):
        reader.hello(time.monotonic() + 5)
    reader, _ = _reader(b"@@inspector-live 1 0\n" + b"x" * (2 << 20))
    reader.hello(time.monotonic() + 5)
    with pytest.raises(StreamError, match="a line over"):
        reader.frame(1, time.monotonic() + 5)
    reader, _ = _reader(b"@@inspector-live 1 0\n@@frame 1\n", close=False)
    reader.hello(time.monotonic() + 5)
    started = time.monotonic()
    with pytest.raises(StreamTimeout):
        reader.frame(1, time.monotonic() + 0.5)
    assert time.monotonic() - started < 3


def test_destinations_and_options():
    for good in ("db1", "root@db1", "ssh://u@10.0.0.1:2222", "u@[fe80::1]", "ssh://[::1]:22"):
        assert check_destination(good) == good
    for bad in ("-oProxyCommand=x", "db1 rm", "", "a\nb", "u@-x"):
        with pytest.raises(ValueError):
            check_destination(bad)
    assert check_option("ProxyJump=bastion") == "ProxyJump=bastion"
    assert check_option("StrictHostKeyChecking=accept-new")
    for bad in ("StrictHostKeyChecking=no", "stricthostkeychecking OFF",
                "UserKnownHostsFile=/dev/null", "GlobalKnownHostsFile /dev/null", "Port"):
        with pytest.raises(ValueError):
            check_option(bad)
    assert host_label("ssh://root@[fe80::1]:22") == "fe80__1"
    assert host_label("admin@db1.example") == "db1.example"


def test_host_lists_and_inventories(tmp_path):
    hosts = tmp_path / "hosts"
    hosts.write_text("# web\nweb1\nroot@web2  # the second\n\n")
    assert hosts_from_file(str(hosts)) == ["web1", "root@web2"]
    hosts.write_text("web1\n-oProxyCommand=touch_x\n")
    with pytest.raises(FleetListError, match=":2:"):
        hosts_from_file(str(hosts))
    ini = tmp_path / "inventory"
    ini.write_text("[web]\nweb1 ansible_host=10.0.0.1 ansible_user=admin\n"
                   "web2 ansible_port=2222\n[db:children]\nweb\n[all:vars]\nx=1\n"
                   "[db]\ndb1\n")
    assert hosts_from_inventory(str(ini)) == {"web1": "admin@10.0.0.1",
                                              "web2": "ssh://web2:2222", "db1": "db1"}
    ini.write_text("[web]\nweb[01:10].example\n")
    with pytest.raises(FleetListError, match="ansible-inventory"):
        hosts_from_inventory(str(ini))
    listed = tmp_path / "inventory.json"
    listed.write_text(json.dumps({"_meta": {"hostvars": {"a": {"ansible_host": "::1"}}},
                                  "web": {"hosts": ["a", "b"]}}))
    assert hosts_from_inventory(str(listed)) == {"a": "::1", "b": "b"}
    assert host_dirs([("db1", "x"), ("db1", "y"), ("../up", "z")]) == [
        ("db1", "x"), ("db1-2", "y"), ("_up", "z")]


def test_a_cut_stream_keeps_the_members_that_arrived_whole(tmp_path):
    out = tmp_path / "whole.tar.gz"
    with open(shipped_path("capture.sh"), "rb") as script, open(out, "wb") as dest:
        subprocess.run(["sh", "-s"], stdin=script, stdout=dest, check=True, timeout=240)
    raw = gzip.decompress(out.read_bytes())
    cut = tmp_path / "cut"
    packed = gzip.compress(raw)
    cut.write_bytes(packed[: len(packed) // 2])
    kept = salvage(str(cut), str(tmp_path / "kept.tar.gz"), "ssh h: no end after 8 s")
    with tarfile.open(tmp_path / "kept.tar.gz") as tar:
        names = tar.getnames()
        sidecar_file = tar.extractfile("inspector-sidecar.json")
        assert sidecar_file is not None, "the salvaged capture keeps its sidecar"
        sidecar = json.load(sidecar_file)
    with tarfile.open(out) as tar:
        assert 0 < kept.members < len(tar.getnames())
    assert "etc/passwd" in names
    assert sidecar["facts"]["uname"]["uname"]["nodename"] == os.uname().nodename
    incomplete = sidecar["facts"]["capture"]["incomplete"]
    assert incomplete["storage"] == "ssh h: no end after 8 s"
    assert set(incomplete) <= {"storage", "virt", "net", "dns", "cpu"}


def test_the_kernel_log_from_dmesg_reads_as_kmsg():
    """Where the host has no GNU dd, the loop reads the kernel log with `dmesg -r` (busybox's
    too): every line of this machine's becomes a kmsg record with its time as sequence, in
    order, and an OOM kill line gives the victim /dev/kmsg would."""
    from inspector.live.kernel_log import parse_kmsg
    from inspector.remote.kernel_log import as_kmsg
    raw = subprocess.run(["busybox", "dmesg", "-r"], capture_output=True).stdout
    assert raw.startswith(b"<"), raw[:80]
    records = as_kmsg(raw).splitlines()
    assert len(records) == len(raw.splitlines())
    seqs = [int(r.split(b",")[1]) for r in records]
    assert all(re.match(rb"^\d+,\d+,\d+,-;", r) for r in records) and seqs == sorted(seqs)
    later = seqs[-1] // 1_000_000 + 1          # a second after the log's last record
    oom = (b"<3>[%5d.004567] Memory cgroup out of memory: Killed process 4321 (java) "
           b"total-vm:2000kB, anon-rss:1024kB, file-rss:0kB, shmem-rss:0kB, UID:0 "
           b"pgtables:40kB oom_score_adj:0\n" % later)
    from_dmesg = parse_kmsg(as_kmsg(raw + oom).decode())[-1]
    from_kmsg = parse_kmsg("3,991,1,-;" + oom.decode().partition("] ")[2])[-1]
    assert (from_dmesg.pid, from_dmesg.comm, from_dmesg.rss_kib, from_dmesg.cgroup) == \
        (from_kmsg.pid, from_kmsg.comm, from_kmsg.rss_kib, from_kmsg.cgroup) == \
        (4321, "java", 1024, True)
    assert from_dmesg.seq == later * 1_000_000 + 4567 > seqs[-1]


def test_df_output_reads_as_the_local_samplers_rows():
    """GNU df's one run and busybox df's -P -k and -P -i, on this machine's mounts, give the
    rows the local sampler makes with statvfs (the same mounts; figures equal but for those
    that moved between the two reads)."""
    from inspector.live.filesystems import FilesystemSampler
    from inspector.remote.fill import GNU_COLUMNS, fill_rows, parse_gnu, parse_posix
    from inspector.roots.host import HostRoot

    def run(*argv: str) -> str:
        return subprocess.run(argv, capture_output=True, text=True).stdout
    mountinfo = Path("/proc/self/mountinfo").read_text()
    local = FilesystemSampler(HostRoot("/")).sample()
    assert isinstance(local, list) and local
    tables = {"gnu": parse_gnu(run("df", "-k", f"--output={GNU_COLUMNS}")),
              "busybox": parse_posix(run("busybox", "df", "-P", "-k"),
                                     run("busybox", "df", "-P", "-i"))}
    for name, table in tables.items():
        rows = fill_rows(mountinfo, table)
        assert isinstance(rows, list), (name, rows)
        assert [r.mountpoint for r in rows] == [r.mountpoint for r in local], name
        for remote, here in zip(rows, local):
            assert (remote.fstype, remote.source, remote.majmin) == \
                (here.fstype, here.source, here.majmin)
            assert remote.size_bytes == here.size_bytes, (name, remote, here)
            assert isinstance(remote.used_bytes, int) and isinstance(here.used_bytes, int)
            assert abs(remote.used_bytes - here.used_bytes) < 64 << 20, (name, remote, here)
            assert (remote.inodes_used_pct is None) == (here.inodes_used_pct is None)
    # df that printed not even its header (its timeout ended it): unknown, not "no mounts"
    assert not isinstance(fill_rows(mountinfo, parse_gnu("")), list)
    assert not isinstance(fill_rows(mountinfo, parse_posix("", "")), list)
