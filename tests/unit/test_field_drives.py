"""Drives from the field (issue 27): smartctl that could not open a drive (class 5), and drives
behind RAID controllers (class 8). Real outputs under tests/fixtures/field/ (each directory's
SOURCE.md names where they came from), placed in capture roots by field_roots."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import FIXTURES, run_cli
from inspector.collect import build_report
from inspector.discover import smart
from inspector.health.drives import device_findings
from inspector.host import HostRoot
from inspector.model import Level, Unknown

sys.path.insert(0, str(FIXTURES))
import field_roots  # noqa: E402  (the fixture placer, importable from tests/fixtures)

OPEN_FAILED = "smartctl-open-failed"
MEGARAID_HINT = "DELL or MegaRaid controller, please try adding '-d megaraid,N'"


def drive_findings(root: Path) -> dict[tuple[str, str], object]:
    report = build_report(HostRoot(str(root)), ["storage"])
    return {(f.code, f.subject): f for f in report.findings
            if f.code.startswith(("drive.", "smart."))}


def perc_root(tmp_path: Path, commands: dict, errors: dict | None = None) -> Path:
    r = field_roots.root(tmp_path / "root")
    field_roots.controller_disk(r, "sda", 0, "8:0", 22496673792)
    r.finish()
    field_roots.sidecar(r.path, commands, errors)
    return Path(r.path)


# ----------------------------------------------------------------------------- class 5
def test_json_open_failure_is_unreadable_with_smartctls_words():
    h = smart.parse_smartctl(field_roots.output(OPEN_FAILED, "smartctl-json-a-sda.json"), "sda")
    assert (h.exit_status, h.exit_status_bits) == (2, [smart.EXIT_BITS[1]])
    reason = smart.usable(h)
    assert isinstance(reason, smart.Unreadable)
    assert reason.reason == f"smartctl could not open it: Smartctl open device: /dev/sda failed: {MEGARAID_HINT}"


def test_text_open_failure_without_exit_status_is_unreadable_too():
    """A sos 3.x sosreport keeps no exit status: the message alone says it."""
    h = smart.parse_smartctl_text(field_roots.output(OPEN_FAILED, "smartctl-a-sda.txt"), "sda")
    assert h.exit_status == 0 and h.messages == [f"Smartctl open device: /dev/sda failed: {MEGARAID_HINT}"]
    assert isinstance(smart.usable(h), smart.Unreadable)


def test_unreadable_drive_is_an_unknown_finding_naming_it_and_the_way_to_its_drives():
    reason = smart.usable(smart.parse_smartctl(field_roots.output(OPEN_FAILED, "smartctl-json-a-sda.json")))
    (finding,) = device_findings("sda", reason)
    assert (finding.level, finding.code, finding.subject) == (Level.UNKNOWN, "drive.health_unknown", "sda")
    assert MEGARAID_HINT in finding.message and finding.message.startswith("drive health unknown")
    assert "smartctl -d megaraid,N" in finding.advice and "--scan-open" in finding.advice
    assert finding.evidence == [f"smartctl -a /dev/sda: {reason.reason}"]


@pytest.mark.parametrize("reason,advice", [
    ("smartctl could not open it: Smartctl open device: /dev/sdb failed: Permission denied", "root"),
    ("smartctl timed out after 5 s", "hangs"),
    ("smartctl exited with status 1: Smartctl: Read Device Identity failed", "by hand"),
])
def test_other_unreadable_reasons_get_their_advice(reason, advice):
    (finding,) = device_findings("sdb", smart.Unreadable(reason))
    assert finding.level == Level.UNKNOWN and reason in finding.message and advice in finding.advice


@pytest.mark.parametrize("quiet", [
    Unknown("smartctl not installed"), Unknown("not recorded in capture"),
    Unknown("not in this sosreport (command smartctl --json -a /dev/sda)"),
    Unknown("smartctl: device has no SMART support (QEMU QEMU HARDDISK)"),
    Unknown("virtual disk (virtio_blk): no SMART"),
])
def test_drives_nobody_could_ask_stay_quiet(quiet):
    assert device_findings("sda", quiet) == []


def test_capture_of_a_perc_host_reports_the_unreadable_volume(tmp_path):
    root = perc_root(tmp_path, {"smartctl --json -a /dev/sda": (
        2, field_roots.output(OPEN_FAILED, "smartctl-json-a-sda.json"))})
    found = drive_findings(root)
    finding = found[("drive.health_unknown", "sda")]
    assert finding.level == Level.UNKNOWN and MEGARAID_HINT in finding.message
    doc = run_cli("report", "--root", str(root), "--json", "--section", "storage").json()
    assert doc["sections"]["storage"]["health"]["sda"] == {"unknown": finding.message.split(": ", 1)[1]}


def test_a_hung_smartctl_is_unreadable_not_quiet(tmp_path):
    root = perc_root(tmp_path, {}, errors={"smartctl --json -a /dev/sda": "smartctl timed out after 5 s"})
    finding = drive_findings(root)[("drive.health_unknown", "sda")]
    assert "timed out" in finding.message and "hangs" in finding.advice


def test_sosreport_text_output_of_an_unopenable_drive(tmp_path):
    """sos runs `smartctl -a /dev/sdX` (ata plugin): the text form is read when the JSON is not kept."""
    sos = tmp_path / "sosreport-pve-2024-01-24-abcdef"
    r = field_roots.root(sos)
    field_roots.controller_disk(r, "sda", 0, "8:0", 1874329600)
    r.finish()
    (sos / "version.txt").write_text("sosreport: 4.5.6\n")
    (sos / "sos_commands/ata").mkdir(parents=True)
    (sos / "sos_commands/ata/smartctl_-a_.dev.sda").write_text(field_roots.output(OPEN_FAILED, "smartctl-a-sda.txt"))
    doc = run_cli("report", "--root", str(sos), "--json", "--section", "storage").json()
    findings = {(f["code"], f["subject"]): f for f in doc["findings"]}
    finding = findings[("drive.health_unknown", "sda")]
    assert finding["level"] == "unknown" and MEGARAID_HINT in finding["message"]
    assert json.dumps(doc["sections"]["storage"]["health"]["sda"]).count("could not open it") == 1


@settings(max_examples=150, deadline=None)
@given(st.lists(st.sampled_from([
    "smartctl 7.3 2022-02-28 r5338 [x86_64-linux] (local build)", "=== START OF INFORMATION SECTION ===",
    "Device Model:     X", "Vendor:  HGST", "Product:  HUS726040AL5210", "User Capacity: 1,000 bytes [1 KB]",
    "SMART overall-health self-assessment test result: FAILED!", "SMART Health Status: OK",
    "  5 Reallocated_Sector_Ct   0x0033   200   200   140    Pre-fail  Always       -       8",
    "194 Temperature_Celsius     -O---K   065   068   000    -    35 (Min/Max 15/68)",
    "Current Drive Temperature:     40 C", "Elements in grown defect list: 3",
    "Smartctl open device: /dev/sdz failed: No such device"]) | st.text(max_size=80), max_size=25))
def test_text_parser_takes_any_line_mix(lines):
    try:
        h = smart.parse_smartctl_text("\n".join(lines), "sdz", 4)
    except smart.ParseError:
        return
    smart.usable(h)
    device_findings("sdz", h)
