"""Unknown is never OK and never 0: Prometheus health gauge 3 for an unreadable drive, section_up
0 for a section without its primary input (B14); `check` leaves unknown perfdata out, says
UNKNOWN for an unreadable thresholded subject and when nothing could be collected (B5)."""
import shutil

import pytest
from prometheus_client.parser import text_string_to_metric_families

import inspector.report.collect as collect
from conftest import fixture_root, run_cli
from inspector.outputs.metrics import section_up


def _families(text: str) -> dict:
    return {f.name: f for f in text_string_to_metric_families(text)}


def _export(root) -> dict:
    res = run_cli("export", "--prometheus", "--root", str(root))
    assert res.status == 0, res.err
    return _families(res.out)


def _values(family, label: str) -> dict:
    return {s.labels[label]: s.value for s in family.samples}


def test_unknown_drive_health_is_3_and_documented():
    fams = _export(fixture_root("flash-mixed"))
    health = fams["inspector_drive_health_level"]
    assert "0 ok, 1 warn, 2 crit, 3 unknown" in health.documentation
    levels = _values(health, "device")
    assert levels["hiob"] == 3            # hio_info timed out: unknown, still a series
    assert levels["hioa"] == 2 and levels["nvme0n1"] == 0
    # its kind from its name: the series (and an alert on it) keeps its labels (issue 28)
    assert {s.labels["kind"] for s in health.samples if s.labels["device"] == "hiob"} == {"hio"}


def test_section_up_needs_the_primary_input(tmp_path):
    root = tmp_path / "root"
    shutil.copytree(fixture_root("xen-pv-guest"), root, symlinks=True)
    up = _values(_export(root)["inspector_section_up"], "section")
    assert up["dns"] == 1 and up["storage"] == 1 and up["net"] == 1
    (root / "etc/resolv.conf").unlink()
    fams = _export(root)
    up = _values(fams["inspector_section_up"], "section")
    assert up["dns"] == 0, up                      # collected fine, but resolv.conf is missing
    assert up["storage"] == 1 and up["net"] == 1
    assert "primary input" in fams["inspector_section_up"].documentation


def test_section_up_rule():
    assert not section_up("storage", {"unknown": "timed out after 10 s"})
    assert not section_up("storage", {"devices": {}, "md": {}})            # /sys/block unreadable
    assert section_up("storage", {"devices": {"sda": {}}})
    assert not section_up("dns", {"config": {"unknown": "/etc/resolv.conf: not present"}})
    assert not section_up("virt", {"layers": [{"kind": "vm", "verdict": "none", "evidence": []}]})
    assert section_up("virt", {"layers": [{"kind": "vm", "verdict": "kvm", "evidence": ["cpuid"]}]})


def _perfdata(out: str) -> dict:
    perf = out.splitlines()[0].split("|", 1)[1].split()
    return {item.split("=")[0]: item.split("=")[1].split(";")[0] for item in perf}


@pytest.fixture
def storage_times_out(monkeypatch):
    real = collect.run_bounded

    def bounded(func, timeout):
        if _collects(func, "storage"):
            raise collect.CollectorTimeout(f"timed out after {timeout:g} s")
        return real(func, timeout)
    monkeypatch.setattr(collect, "run_bounded", bounded)


def _collects(func, section: str) -> bool:
    """Is this collect_section's `lambda: collector(root)` for `section`?"""
    from inspector.report.sections import BY_NAME
    cells = [c.cell_contents for c in (func.__closure__ or ())]
    return any(c is BY_NAME[section].collect for c in cells)


def test_md_degraded_is_left_out_when_unknown(storage_times_out):
    res = run_cli("check", "--root", str(fixture_root("storage-raid1-recovering")))
    assert "md_degraded" not in _perfdata(res.out), res.out      # not "md_degraded=0"
    # a threshold on a subject that could not be read: UNKNOWN, not OK or WARNING
    res = run_cli("check", "--root", str(fixture_root("storage-raid1-recovering")),
                  "--crit", "md_degraded=0", "--ignore", "*")
    assert res.status == 3 and res.out.startswith("INSPECTOR UNKNOWN - md_degraded unknown"), res.out


def test_md_degraded_is_reported_when_known():
    res = run_cli("check", "--root", str(fixture_root("storage-raid1-recovering")))
    assert _perfdata(res.out)["md_degraded"] == "2"
    res = run_cli("check", "--root", str(fixture_root("xen-pv-guest")), "--crit", "md_degraded=0")
    assert _perfdata(res.out)["md_degraded"] == "0"                # no md arrays: a known 0
    assert res.status != 3


def test_nothing_collected_is_unknown_never_ok(monkeypatch, tmp_path):
    def always_times_out(func, timeout):
        raise collect.CollectorTimeout(f"timed out after {timeout:g} s")
    monkeypatch.setattr(collect, "run_bounded", always_times_out)
    res = run_cli("check", "--root", str(fixture_root("xen-pv-guest")), "--ignore", "*")
    assert res.status == 3 and res.out.startswith("INSPECTOR UNKNOWN"), res.out
    assert "md_degraded" not in _perfdata(res.out)
    fams = _families(run_cli("export", "--prometheus", "--root", str(fixture_root("xen-pv-guest"))).out)
    assert set(_values(fams["inspector_section_up"], "section").values()) == {0}
    assert fams["inspector_health_status"].samples[0].value == 3
    monkeypatch.undo()
    empty = tmp_path / "empty"
    (empty / "proc").mkdir(parents=True)           # a root where every input is missing
    res = run_cli("check", "--root", str(empty))
    assert res.status == 3 and "nothing could be collected" in res.out.splitlines()[0], res.out


@pytest.mark.parametrize("args", [("--timeout", "nan"), ("--timeout", "0"), ("--bogus",),
                                  ("--warn",)])
def test_check_usage_mistake_is_unknown_on_stdout(args):
    """A Nagios plugin's usage error is UNKNOWN (3), said on stdout where the monitoring
    system reads; exit 2 would page someone for CRITICAL."""
    res = run_cli("check", *args)
    assert res.status == 3, (res.status, res.out, res.err)
    assert res.out.startswith("INSPECTOR UNKNOWN - ") and len(res.out.splitlines()) == 1
    assert "--help" in res.out
    other = run_cli("report", *args)          # other commands keep argparse's usage status
    assert other.status == 2 and "INSPECTOR" not in other.out


def test_check_output_carries_no_escape_sequences(tmp_path):
    """A vendor tool's line quoted in a finding carries an escape sequence (a capture from a
    broken or hostile host): check's text shows it as \\xNN, never raw."""
    import json
    import shutil
    root = tmp_path / "root"
    shutil.copytree(fixture_root("flash-mixed"), root, symlinks=True)
    sidecar = root / "inspector-sidecar.json"
    doc = json.loads(sidecar.read_text())
    commands = doc["facts"]["command"]
    key = next(k for k in commands if k.startswith("hio_info") and "hioa" in k)
    commands[key]["stdout"] = commands[key]["stdout"].replace(
        "Battery status: warning", "Battery status: warning\x1b]0;pwned\x07")
    sidecar.write_text(json.dumps(doc))
    res = run_cli("check", "--root", str(root))
    assert res.status == 2, res.out
    assert "\x1b" not in res.out and "warning\\x1b]0;pwned\\x07" in res.out, res.out
