"""QA of flash card findings as an operator acts on them: advice is an action that fits."""
from __future__ import annotations

from conftest import fixture_root

from inspector.collect import build_report
from inspector.host import HostRoot


def flash_findings():
    report = build_report(HostRoot(str(fixture_root("flash-mixed"))), ["storage"])
    return {(f.subject, f.code): f for f in report.findings}


def test_a_hung_vendor_tool_is_not_told_to_be_installed():
    hiob = flash_findings()[("hiob", "drive.health_unknown")]   # hio_info timed out after 5 s
    assert "timed out" in hiob.message
    assert "install" not in hiob.advice
    assert "hangs" in hiob.advice and "dmesg" in hiob.advice


def test_failed_card_and_bad_battery_say_what_to_do_not_only_what_happens():
    found = flash_findings()
    assert "replace" in found[("fct1", "fio.failed")].advice
    assert "replace" in found[("hioa", "hio.battery")].advice


def _cut_sidecar(tmp_path, command: str, keep_lines: int):
    import json
    import shutil
    root = tmp_path / "root"
    shutil.copytree(fixture_root("flash-mixed"), root, symlinks=True)
    sidecar = json.loads((root / "inspector-sidecar.json").read_text())
    fact = sidecar["facts"]["command"][command]
    fact["stdout"] = "\n".join(fact["stdout"].splitlines()[:keep_lines]) + "\n"
    (root / "inspector-sidecar.json").write_text(json.dumps(sidecar))
    return HostRoot(str(root))


def test_hio_info_output_cut_before_its_verdict_is_not_health_ok(tmp_path):
    from inspector.model import Level, to_jsonable
    root = _cut_sidecar(tmp_path, "hio_info -d /dev/hioa", 6)   # serial, firmware: no Health
    report = build_report(root, ["storage"])
    hioa = [f for f in report.findings if f.subject == "hioa"]
    assert [(f.level, f.code) for f in hioa] == [(Level.UNKNOWN, "hio.health_unknown")]
    assert to_jsonable(report)["sections"]["storage"]["health"]["hioa"]["level"] == "unknown"


def test_fio_status_output_cut_before_media_and_reserves_is_not_health_ok(tmp_path):
    from inspector.model import Level
    root = _cut_sidecar(tmp_path, "fio-status -a", 12)   # fct0 Attached, no media/reserves
    report = build_report(root, ["storage"])
    fioa = [(f.level, f.code) for f in report.findings if f.subject == "fioa"]
    assert (Level.UNKNOWN, "fio.health_unknown") in fioa


def test_a_crit_finding_is_not_hidden_by_an_unknown_one():
    from inspector.discover.hio import HioHealth
    from inspector.health.drives import worst_level
    from inspector.model import Level
    h = HioHealth(device="hioa", rw_error=3)        # verdict lines missing, but R/W errors
    assert worst_level("hioa", h) is Level.CRIT
