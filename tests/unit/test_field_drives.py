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
from inspector.discover import smart
from inspector.health.drives import device_findings
from inspector.model import Finding, Level, Unknown
from inspector.report.collect import build_report
from inspector.roots.host import HostRoot

sys.path.insert(0, str(FIXTURES))
import field_roots  # noqa: E402  (the fixture placer, importable from tests/fixtures)

OPEN_FAILED = "smartctl-open-failed"
MEGARAID_HINT = "DELL or MegaRaid controller, please try adding '-d megaraid,N'"


def drive_findings(root: Path) -> dict[tuple[str, str], Finding]:
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
    assert isinstance(reason, smart.Unreadable)
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


# ----------------------------------------------------------------------------- class 8
from inspector.discover import raid_drives, storage  # noqa: E402
from inspector.render.storage import render  # noqa: E402

PROXMOX = "megaraid-proxmox2"
LONE = "megaraid-no-volume-pysmart"
DISK0 = "/dev/bus/0 -d megaraid,0"
DISK1 = "/dev/bus/0 -d megaraid,1"


def proxmox_root(tmp_path: Path, **changes) -> Path:
    """The proxmox2 host: sda a volume on megaraid_sas host0; the outputs glouton kept, as a
    capture of smartctl's text form records them (no JSON form recorded)."""
    commands = {"smartctl -a /dev/sda": (2, field_roots.output(PROXMOX, "smartctl-a-sda.txt")),
                "smartctl --scan-open": (0, field_roots.output(PROXMOX, "smartctl-scan.txt")),
                "smartctl -a -d megaraid,0 /dev/bus/0":
                    (0, field_roots.output(PROXMOX, "smartctl-a-d-megaraid0-dev-bus-0.txt"))}
    commands.update(changes)
    return perc_root(tmp_path, {k: v for k, v in commands.items() if v is not None})


def section_of(root: Path) -> storage.StorageSection:
    return storage.collect(HostRoot(str(root)))


def rendered(section: storage.StorageSection) -> str:
    from io import StringIO

    from rich.console import Console
    out = StringIO()
    Console(file=out, width=160, color_system=None).print(render(section))
    return out.getvalue()


def test_scan_open_lines_and_open_failures():
    entries = raid_drives.parse_scan(
        "# /dev/sda -d scsi # /dev/sda, SCSI device open failed: DELL or MegaRaid controller, "
        "please try adding '-d megaraid,N'\n" + field_roots.output(LONE, "smartctl-scan-open.txt"))
    assert [(e.path, e.dtype, e.open_error) for e in entries] == [
        ("/dev/sda", "scsi", "DELL or MegaRaid controller, please try adding '-d megaraid,N'"),
        ("/dev/nvme0", "nvme", None), ("/dev/nvme1", "nvme", None),
        ("/dev/bus/0", "sat+megaraid,60", None)]
    assert entries[3].info == "/dev/bus/0 [megaraid_disk_60] [SAT], ATA device"


def test_drives_behind_a_perc_volume_are_read_and_put_under_it(tmp_path):
    section = section_of(proxmox_root(tmp_path))
    view = section.controllers
    assert view is not None and view.volumes == {"sda": "megaraid_sas host0"}
    assert [(d.address, d.controller, d.driver, d.volumes, d.placement) for d in view.drives] == [
        (DISK0, "host0", "megaraid_sas", ["sda"], "the only volume of host0"),
        (DISK1, "host0", "megaraid_sas", ["sda"], "the only volume of host0")]
    disk0 = section.health[DISK0]
    assert (disk0.model, disk0.serial, disk0.smart_passed, disk0.temperature_c, disk0.capacity_bytes,
            disk0.power_on_hours, disk0.source) == ("SanDisk SSD PLUS 480GB", "123AF4567890", True, 35,
                                                    480103981056, 10150, "smartctl -a (text)")
    # glouton kept nothing for megaraid,1: unknown, with the reason, never a guess
    assert isinstance(section.health[DISK1], Unknown) and "not recorded" in section.health[DISK1].reason
    text = rendered(section)
    assert "├─megaraid,0" in text and "└─megaraid,1" in text
    assert "health unknown (not recorded in capture" in text
    assert "SanDisk SSD PLUS 480GB SN 123AF4567890 SMART PASSED" in text


def test_a_volume_whose_drives_were_not_all_read_stays_unknown(tmp_path):
    found = drive_findings(proxmox_root(tmp_path))
    finding = found[("drive.health_unknown", "sda")]
    assert finding.level == Level.UNKNOWN
    assert finding.message.endswith(f"not all its physical drives were read ({DISK1}: not recorded in "
                                    "capture (command smartctl --json -a -d megaraid,1 /dev/bus/0))")
    assert (("drive.health_unknown", DISK0)) not in found


def test_a_volume_whose_drives_were_read_is_judged_by_them(tmp_path):
    scan = "\n".join(line for line in field_roots.output(PROXMOX, "smartctl-scan.txt").splitlines()
                     if "megaraid,1" not in line) + "\n"
    root = proxmox_root(tmp_path, **{"smartctl --scan-open": (0, scan)})
    section = section_of(root)
    assert section.health["sda"] == Unknown(
        f"logical volume of megaraid_sas host0: its health is that of its drives ({DISK0})")
    assert drive_findings(root) == {}


def test_a_failing_drive_behind_the_controller_is_named_by_its_address(tmp_path):
    text = field_roots.output(PROXMOX, "smartctl-a-d-megaraid0-dev-bus-0.txt").replace(
        "  5 Reallocated_Sector_Ct   -O--CK   100   100   000    -    0",
        "  5 Reallocated_Sector_Ct   -O--CK   100   100   000    -    24")
    found = drive_findings(proxmox_root(tmp_path, **{"smartctl -a -d megaraid,0 /dev/bus/0": (0, text)}))
    finding = found[("smart.reallocated_sector_ct", DISK0)]
    assert finding.level == Level.WARN and finding.evidence == ["5 Reallocated_Sector_Ct raw 24"]


def test_a_hung_drive_is_unknown_with_its_address(tmp_path):
    root = proxmox_root(tmp_path)
    sidecar = json.loads((root / "inspector-sidecar.json").read_text())
    sidecar["facts"]["command"]["smartctl --json -a -d megaraid,1 /dev/bus/0"] = {
        "argv": [], "returncode": None, "stdout": "", "stderr": "", "error": "smartctl timed out after 5 s",
        "duration": 5.0}
    (root / "inspector-sidecar.json").write_text(json.dumps(sidecar))
    finding = drive_findings(root)[("drive.health_unknown", DISK1)]
    assert "timed out" in finding.message and "hangs" in finding.advice
    assert finding.evidence == [f"smartctl -a {DISK1}: smartctl timed out after 5 s"]


def test_without_the_scan_the_volumes_drives_are_unknown_with_the_reason(tmp_path):
    root = proxmox_root(tmp_path, **{"smartctl --scan-open": None})
    finding = drive_findings(root)[("drive.health_unknown", "sda")]
    assert finding.message == (f"drive health unknown: smartctl could not open it: Smartctl open device: "
                               f"/dev/sda failed: {MEGARAID_HINT}; logical volume of megaraid_sas host0: "
                               "not all its physical drives were read (smartctl --scan-open: not recorded in "
                               "capture (command smartctl --scan-open))")
    assert "--scan-open" in finding.advice and "storcli64" in finding.advice


def test_a_controller_with_no_volume_shows_its_drives_under_it(tmp_path):
    r = field_roots.root(tmp_path / "root")
    host_dir = "devices/pci0000:17/0000:17:00.0/0000:18:00.0/host0"
    r.write(f"sys/{host_dir}/scsi_host/host0/proc_name", "megaraid_sas")
    r.link("sys/class/scsi_host/host0", f"sys/{host_dir}/scsi_host/host0")
    r.write("sys/block/.keep", "")
    field_roots.sidecar(r.path, {
        "smartctl --scan-open": (0, field_roots.output(LONE, "smartctl-scan-open.txt")),
        "smartctl -a -d sat+megaraid,60 /dev/bus/0":
            (0, field_roots.output(LONE, "smartctl-a-d-sat+megaraid60-dev-bus-0.txt"))})
    section = section_of(Path(r.path))
    assert section.controllers is not None
    (drive,) = section.controllers.drives      # the NVMe lines are no controller's drives
    assert (drive.address, drive.volumes, drive.placement) == (
        "/dev/bus/0 -d sat+megaraid,60", [], "host0 shows no volume: a drive of the controller alone")
    health = section.health[drive.address]
    assert (health.model, health.temperature_c, health.smart_passed) == ("INTEL SSDSC2KB480G8", 19, True)
    text = rendered(section)
    assert "host0" in text and "megaraid_sas: no volume shown" in text and "└─sat+megaraid,60" in text


def test_json_of_a_sas_drive_behind_megaraid():
    doc = (FIXTURES / "field/smartctl-megaraid-json/smartctl-json-d-megaraid1-dev-bus-0.json").read_text()
    h = smart.parse_smartctl(doc, DISK1)
    assert (h.protocol, h.model, h.smart_passed, h.grown_defects, h.temperature_c, h.capacity_bytes) == \
        ("SCSI", "TOSHIBA MG08SCA16TEY", True, 0, 31, 16000900661248)
    assert device_findings(DISK1, h) == []


def test_a_host_without_raid_controller_runs_no_scan(tmp_path):
    r = field_roots.root(tmp_path / "root")
    field_roots.controller_disk(r, "sda", 0, "8:0", 1000, driver="ahci", vendor="ATA", model="ST4000NM0035")
    r.finish()
    field_roots.sidecar(r.path, {})
    section = section_of(Path(r.path))
    assert section.controllers is None


# ----------------------------------------------------------------------------- storcli / perccli
from inspector.discover import raid_cli  # noqa: E402
from inspector.health.drives import raid_cli_findings  # noqa: E402

STORCLI = (FIXTURES / "field/storcli-9260-4i/storcli-c0-show-j.json").read_text()


def test_storcli_json_volumes_and_drives():
    report = raid_cli.parse_show_all(STORCLI)
    (c,) = report.controllers
    assert (c.controller, c.product, c.status) == (0, "LSI MegaRAID SAS 9260-4i", "Success")
    assert [(v.dg_vd, v.raid, v.state, v.name, v.size) for v in c.volumes] == \
        [("0/0", "RAID1", "Optl", "test_raid1", "931.0 GB")]
    assert [(d.slot, d.did, d.state, d.dg) for d in c.drives] == [
        ("252:0", 5, "Onln", 0), ("252:1", 6, "Onln", 0), ("252:2", 7, "DHS", 0), ("252:3", 4, "UGood", None)]
    assert raid_cli_findings(report) == []      # optimal, online, spares: nothing to say


def test_storcli_degraded_volume_and_failed_drive_are_critical():
    doc = json.loads(STORCLI)
    data = doc["Controllers"][0]["Response Data"]
    data["VD LIST"][0]["State"] = "Dgrd"
    data["PD LIST"][1]["State"] = "Failed"
    data["PD LIST"][2]["State"] = "Rbld"
    found = {(f.code, f.subject): f for f in raid_cli_findings(raid_cli.parse_show_all(json.dumps(doc)))}
    vd = found[("raid.volume_state", "/c0/v0")]
    assert vd.level == Level.CRIT and "virtual drive 0/0 (RAID1 931.0 GB test_raid1) is degraded" in vd.message
    assert vd.evidence == ["storcli64 /call show all J: VD LIST 0/0 State Dgrd"]
    failed = found[("raid.disk_state", "/c0/e252/s1")]
    assert failed.level == Level.CRIT and "DID 6" in failed.message and "megaraid,6" in failed.advice
    assert found[("raid.disk_state", "/c0/e252/s2")].level == Level.WARN


def test_storcli_answer_joins_the_smartctl_drives_and_the_findings(tmp_path):
    doc = json.loads(STORCLI)
    doc["Controllers"][0]["Response Data"]["PD LIST"][0]["DID"] = 0   # the proxmox2 drive's DID
    doc["Controllers"][0]["Response Data"]["VD LIST"][0]["State"] = "Pdgd"
    root = proxmox_root(tmp_path, **{"storcli64 /call show all J": (0, json.dumps(doc))})
    section = section_of(root)
    assert section.controllers is not None
    assert isinstance(section.controllers.cli, raid_cli.RaidCliReport)
    assert section.controllers.cli.tool == "storcli64"
    disk0 = next(d for d in section.controllers.drives if d.address == DISK0)
    assert disk0.cli == "252:0 online in DG 0 (storcli64)"
    found = {(f.code, f.subject): f for f in build_report(HostRoot(str(root)), ["storage"]).findings}
    assert found[("raid.volume_state", "/c0/v0")].level == Level.WARN    # partially degraded


def test_no_megaraid_cli_is_unknown_with_each_tools_reason(tmp_path):
    section = section_of(proxmox_root(tmp_path))
    assert section.controllers is not None
    assert isinstance(section.controllers.cli, Unknown)
    assert section.controllers.cli.reason.startswith("no MegaRAID CLI: not recorded in capture (command "
                                                     "storcli64 /call show all J)")


@settings(max_examples=100, deadline=None)
@given(st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=8),
                    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
                        st.sampled_from(["Controllers", "Command Status", "Response Data", "VD LIST",
                                         "PD LIST", "DID", "State", "DG", "Controller", "Basics"]),
                        inner, max_size=4), max_leaves=20))
def test_storcli_parser_takes_odd_json(doc):
    try:
        raid_cli_findings(raid_cli.parse_show_all(json.dumps(doc)))
    except ValueError:
        pass
