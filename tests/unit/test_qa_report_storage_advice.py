"""QA of storage findings as an operator acts on them: the advice must fit the state."""
from __future__ import annotations

from conftest import fixture_root, replace_section

from inspector.collect import build_report
from inspector.host import HostRoot
from inspector.model import Level


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
