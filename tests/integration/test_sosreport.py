"""`--root` on real sosreports of this machine, compared with the live report of the same host.

Once per module: a loop disk with two partitions (one ext4 and mounted, one of an odd number
of sectors) and a read-only loop device are attached, Debian's `sos report` (package
sosreport) runs with the storage, network and hardware plugins, and the live report is taken
while they are still there. Then the unpacked directory and the .tar.xz sos wrote are read
with `--root` and field by field compared with the live report. Beside it: a sosreport in the
sos 3.x layout (tests/fixtures/sos/), and a sosreport whose files link outside it.
"""
from __future__ import annotations

import copy
import glob
import json
import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

from conftest import FIXTURES, require_root, run_bin

# alone, after the parallel part of `make test`: sos report reads the whole host (and takes both cores)
pytestmark = pytest.mark.serial

PLUGINS = "block,md,devicemapper,networking,hardware,kernel,processor,memory,filesys,system"
SOS_TIMEOUT = 180      # seconds; about 5 s here, the plugin timeout bounds a stuck command
OLD_LAYOUT = FIXTURES / "sos" / "sosreport-oldhost.12345-20190312101500"
P1_SECTORS, P2_SECTORS = 16384, 4095   # 8 MiB; and 2 KiB short of a whole KiB count


def sh(*argv: str, timeout: float = 30) -> str:
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout,
                          check=True).stdout.strip()


@dataclass
class SosRun:
    archive: Path       # the .tar.xz sos wrote
    directory: Path     # the same, unpacked by tar
    live: dict          # `inspector report --json` of this host while sos ran
    started: float
    ended: float
    disk: str           # our partitioned loop disk: loopN (partitions loopNp1, loopNp2)
    readonly: str       # our read-only loop device
    mountpoint: str


@pytest.fixture(scope="module")
def sos_run(tmp_path_factory) -> Iterator[SosRun]:
    require_root()
    if shutil.which("sos") is None:
        pytest.fail("sos is not installed: apt-get install sosreport")
    base = tmp_path_factory.mktemp("sos")
    image, ro_image, mnt = base / "disk.img", base / "ro.img", base / "mnt"
    for path, size in ((image, 24 << 20), (ro_image, 4 << 20)):
        with open(path, "wb") as f:
            f.truncate(size)
    mnt.mkdir()
    devices: list[str] = []
    try:
        devices.append(sh("losetup", "-f", "--show", str(image)))
        disk = devices[0]
        # no partition-table parser in this kernel: the partitions are added with BLKPG. They
        # outlive a detach, so a run killed before its clean-up leaves them on the device
        # losetup hands out next: gone first, or addpart says "busy"
        for number in ("1", "2"):
            subprocess.run(["delpart", disk, number], capture_output=True, timeout=30)
        sh("addpart", disk, "1", "2048", str(P1_SECTORS))
        sh("addpart", disk, "2", str(2048 + P1_SECTORS), str(P2_SECTORS))
        sh("mkfs.ext4", "-F", "-q", f"{disk}p1")
        sh("mount", f"{disk}p1", str(mnt))
        devices.append(sh("losetup", "-f", "--show", "-r", str(ro_image)))
        out = base / "out"
        out.mkdir()
        started = time.time()
        # sos's block plugin lists /dev recursively (ls -lanR /dev), /dev/shm included: what
        # other programs keep there (a shared machine's other jobs: 16 MB of listing once, to
        # compress and to unpack again in each read of the archive). sos runs in a mount
        # namespace of its own with an empty /dev/shm: no compared field comes from there.
        sos = subprocess.run(["unshare", "--mount", "--propagation", "private", "sh", "-ec",
                              'mount -t tmpfs -o size=1m inspector-empty-shm /dev/shm; exec "$@"',
                              "sh", "sos", "report", "--batch", "--quiet", "--no-report",
                              "-z", "xz", "--plugin-timeout", "60", "--tmp-dir", str(out),
                              "--only-plugins", PLUGINS],
                             capture_output=True, text=True, timeout=SOS_TIMEOUT)
        ended = time.time()
        assert sos.returncode == 0, sos.stderr or sos.stdout
        live = run_bin("report", "--json")
        assert live.returncode == 0, live.stderr
        [archive] = glob.glob(str(out / "sosreport-*.tar.xz"))
        unpacked = base / "unpacked"
        unpacked.mkdir()
        sh("tar", "-xJf", archive, "-C", str(unpacked))
        [directory] = unpacked.iterdir()
        yield SosRun(Path(archive), directory, json.loads(live.stdout), started, ended,
                     os.path.basename(disk), os.path.basename(devices[1]), str(mnt))
    finally:
        subprocess.run(["umount", str(mnt)], capture_output=True, timeout=30)
        if devices:   # BLKPG partitions outlive the detach: removed first
            for number in ("1", "2"):
                subprocess.run(["delpart", devices[0], number], capture_output=True, timeout=30)
        for dev in devices:
            subprocess.run(["losetup", "-d", dev], capture_output=True, timeout=30)


@pytest.fixture(scope="module")
def reads(sos_run) -> dict[str, subprocess.CompletedProcess]:
    """Every read of the sosreport the tests below assert on, run once and side by side: each
    is one process of its own (the archive's two reads unpack it again, 4 s each), and the
    serial part has both cores. Each test checks the runs it uses."""
    argv = {"directory": ("report", "--json", "--root", str(sos_run.directory)),
            "archive": ("report", "--json", "--root", str(sos_run.archive)),
            "archive text": ("report", "--root", str(sos_run.archive)),
            "top": ("top", "--count", "1", "--root", str(sos_run.directory)),
            "parent": ("report", "--json", "--root", str(sos_run.directory.parent))}
    with ThreadPoolExecutor(len(argv)) as pool:
        runs = {name: pool.submit(run_bin, *args) for name, args in argv.items()}
        return {name: run.result() for name, run in runs.items()}


@pytest.fixture(scope="module")
def directory_doc(reads) -> dict:
    """`report --json --root` of the unpacked sosreport: one run read by every test that
    asserts on it (each took the same run again; copy before changing it)."""
    return doc_of(reads["directory"])


def doc_of(res: subprocess.CompletedProcess) -> dict:
    assert res.returncode == 0, res.stderr
    assert not res.stderr, res.stderr
    return json.loads(res.stdout)


def report(root: Path | str, *extra: str) -> dict:
    return doc_of(run_bin("report", "--json", "--root", str(root), *extra))


# ------------------------------------------------------------------ the agreement figure
def compared_fields(doc: dict) -> dict[str, object]:
    """The fields the sosreport must reproduce: block devices (size, mounts), NICs (MTU,
    driver, every offload line), virtualization layers and the resolver."""
    out: dict[str, object] = {}
    sections = doc["sections"]
    for name, dev in (sections["storage"].get("devices") or {}).items():
        out[f"block {name} size"] = dev["size_bytes"]
        out[f"block {name} mounts"] = sorted((m["mountpoint"], m["fstype"], m["source"])
                                             for m in dev["mounts"])
    for nic in sections["net"]["nics"]:
        out[f"nic {nic['name']} mtu"] = nic["mtu"]
        out[f"nic {nic['name']} driver"] = nic["driver"]
        if isinstance(nic["offloads"], list):
            for line in nic["offloads"]:
                out[f"nic {nic['name']} offload {line['name']}"] = (
                    line["on"], line["fixed"], line["requested"])
        else:
            out[f"nic {nic['name']} offloads"] = nic["offloads"]
    for layer in sections["virt"]["layers"]:
        out[f"virt {layer['kind']}"] = (layer["verdict"], layer["flavor"], layer["guest_mode"])
    dns = sections["dns"]
    for key in ("path", "real_path", "manager", "mode", "stub", "used_nameservers",
                "nss_hosts", "first_server_loss_delay_s", "all_servers_loss_delay_s"):
        out[f"dns {key}"] = dns[key]
    for key, value in (dns["config"] or {}).items():
        out[f"dns config {key}"] = value
    return out


def agreement(live: dict, other: dict, what: str) -> tuple[float, list[str]]:
    expected, got = compared_fields(live), compared_fields(other)
    differ = [f"{k}: live {expected[k]!r}, {what} {got.get(k, '(missing)')!r}"
              for k in expected if got.get(k, object()) != expected[k]]
    ratio = 1 - len(differ) / len(expected)
    print(f"\n{what} vs live: {len(expected) - len(differ)}/{len(expected)} fields agree "
          f"({ratio:.1%})")
    return ratio, differ


def test_sosreport_directory_agrees_with_live(sos_run, directory_doc):
    doc = directory_doc
    ratio, differ = agreement(sos_run.live, doc, "sosreport directory")
    assert ratio >= 0.9, "\n".join(differ)
    devices = doc["sections"]["storage"]["devices"]
    disk = sos_run.disk
    # sizes the sosreport's sysfs does not have: blockdev --report's exact bytes (p2 is an odd
    # number of sectors, which /proc/partitions' KiB would round down)
    assert devices[disk]["size_bytes"] == 24 << 20
    assert devices[f"{disk}p1"]["size_bytes"] == P1_SECTORS * 512
    assert devices[f"{disk}p2"]["size_bytes"] == P2_SECTORS * 512
    assert devices[disk]["partitions"] == [f"{disk}p1", f"{disk}p2"]
    assert devices[f"{disk}p2"]["start_sector"] == 2048 + P1_SECTORS
    assert [m["mountpoint"] for m in devices[f"{disk}p1"]["mounts"]] == [sos_run.mountpoint]
    assert devices[sos_run.readonly]["read_only"] is True
    live_nics = {n["name"]: n for n in sos_run.live["sections"]["net"]["nics"]}
    for nic in doc["sections"]["net"]["nics"]:
        ref = live_nics[nic["name"]]
        for key in ("kind", "driver", "bus", "mtu", "tx_queue_len", "mac", "operstate",
                    "admin_up", "carrier", "offloads"):
            assert nic[key] == ref[key], (nic["name"], key)


def test_sosreport_archive_reads_as_its_directory(sos_run, reads, directory_doc):
    from_archive = doc_of(reads["archive"])
    ratio, differ = agreement(sos_run.live, from_archive, "sosreport .tar.xz")
    assert ratio >= 0.9, "\n".join(differ)
    from_directory = copy.deepcopy(directory_doc)
    for doc in (from_archive, from_directory):
        doc.pop("timings", None)
        doc["host"].pop("source")
    assert from_archive == from_directory


def test_header_says_sosreport_with_host_and_date(sos_run, reads, directory_doc):
    res = reads["archive text"]
    assert res.returncode == 0, res.stderr
    # the source line is as long as the archive's path: where it folds, spaces are doubled
    head = " ".join(" ".join(res.stdout.splitlines()[:4]).split())
    assert f"Inspector report {socket.gethostname()}" in head
    assert f"source: sosreport {sos_run.archive}" in head and "(sos " in head
    captured = directory_doc["host"]["collected_at"]
    assert sos_run.started - 1 <= captured <= sos_run.ended + 1
    stamp = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(captured))
    assert f"captured {stamp}" in head
    top = reads["top"]
    assert top.returncode == 0 and "one sample taken " in top.stdout, top.stdout + top.stderr


def test_what_sos_did_not_collect_is_not_in_this_sosreport(directory_doc):
    doc = directory_doc
    text = json.dumps(doc)
    assert "not recorded in capture" not in text
    # CPUID cannot be read from a file: sos has no record of it
    assert doc["sections"]["virt"]["cpuid"]["method"] == {
        "unknown": "not in this sosreport (cpuid method)"}


def test_sos_facts_in_the_sidecar_shape(sos_run):
    from inspector.captures.sosreport import sos_facts
    facts = sos_facts(str(sos_run.directory))
    assert facts["uname"]["uname"]["nodename"] == socket.gethostname()
    assert facts["uname"]["uname"]["release"] == os.uname().release
    assert set(facts["ethtool_features"]) == set(os.listdir("/sys/class/net"))
    ip_link = facts["command"]["ip -s -d link"]
    assert ip_link["returncode"] == 0 and "mtu" in ip_link["stdout"]


def test_parent_directory_of_one_sosreport_is_read_as_it(sos_run, reads):
    doc = doc_of(reads["parent"])
    assert doc["host"]["source"].startswith(f"sosreport {sos_run.directory.parent}")


# ------------------------------------------------------------------ sos 3.x and hostile trees
def test_old_sos_layout_degrades_to_unknown(tmp_path):
    root = tmp_path / OLD_LAYOUT.name
    shutil.copytree(OLD_LAYOUT, root, symlinks=True)
    res = run_bin("report", "--root", str(root))
    assert res.returncode == 0 and not res.stderr, res.stderr
    assert "Traceback" not in res.stdout and "internal error" not in res.stdout
    doc = report(root)
    assert doc["host"]["hostname"] == "oldhost" and doc["host"]["kernel"] == "3.10.0-957.el7.x86_64"
    # no manifest, no `date --utc`, no zone: sos.log's first line, read as UTC, and said so
    assert doc["host"]["collected_at"] == 1552385700.123
    assert "time zone not in this sosreport" in doc["host"]["source"]
    nics = {n["name"]: n for n in doc["sections"]["net"]["nics"]}
    eth0, eth1 = nics["eth0"], nics["eth1"]
    assert (eth0["mtu"], eth0["driver"], eth0["bus"], eth0["speed_mbps"]) == (9000, "e1000e", "pci", 1000)
    assert eth0["offloads"]["unknown"].startswith("ethtool -k lists tx-checksumming without")
    assert eth1["mtu"] == 1500 and eth1["carrier"] is False
    assert eth1["driver"] == {"unknown": "not in this sosreport (command ethtool -i eth1)"}
    assert eth1["offloads"] == {"unknown": "not in this sosreport (ethtool_features eth1)"}
    assert nics["lo"]["kind"] == "loopback"
    devices = doc["sections"]["storage"]["devices"]
    assert devices["sda"]["size_bytes"] == 500107862016 and devices["sda"]["maj_min"] == "8:0"
    assert devices["sda"]["partitions"] == ["sda1", "sda2"]
    assert devices["sda1"]["size_bytes"] == 1073741824
    # no dm/ in sysfs: dmsetup info -c names it, dmsetup ls --tree puts it on sda2
    dm0 = doc["sections"]["storage"]["dm"]["dm-0"]
    assert (dm0["dm_name"], dm0["kind"], dm0["slaves"]) == ("vg0-root", "lvm", ["sda2"])
    assert devices["sda2"]["holders"] == ["dm-0"] and "dm-0" not in doc["sections"]["storage"]["roots"]
    assert [m["mountpoint"] for m in devices["dm-0"]["mounts"]] == ["/"]
    assert doc["sections"]["dns"]["config"]["nameservers"] == ["10.0.0.2", "10.0.0.3"]
    # sos kept `smartctl -a /dev/sda` as text (no JSON, no exit status in sos 3.x): read as text
    sda = doc["sections"]["storage"]["health"]["sda"]
    assert (sda["source"], sda["model"], sda["serial"], sda["smart_passed"], sda["level"]) == \
        ("smartctl -a (text)", "ST1000DM010-2EP102", "Z9A1B2C3", True, "ok")
    assert sda["evidence"]["smart_passed"] == "SMART overall-health self-assessment test result: PASSED"
    assert sda["temperature_c"] == {"unknown": "not reported by smartctl"}


def test_sos_files_linking_outside_are_not_read(tmp_path):
    secret = tmp_path / "analyst-file"
    secret.write_text("Linux SECRETHOST 9.9.9 #1 SMP x86_64 GNU/Linux\n")
    root = tmp_path / "sosreport-evil"
    shutil.copytree(OLD_LAYOUT, root, symlinks=True)
    uname = root / "sos_commands" / "kernel" / "uname_-a"
    uname.unlink()
    uname.symlink_to(secret)
    (root / "sos_commands" / "networking" / "ip_link").unlink()
    (root / "sos_commands" / "networking" / "ip_link").symlink_to("../../../analyst-file")
    res = run_bin("report", "--json", "--root", str(root))
    assert res.returncode == 0, res.stderr
    assert "SECRETHOST" not in res.stdout
    assert json.loads(res.stdout)["host"]["kernel"] != "9.9.9"


def test_a_tree_without_sos_marks_is_still_refused(tmp_path):
    (tmp_path / "sos_commands").mkdir()    # sos_commands alone is not a sosreport
    res = run_bin("report", "--root", str(tmp_path))
    assert res.returncode == 2 and "not a host root" in res.stderr


# ------------------------------------------------------------------ parsers against this host
def test_ip_link_output_reads_as_sysfs():
    from inspector.discover.ip_link import parse_ip_link
    links = parse_ip_link(sh("ip", "-s", "-d", "link"))
    for name in os.listdir("/sys/class/net"):
        base = f"/sys/class/net/{name}"
        for attr in ("mtu", "tx_queue_len", "address", "flags", "operstate", "type", "ifindex"):
            with open(f"{base}/{attr}") as f:
                expected = f.read().strip()
            got = links[name].sysfs(attr)
            assert got is not None, (name, attr)        # ip printed every attribute sysfs has
            if attr == "flags":
                assert int(got, 16) == int(expected, 16) & 0xFFFF, (name, attr)
            else:
                assert got == expected, (name, attr)


def test_ethtool_k_output_gives_back_the_kernel_rows():
    from inspector.discover.ethtool_text import feature_rows
    from inspector.discover.net_offloads import ethtool_offloads, read_feature_bits
    from inspector.roots.host import HostRoot
    for name in os.listdir("/sys/class/net"):
        text = sh("ethtool", "-k", name)
        rows = feature_rows(text)
        assert rows is not None, name                   # this ethtool is 3.0 or later
        lines = [o.ethtool_line() for o in ethtool_offloads(rows)]
        assert lines == text.splitlines()[1:], name
        bits = read_feature_bits(HostRoot("/"), name)
        assert isinstance(bits, list), (name, bits)
        live = [o.ethtool_line() for o in ethtool_offloads(bits)]
        assert lines == live, name
