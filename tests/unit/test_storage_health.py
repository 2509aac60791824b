"""Storage health rules on hand-built models: the cases the fixture roots do not cover."""
from inspector.discover.block import BlockDevice, Mount, QueueLimits
from inspector.discover.dm import DmDevice
from inspector.discover.md import MdArray, MdMember, parse_mdstat
from inspector.discover.storage import StorageSection
from inspector.health.storage import block_findings, dm_findings, md_findings, rules
from inspector.model import HostIdentity, Level, Report, Unknown


def array(**kw) -> MdArray:
    base = dict(name="md0", level="raid1", array_state="clean", raid_disks=2, degraded=0,
                sync_action="idle", sync_completed="none", mismatch_cnt=0)
    base.update(kw)
    return MdArray(**base)


def device(name="sdb", **kw) -> BlockDevice:
    base = dict(name=name, type="disk", family="scsi", maj_min="8:16", sysfs_path="sys/x",
                size_bytes=1 << 30, read_only=False, removable=False, rotational=True,
                scheduler="none", schedulers=["none"], queue=QueueLimits(512, 512, 512, 0))
    base.update(kw)
    return BlockDevice(**base)


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
    assert [f.code for f in found] == ["md.sync_running"]
    assert "resync running, 50.0% done, at 2.0 MiB/s" in found[0].message and "ETA" not in found[0].message


def test_faulty_member_named_by_either_source():
    found = md_findings(array(members=[MdMember("sda", ["in_sync"], 0, 0), MdMember("sdb", ["faulty"], None, 12)],
                              degraded=1))
    assert {f.code for f in found} == {"md.degraded", "md.member_faulty"}


def test_mismatch_only_reported_when_idle_and_redundant():
    assert [f.code for f in md_findings(array(mismatch_cnt=64))] == ["md.mismatch"]
    assert "md.mismatch" not in [f.code for f in md_findings(array(mismatch_cnt=64, sync_action="check"))]
    assert md_findings(array(mismatch_cnt=Unknown("permission denied"))) == []


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
