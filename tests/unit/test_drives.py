"""drives.collect on the flash-mixed fixture root, the rules' handling of the storage section,
and the per-device health render."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from rich.console import Console

from conftest import fixture_root
from inspector.discover import drives
from inspector.discover.fio_status import FioHealth
from inspector.discover.hio import HioHealth
from inspector.discover.nvme_health import NvmeHealth
from inspector.discover.smart import SmartHealth
from inspector.health import drives as rules_mod
from inspector.model import HostIdentity, Level, Report, Unknown
from inspector.render.drives import render_health
from inspector.report.collect import build_report
from inspector.roots.host import HostRoot

FLASH_MIXED = Path(__file__).parents[1] / "fixtures/roots/flash-mixed"


def collect_fixture():
    from inspector.roots.host import HostRoot
    root = HostRoot(str(FLASH_MIXED))
    return drives.collect(root, root.listdir("sys/block"))


@dataclass
class FakeStorage:
    health: dict = field(default_factory=dict)


def report_with(storage) -> Report:
    return Report(host=HostIdentity("h", "k", "m", "test", 0.0), sections={"storage": storage})


def test_kind_of():
    assert [drives.kind_of(n) for n in ("hioa", "fiob", "nvme0n1", "sdc", "vda", "xvdb", "loop0",
                                        "dm-0", "md0", "nvme0c0n1", "hioa1")] == \
        ["hio", "fio", "nvme", "smart", "virtual", "virtual", None, None, None, None, None]


def test_collect_flash_mixed_types():
    health = collect_fixture()
    assert list(health) == ["fioa", "hioa", "hiob", "nvme0n1", "sda", "fct1"]
    assert isinstance(health["hioa"], HioHealth)
    assert health["hiob"] == Unknown("hio_info timed out after 5 s")
    assert isinstance(health["fioa"], FioHealth) and health["fioa"].controller == "fct0"
    assert isinstance(health["fct1"], FioHealth) and health["fct1"].state == "failed"
    assert isinstance(health["nvme0n1"], NvmeHealth) and health["nvme0n1"].source == "nvme smart-log"
    assert isinstance(health["sda"], SmartHealth)


def test_rules_each_device_state():
    findings = list(rules_mod.rules(report_with(FakeStorage(collect_fixture()))))
    worst: dict[str, Level] = {}
    for f in findings:
        worst[f.subject] = max(worst.get(f.subject, Level.OK), f.level)
    assert worst == {"hioa": Level.CRIT, "hiob": Level.UNKNOWN, "fioa": Level.WARN,
                     "fct1": Level.CRIT, "sda": Level.WARN}      # nvme0n1 healthy: no finding
    by_code = {(f.subject, f.code) for f in findings}
    assert {("hioa", "hio.battery"), ("hioa", "hio.io_timeout"), ("hioa", "hio.bad_block_rising"),
            ("fioa", "fio.reserves_low"), ("fioa", "fio.hot"), ("fct1", "fio.failed"),
            ("fct1", "fio.read_only"), ("sda", "smart.current_pending_sector"),
            ("sda", "smart.crc_errors"), ("hiob", "drive.health_unknown")} == by_code
    assert all(f.evidence for f in findings)


def test_rules_tolerate_missing_or_unknown_storage():
    assert list(rules_mod.rules(report_with(Unknown("timed out after 15 s")))) == []
    assert list(rules_mod.rules(Report(host=HostIdentity("h", "k", "m", "t", 0.0), sections={}))) == []
    assert list(rules_mod.rules(report_with(object()))) == []     # a section without health
    assert list(rules_mod.rules(report_with(FakeStorage({"vda": Unknown("virtual disk")})))) == []


def test_render_health_blocks():
    console = Console(width=200, record=True)
    for value in collect_fixture().values():
        console.print(render_health(value))
    text = console.export_text()
    assert "health CRIT [hio_info -d /dev/hioa]" in text
    assert "rose from 0.112% to 0.135%" in text
    assert "health: unknown (hio_info timed out after 5 s)" in text
    assert "health OK [nvme smart-log]" in text
    assert "health WARN [smartctl --json -a]" in text
    assert "fct1 Failed: DEVICE IS OFFLINE" in text


# Flash card findings as an operator acts on them: advice is an action that fits.

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
