"""Storage discovery and findings on the fixture roots (sysfs/procfs trees of real layouts)."""
import json
import shutil
import subprocess

import pytest

from conftest import ROOTS, fixture_root, run_cli
from inspector.discover import storage
from inspector.model import Level, to_jsonable
from inspector.report.collect import build_report
from inspector.roots.host import HostRoot

STORAGE_ROOTS = sorted(p.name for p in ROOTS.iterdir() if p.name.startswith("storage-")) + [
    "xen-pv-guest", "xenserver-hvm", "kvm-virtio-guest", "nvme-bare-metal", "flash-mixed"]


def section_of(name: str) -> storage.StorageSection:
    return storage.collect(HostRoot(str(fixture_root(name))))


def findings_of(name: str) -> list:
    report = build_report(HostRoot(str(fixture_root(name))), ["storage"])
    return [f for f in report.findings if f.code.split(".")[0] in ("md", "dm", "block", "storage")]


def codes(findings) -> set:
    return {(f.code, f.subject, f.level) for f in findings}


def test_all_storage_roots_exist():
    assert len(STORAGE_ROOTS) >= 15


def test_md_raid0_over_two_fusion_io_cards():
    s = section_of("storage-md-raid0-fio")
    md0 = s.devices["md0"]
    assert (md0.type, md0.family, md0.slaves) == ("raid0", "md", ["fioa", "fiob"])
    assert s.devices["fioa"].children == ["md0"] and s.devices["fiob"].holders == ["md0"]
    assert s.devices["fioa"].family == "flash-fio" and s.devices["fioa"].vendor == "Fusion-io"
    assert "md0" not in s.roots and {"fioa", "fiob", "sda"} <= set(s.roots)
    assert [(m.mountpoint, m.fstype) for m in md0.mounts] == [("/data", "xfs")]
    array = s.md["md0"]
    assert (array.level, array.chunk_size_bytes, array.degraded, array.sync_action) == ("raid0", 524288, None, None)
    assert [(m.name, m.slot, m.state) for m in array.members] == [("fioa", 0, ["in_sync"]), ("fiob", 1, ["in_sync"])]
    assert array.disagreements == []
    assert findings_of("storage-md-raid0-fio") == []


def test_lvm_striped_over_fusion_io():
    s = section_of("storage-lvm-striped-fio")
    dm1 = s.dm["dm-1"]
    assert (dm1.dm_name, dm1.kind, dm1.slaves, dm1.suspended) == ("vgflash-data", "lvm", ["fioa", "fiob"], False)
    assert dm1.striping is not None
    assert (dm1.striping.stripes, dm1.striping.stripe_bytes, dm1.striping.width_bytes) == (2, 65536, 131072)
    assert s.dm["dm-0"].striping is None
    assert s.devices["dm-1"].type == "lvm" and s.devices["dm-1"].mounts[0].mountpoint == "/data"
    swap = s.devices["dm-0"].swap
    assert swap is not None and (swap.filename, swap.size_kib) == ("/dev/dm-0", 8388604)
    assert s.devices["sda2"].children == ["dm-0"]


def test_raid1_degraded_and_recovering():
    s = section_of("storage-raid1-recovering")
    md1 = s.md["md1"]
    assert (md1.degraded, md1.sync_action, md1.progress_percent, md1.speed_kib_s, md1.eta_minutes) == \
        (1, "recover", 8.6, 259783, 17.0)
    assert md1.disagreements == [] and s.md["md0"].disagreements == []
    assert s.md["md0"].sync_completed == "delayed"
    found = findings_of("storage-raid1-recovering")
    assert codes(found) == {("md.degraded", "md0", Level.CRIT), ("md.degraded", "md1", Level.CRIT),
                            ("md.sync_running", "md1", Level.WARN), ("md.sync_waiting", "md0", Level.WARN)}
    running = next(f for f in found if f.code == "md.sync_running")
    assert "recovery running, 8.6% done" in running.message and "ETA 17.0 min" in running.message
    assert any("recovery =  8.5%" in e for e in running.evidence)
    assert any(e.startswith("/sys/block/md1/md/sync_completed: 33551104 / 390620288") for e in running.evidence)
    # the tree: each partition carries its array, as lsblk draws it
    assert s.devices["sda1"].children == ["md1"] and s.devices["sdb2"].children == ["md0"]


def test_raid1_with_faulty_member():
    s = section_of("storage-raid1-faulty")
    states = {m.name: (m.state, m.slot) for m in s.md["md0"].members}
    assert states == {"sda1": (["in_sync"], 0), "sdb1": (["faulty"], None)}
    found = findings_of("storage-raid1-faulty")
    assert codes(found) == {("md.degraded", "md0", Level.CRIT), ("md.member_faulty", "md0", Level.CRIT)}
    faulty = next(f for f in found if f.code == "md.member_faulty")
    assert "sdb1" in faulty.message and "/sys/block/md0/md/dev-sdb1/state: faulty" in faulty.evidence


def test_check_running_and_mismatches_after_check():
    found = findings_of("storage-md-check")
    # a check on a complete array is information (OK), kept under its code for diff and check
    assert codes(found) == {("md.mismatch", "md0", Level.WARN), ("md.sync_running", "md1", Level.OK)}
    check = next(f for f in found if f.code == "md.sync_running")
    assert "check running, 42.3% done" in check.message and "ETA 3.5 h" in check.message


MD_ROOTS = sorted(p.name for p in ROOTS.iterdir()
                  if (p / "proc/mdstat").is_file() and (p / "sys/block").is_dir()
                  and any(d.name.startswith("md") for d in (p / "sys/block").iterdir()))
SYSFS_ONLY_CODES = {"md.mismatch", "md.mdstat_disagrees"}   # mdstat has no mismatch_cnt, nothing to cross-check


def md_verdicts_of(root) -> set:
    report = build_report(HostRoot(str(root)), ["storage"])
    return {(f.code, f.subject, f.level) for f in report.findings
            if f.code.startswith("md.") and f.code not in SYSFS_ONLY_CODES}


@pytest.mark.parametrize("name", MD_ROOTS)
def test_host_and_its_sosreport_get_the_same_md_verdicts(tmp_path, name):
    """The same root read with its md sysfs and without it (as a sosreport or a pasted mdstat
    leaves it: /proc/mdstat alone) gives the same md verdicts."""
    with_sysfs = md_verdicts_of(fixture_root(name))
    root = tmp_path / name
    shutil.copytree(fixture_root(name), root, symlinks=True)
    arrays = sorted(d.name for d in (root / "sys/block").iterdir() if d.name.startswith("md"))
    for array in arrays:
        shutil.rmtree(root / "sys/block" / array / "md")
    section = storage.collect(HostRoot(str(root)))
    assert {section.md[a].source for a in arrays} == {"mdstat"}
    assert md_verdicts_of(root) == with_sysfs


def test_same_md_verdicts_covers_every_verdict_the_sysfs_roots_give():
    seen = set().union(*(md_verdicts_of(fixture_root(name)) for name in MD_ROOTS))
    assert {(code, level) for code, _, level in seen} >= {
        ("md.degraded", Level.CRIT), ("md.member_faulty", Level.CRIT), ("md.sync_running", Level.WARN),
        ("md.sync_waiting", Level.WARN), ("md.sync_running", Level.OK)}


def test_mdstat_and_sysfs_disagreement_is_reported():
    s = section_of("storage-md-disagree")
    text = " | ".join(s.md["md0"].disagreements)
    assert "degraded 0 in sysfs, 1 missing in mdstat" in text
    assert "only in sysfs: sdb" in text
    assert ("md.mdstat_disagrees", "md0", Level.WARN) in codes(findings_of("storage-md-disagree"))


def test_dm_crypt_over_md_and_plain_crypt_swap():
    s = section_of("storage-crypt-md")
    assert (s.dm["dm-0"].kind, s.dm["dm-0"].detail, s.dm["dm-0"].slaves) == ("crypt", "LUKS2", ["md0"])
    assert (s.dm["dm-1"].kind, s.dm["dm-1"].detail) == ("crypt", "PLAIN")
    assert s.devices["md0"].children == ["dm-0"] and s.devices["sdb"].children == ["md0"]
    swap = s.devices["dm-1"].swap
    assert swap is not None and swap.filename == "/dev/mapper/swapcrypt"
    paths = [(depth, name) for depth, name in s.walk() if name in ("sdb", "md0", "dm-0")]
    assert paths[:3] == [(0, "sdb"), (1, "md0"), (2, "dm-0")]


def test_multipath_over_two_scsi_paths():
    s = section_of("storage-multipath")
    assert (s.dm["dm-0"].kind, s.dm["dm-0"].slaves) == ("mpath", ["sdb", "sdc"])
    assert (s.dm["dm-1"].kind, s.dm["dm-1"].detail) == ("part", "partition 1 of mpath")
    assert s.devices["sdb"].wwn == s.devices["sdc"].wwn == "naa.600508b4000156d700012000000b0000"
    assert (s.devices["sdb"].vendor, s.devices["sdb"].model, s.devices["sdb"].state) == ("HP", "HSV300", "running")
    assert s.devices["sdb"].holders == ["dm-0"] and s.devices["dm-0"].holders == ["dm-1"]
    assert findings_of("storage-multipath") == []


def test_suspended_dm_readonly_mounted_rw_and_offline_path():
    found = findings_of("storage-dm-suspended")
    assert codes(found) == {("dm.suspended", "dm-0", Level.CRIT), ("dm.suspended", "dm-1", Level.WARN),
                            ("block.ro_mounted_rw", "sdb", Level.WARN), ("block.scsi_offline", "sdc", Level.CRIT)}
    crit = next(f for f in found if f.subject == "dm-0")
    assert "vg0-data" in crit.message and "/data" in crit.message
    assert "/sys/block/dm-0/dm/suspended: 1" in crit.evidence


def test_es3000_card():
    s = section_of("storage-es3000")
    hioa = s.devices["hioa"]
    assert (hioa.family, hioa.type, hioa.vendor, hioa.partitions) == ("flash-hio", "disk", "Huawei", ["hioa1"])
    assert s.devices["hioa1"].mounts[0].mountpoint == "/data"
    assert hioa.size_bytes == 2351562500 * 512


def test_xen_pv_guest():
    s = section_of("xen-pv-guest")
    assert s.devices["xvda"].family == "xen" and s.devices["xvda"].maj_min == "202:0"
    assert s.devices["xvda"].partitions == ["xvda1", "xvda2"]
    assert s.devices["xvda2"].swap is not None and s.devices["xvda1"].mounts[0].mountpoint == "/"
    assert s.devices["xvdb"].scheduler == "none"


def test_xenserver_hvm_with_lvm():
    s = section_of("xenserver-hvm")
    assert s.devices["xvda"].family == "xen"
    assert s.devices["xvda2"].children == ["dm-0", "dm-1"]
    assert s.devices["dm-0"].mounts[0].mountpoint == "/" and s.devices["dm-1"].swap is not None


def test_kvm_virtio_guest():
    s = section_of("kvm-virtio-guest")
    assert s.devices["vda"].family == "virtio" and s.devices["vda"].partitions == ["vda1", "vda14", "vda15"]
    assert s.devices["vdb"].serial == "data-7f3a91" and s.devices["vda"].serial == ""
    sr0 = s.devices["sr0"]
    assert (sr0.type, sr0.removable, sr0.model, sr0.queue.logical_block_size) == ("rom", True, "QEMU DVD-ROM", 2048)
    assert s.devices["vda"].scheduler == "mq-deadline"
    assert s.devices["vda"].schedulers == ["none", "mq-deadline", "kyber", "bfq"]


def test_nvme_bare_metal():
    s = section_of("nvme-bare-metal")
    n = s.devices["nvme0n1"]
    assert (n.family, n.model, n.serial) == ("nvme", "SAMSUNG MZQL2960HCJR-00A07", "S64FNE0R600123")
    assert isinstance(n.wwn, str) and n.wwn.startswith("eui.")
    assert s.devices["nvme0n1p2"].children == ["md0"] and s.md["md0"].disagreements == []
    assert findings_of("nvme-bare-metal") == []


def test_drive_health_is_attached_and_its_failure_is_contained(monkeypatch):
    from inspector.discover import drives
    seen = {}

    def fake(root, names):
        seen["names"] = names
        return {"fioa": "fake-health"}
    monkeypatch.setattr(drives, "collect", fake)
    s = section_of("storage-md-raid0-fio")
    assert s.health == {"fioa": "fake-health"}
    assert set(seen["names"]) == {"fioa", "fiob", "md0", "sda"}  # whole devices only

    def broken(root, names):
        raise RuntimeError("vendor tool exploded")
    monkeypatch.setattr(drives, "collect", broken)
    s = section_of("storage-md-raid0-fio")
    assert s.health == {} and "md0" in s.md
    assert any("vendor tool exploded" in p for p in s.problems)


# ----------------------------------------------------------------------------- lsblk agreement
def lsblk_rows(root) -> list[tuple]:
    out = subprocess.run(["lsblk", "--sysroot", str(root), "-J", "-b", "-o", "NAME,TYPE,SIZE,MAJ:MIN,RO,RM"],
                         capture_output=True, text=True, timeout=20, check=True).stdout
    rows = []

    def visit(node, path):
        here = path + (node["name"],)
        rows.append((here, node["type"], int(node["size"]), node["maj:min"].strip(), node["ro"], node["rm"]))
        for child in node.get("children", []):
            visit(child, here)
    for node in json.loads(out)["blockdevices"]:
        visit(node, ())
    return sorted(rows)


def our_rows(s: storage.StorageSection) -> list[tuple]:
    rows: list[tuple] = []
    path: list[str] = []
    for depth, name in s.walk():
        dev = s.devices[name]
        label = s.dm[name].dm_name if name in s.dm else name
        assert isinstance(label, str), f"{name}: {label}"     # lsblk names every dm device
        del path[depth:]
        path.append(label)
        rows.append((tuple(path), dev.type, dev.size_bytes, dev.maj_min, dev.read_only, dev.removable))
    return sorted(rows)


@pytest.mark.skipif(shutil.which("lsblk") is None, reason="util-linux lsblk is part of the test image")
@pytest.mark.parametrize("name", STORAGE_ROOTS)
def test_tree_matches_lsblk_sysroot(name):
    root = fixture_root(name)
    expected = lsblk_rows(root)
    ours = our_rows(storage.collect(HostRoot(str(root))))
    assert len(expected) > 1
    assert ours == expected


# ----------------------------------------------------------------------------- the CLI
@pytest.mark.parametrize("name", ["storage-raid1-recovering", "storage-dm-suspended", "kvm-virtio-guest"])
def test_report_renders_and_json_has_the_section(name):
    res = run_cli("report", "--section", "storage", "--root", str(fixture_root(name)))
    assert res.status == 0, res.err
    assert "Traceback" not in res.out and "cannot render" not in res.out
    doc = run_cli("report", "--json", "--section", "storage", "--root", str(fixture_root(name))).json()
    section = doc["sections"]["storage"]
    assert {"devices", "roots", "md", "dm", "health", "mdstat", "swaps"} <= set(section)
    assert section["roots"] and all(r in section["devices"] for r in section["roots"])


def test_json_is_serialisable_for_every_root():
    for name in STORAGE_ROOTS:
        json.dumps(to_jsonable(section_of(name)))
