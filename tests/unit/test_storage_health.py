"""Storage health rules on hand-built models: the cases the fixture roots do not cover."""
import dataclasses

import pytest

from conftest import fixture_root, replace_section
from inspector.discover.block import BlockDevice, Mount, QueueLimits
from inspector.discover.dm import DmDevice
from inspector.discover.md import MdArray, MdMember, array_from_mdstat, parse_mdstat
from inspector.discover.storage import StorageSection
from inspector.health.storage import block_findings, dm_findings, md_findings, rules
from inspector.model import HostIdentity, Level, Report, Unknown
from inspector.report.collect import build_report
from inspector.roots.host import HostRoot


def array(**kw) -> MdArray:
    base = MdArray(name="md0", level="raid1", array_state="clean", raid_disks=2, degraded=0,
                   sync_action="idle", sync_completed="none", mismatch_cnt=0)
    return dataclasses.replace(base, **kw)


def device(name: str = "sdb", **kw) -> BlockDevice:
    base = BlockDevice(name=name, type="disk", family="scsi", maj_min="8:16", sysfs_path="sys/x",
                       size_bytes=1 << 30, read_only=False, removable=False, rotational=True,
                       scheduler="none", schedulers=["none"], queue=QueueLimits(512, 512, 512, 0))
    return dataclasses.replace(base, **kw)


def test_healthy_array_has_no_findings():
    assert md_findings(array()) == []


def test_inactive_array_is_critical():
    found = md_findings(array(array_state="inactive", level=Unknown("not present"), degraded=None,
                              sync_action=None))
    assert [(f.code, f.level) for f in found] == [("md.inactive", Level.CRIT)]
    assert "/sys/block/md0/md/array_state: inactive" in found[0].evidence


def test_degraded_seen_only_in_mdstat_when_sysfs_is_unreadable():
    entry = parse_mdstat("md0 : active raid1 sda1[0]\n      1000 blocks super 1.2 [2/1] [U_]\n").arrays["md0"]
    found = md_findings(array(degraded=Unknown("permission denied"), mdstat=entry))
    assert [f.code for f in found] == ["md.degraded"]
    assert any("[2/1] [U_]" in e for e in found[0].evidence)


def test_resync_without_mdstat_still_reports_progress():
    found = md_findings(array(sync_action="resync", sync_completed="500 / 1000", progress_percent=50.0,
                              speed_kib_s=2048))
    # a resync of a complete array is information
    assert [(f.code, f.level) for f in found] == [("md.sync_running", Level.OK)]
    assert "resync running, 50.0% done, at 2.0 MiB/s" in found[0].message and "ETA" not in found[0].message


def test_faulty_member_named_by_either_source():
    found = md_findings(array(members=[MdMember("sda", ["in_sync"], 0, 0), MdMember("sdb", ["faulty"], None, 12)],
                              degraded=1))
    assert {f.code for f in found} == {"md.degraded", "md.member_faulty"}


def test_mismatch_only_reported_when_idle_and_redundant():
    assert [f.code for f in md_findings(array(mismatch_cnt=64))] == ["md.mismatch"]
    assert "md.mismatch" not in [f.code for f in md_findings(array(mismatch_cnt=64, sync_action="check"))]
    assert md_findings(array(mismatch_cnt=Unknown("permission denied"))) == []


# ----------------------------------------------------------------------------- one verdict table
C, W, O = Level.CRIT, Level.WARN, Level.OK  # noqa: E741  (the table's letters)
_MDSTAT_SYNC = {"recover": "recovery", "resync": "resync", "check": "check"}


def twins(level: str, picture: str, *, sync: str | None = None, delayed: bool = False,
          near: int = 1, far: int = 1, faulty_spare: bool = False,
          array_state: str = "clean") -> tuple[MdArray, MdArray]:
    """The same array as sysfs shows it (no /proc/mdstat) and as /proc/mdstat alone shows it.
    picture: the [U_] slots; a recovery writes a spare into the first missing slot."""
    disks = len(picture)
    members, words = [], []
    for slot, c in enumerate(picture):
        if c == "U":
            members.append(MdMember(f"sd{chr(97 + slot)}", ["in_sync"], slot, 0))
            words.append(f"sd{chr(97 + slot)}[{slot}]")
    missing = picture.count("_")
    if sync == "recover" and missing:
        members.append(MdMember("sdy", ["spare"], picture.index("_"), 0))
        words.append(f"sdy[{disks}]")
    if faulty_spare:
        members.append(MdMember("sdz", ["faulty"], None, 0))
        words.append(f"sdz[{disks + 1}](F)")
    ro = {"readonly": " (read-only)", "read-auto": " (auto-read-only)"}.get(array_state, "")
    copies = (f" {near} near-copies" if near > 1 else "") + (f" {far} far-copies" if far > 1 else "")
    text = (f"md0 : active{ro} {level} {' '.join(words)}\n"
            f"      1000 blocks super 1.2{copies} [{disks}/{disks - missing}] [{picture}]\n")
    if sync and delayed:
        text += "      resync=DELAYED\n"
    elif sync:
        text += f"      [=>....]  {_MDSTAT_SYNC[sync]} = 10.0% (100/1000) finish=1.5min speed=1000K/sec\n"
    sysfs = array(level=level, raid_disks=disks, degraded=missing, members=members,
                  array_state=array_state, layout=near | far << 8, sync_action=sync or "idle",
                  sync_completed="delayed" if delayed else "200 / 2000" if sync else "none",
                  progress_percent=None if delayed or not sync else 10.0)
    mdstat = array_from_mdstat(parse_mdstat(text).arrays["md0"])
    assert mdstat.source == "mdstat" and mdstat.degraded == missing
    return sysfs, mdstat


TABLE = [   # (level, [U_] slots, options, the verdicts both paths must give)
    ("raid1", "U_", {}, {("md.degraded", C)}),
    ("raid1", "U_", {"sync": "recover"}, {("md.degraded", C), ("md.sync_running", W)}),
    ("raid1", "U_", {"sync": "recover", "delayed": True}, {("md.degraded", C), ("md.sync_waiting", W)}),
    ("raid1", "UU_", {}, {("md.degraded", W)}),
    ("raid1", "UU_", {"sync": "recover"}, {("md.degraded", W), ("md.sync_running", W)}),
    ("raid5", "UU_", {"sync": "recover"}, {("md.degraded", C), ("md.sync_running", W)}),
    ("raid5", "U__", {}, {("md.failed", C)}),
    ("raid6", "U_UU", {}, {("md.degraded", W)}),
    ("raid6", "U__U", {"sync": "recover"}, {("md.degraded", C), ("md.sync_running", W)}),
    ("raid6", "U___", {}, {("md.failed", C)}),
    ("raid10", "U_U_", {"near": 2}, {("md.degraded", C)}),
    ("raid10", "UU_U", {"near": 2}, {("md.degraded", C)}),
    ("raid10", "__UU", {"near": 2}, {("md.failed", C)}),
    # the layout decides: near-2 mirrors slots (0,1) and (2,3), far-2 puts each chunk's second
    # copy on the next slot, so (1,2) share chunks too
    ("raid10", "U__U", {"near": 2}, {("md.degraded", C)}),
    ("raid10", "U__U", {"far": 2}, {("md.failed", C)}),
    ("raid10", "UU_", {"near": 3}, {("md.degraded", W)}),
    ("raid5", "UUU", {"sync": "check"}, {("md.sync_running", O)}),
    ("raid6", "UUUU", {"sync": "resync", "delayed": True}, {("md.sync_waiting", O)}),
    ("raid1", "UU", {"faulty_spare": True}, {("md.member_faulty", W)}),
    ("raid6", "U_UU", {"faulty_spare": True}, {("md.degraded", W), ("md.member_faulty", W)}),
    ("raid1", "UU", {"array_state": "readonly"}, {("md.read_only", W)}),
    ("raid1", "UU", {"array_state": "read-auto"}, {("md.read_only", O)}),
]


@pytest.mark.parametrize("level, picture, options, expected", TABLE)
def test_sysfs_and_mdstat_only_arrays_get_the_verdicts_of_one_table(level, picture, options, expected):
    sysfs, mdstat = twins(level, picture, **options)
    got = {(f.code, f.level) for f in md_findings(sysfs)}
    assert got == expected
    assert {(f.code, f.level) for f in md_findings(mdstat)} == expected


def test_degraded_messages_say_what_redundancy_is_left():
    raid6 = next(f for f in md_findings(twins("raid6", "U_UU")[0]) if f.code == "md.degraded")
    assert "1 of 4 devices missing [U_UU]; it survives 1 more failure, nothing rebuilding" in raid6.message
    rebuilding = next(f for f in md_findings(twins("raid1", "U_", sync="recover")[0])
                      if f.code == "md.degraded")
    assert "no redundancy left, recovery onto sdy under way" in rebuilding.message
    assert "do not add another disk" in rebuilding.advice


def test_raid10_without_layout_or_mdstat_is_critical_with_the_reason():
    sysfs, _ = twins("raid10", "UUU_", near=2)
    sysfs.layout = None
    [found] = md_findings(sysfs)
    assert (found.code, found.level) == ("md.degraded", C)
    assert "how many more failures it survives is unknown" in found.message


def test_imsm_container_is_inactive_by_design_its_volume_is_not():
    container = array(level="", array_state="inactive", degraded=None, sync_action=None,
                      metadata_version="external:imsm")
    assert md_findings(container) == []
    volume = array(array_state="inactive", degraded=None, sync_action=None,
                   metadata_version="external:/md127/0")
    [found] = md_findings(volume)
    assert found.code == "md.inactive" and "volume of container md127" in found.message


def section_with(devices, dms=()) -> StorageSection:
    s = StorageSection(devices={d.name: d for d in devices}, roots=[d.name for d in devices])
    s.dm = {d.name: d for d in dms}
    return s


def test_suspended_dm_without_users_is_a_warning_and_unknown_is_silent():
    dev = device("dm-3", family="dm", type="lvm")
    quiet = DmDevice("dm-3", "vg-tmp", "LVM-x", "lvm", None, True)
    assert [(f.code, f.level) for f in dm_findings(section_with([dev], [quiet]))] == [("dm.suspended", Level.WARN)]
    unknown = DmDevice("dm-3", "vg-tmp", "LVM-x", "lvm", None, Unknown("permission denied"))
    assert dm_findings(section_with([dev], [unknown])) == []


def test_read_only_device_mounted_read_only_is_fine():
    ro_ok = device(read_only=True, mounts=[Mount("/backup", "ext4", "/dev/sdb", "ro,relatime", True)])
    assert block_findings(section_with([ro_ok])) == []
    ro_rw = device(read_only=True, mounts=[Mount("/backup", "ext4", "/dev/sdb", "rw,relatime", False)])
    assert [f.code for f in block_findings(section_with([ro_rw]))] == ["block.ro_mounted_rw"]


def test_section_problems_that_hide_devices_are_an_unknown_finding():
    report = Report(host=HostIdentity("h", "k", "m", "live", 0.0),
                    sections={"storage": StorageSection(problems=["/sys/block: permission denied"])})
    found = list(rules(report))
    assert [(f.code, f.level) for f in found] == [("storage.incomplete", Level.UNKNOWN)]
    report.sections["storage"] = Unknown("timed out after 15 s")
    assert list(rules(report)) == []


# Storage findings as an operator acts on them: the advice must fit the state.

def findings(root: str):
    report = build_report(HostRoot(str(fixture_root(root))), ["storage"])
    return report.findings


def by(found, code, subject):
    matches = [f for f in found if f.code == code and f.subject == subject]
    assert len(matches) == 1, [(f.code, f.subject) for f in found]
    return matches[0]


def test_degraded_array_that_is_rebuilding_does_not_say_add_a_disk():
    found = findings("storage-raid1-recovering")
    md1 = by(found, "md.degraded", "md1")      # recovery = 8.5% onto sdb1
    assert md1.level is Level.CRIT
    assert "recovery onto sdb1 under way" in md1.message
    assert "--add" not in md1.advice and "do not add another disk" in md1.advice
    md0 = by(found, "md.degraded", "md0")      # resync=DELAYED, sdb2 waits in slot 1
    assert "recovery onto sdb2 queued" in md0.message
    assert "--add" not in md0.advice


def test_degraded_array_without_a_replacement_still_says_add_one():
    md0 = by(findings("storage-raid1-faulty"), "md.degraded", "md0")
    assert "mdadm --manage --add" in md0.advice
    assert "recovery" not in md0.message


def test_every_storage_finding_that_is_not_ok_says_what_to_do():
    for root in ("storage-raid1-recovering", "virt-01-baremetal-dell", "storage-md-check"):
        for f in findings(root):
            if f.level is not Level.OK:
                assert f.advice, (root, f.code, f.message)


def test_offline_lvm_disk_is_not_called_a_multipath_path():
    sdc = by(findings("storage-dm-suspended"), "block.scsi_offline", "sdc")   # PV of vg0-data
    assert "path of" not in sdc.message and "under vg0-data" in sdc.message
    assert "multipathd" not in sdc.advice


def test_offline_multipath_path_still_points_at_multipathd(tmp_path):
    import shutil
    root = tmp_path / "mp"
    shutil.copytree(fixture_root("storage-multipath"), root, symlinks=True)
    (root / "sys/block/sdb/device/state").write_text("offline\n")
    found = build_report(HostRoot(str(root)), ["storage"]).findings
    sdb = by(found, "block.scsi_offline", "sdb")
    assert "path of mpatha" in sdb.message and "multipathd" in sdb.advice


def test_a_section_that_timed_out_or_crashed_says_where_to_look(monkeypatch):
    def hang(root):
        import time
        time.sleep(2)

    def crash(root):
        raise KeyError("boom")
    replace_section(monkeypatch, "cpu", collect=hang)
    replace_section(monkeypatch, "net", collect=crash)
    found = build_report(HostRoot(str(fixture_root("flash-mixed"))), ["cpu", "net"],
                         timeout=0.2).findings
    cpu = by(found, "cpu.not_collected", "cpu")
    assert "timed out" in cpu.message and "D state" in cpu.advice
    net = by(found, "net.not_collected", "net")
    assert "collector failed: KeyError" in net.message and "inspector capture" in net.advice


def test_failed_health_rules_say_what_is_left(monkeypatch):
    from inspector.health import RuleSet

    def broken(report):
        raise ValueError("bad rule")
    replace_section(monkeypatch, "cpu", rules=(RuleSet("cpu", broken),))
    found = build_report(HostRoot(str(fixture_root("cpu-powersave-server"))), ["cpu"]).findings
    f = by(found, "cpu.rules_failed", "cpu")
    assert "nothing in it was judged" in f.advice
