"""QA (monitoring): the Prometheus export agrees with `inspector check`. A virtual disk has no
health source at all (no SMART on virtio_blk or Xen blkfront); exporting drive_health_level 3
("unknown: the health tool failed") for it paged on every VM of a fleet that alerts on unknown
health, while `check` on the same host said OK."""
from prometheus_client.parser import text_string_to_metric_families

from conftest import fixture_root, run_cli


def _families(root) -> dict:
    res = run_cli("export", "--prometheus", "--root", str(root))
    assert res.status == 0, res.err
    return {f.name: f for f in text_string_to_metric_families(res.out)}


def test_virtual_disks_have_no_health_series_and_check_agrees():
    for name, disks in (("kvm-virtio-guest", {"vda", "vdb"}), ("xen-pv-guest", {"xvda", "xvdb"})):
        fams = _families(fixture_root(name))
        sizes = {s.labels["device"] for s in fams["inspector_block_device_size_bytes"].samples}
        assert disks <= sizes                                   # the disks are exported ...
        health = fams.get("inspector_drive_health_level")
        assert health is None or not disks & {s.labels["device"] for s in health.samples}, \
            [(s.labels, s.value) for s in health.samples]       # ... but not as "unknown health"
        check = run_cli("check", "--root", str(fixture_root(name)))
        assert "unknown=0;" in check.out and check.status in (0, 1), check.out


def test_real_drives_keep_their_levels_and_a_failed_tool_stays_3():
    health = _families(fixture_root("flash-mixed"))["inspector_drive_health_level"]
    levels = {s.labels["device"]: s.value for s in health.samples}
    assert levels == {"hioa": 2, "fioa": 1, "fct1": 2, "nvme0n1": 0, "sda": 1, "hiob": 3}
    assert "virtual disks" in health.documentation
