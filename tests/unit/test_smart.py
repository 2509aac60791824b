"""smartctl --json -a parser for SATA/SAS: exit-status bits, watched attributes, rules."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from inspector.discover import smart
from inspector.discover.drive_cmd import ParseError
from inspector.health.drives import smart_findings
from inspector.model import Level, Unknown

SAMPLES = Path(__file__).parents[1] / "fixtures/samples/smartctl"
SATA = (SAMPLES / "sata-healthy.json").read_text()
VDA = (SAMPLES / "vda-virtio.json").read_text()


def codes(findings):
    return {(f.level, f.code) for f in findings}


def variant(exit_status=None, passed=None, raws=None, temp=None, **top):
    doc = json.loads(SATA)
    if exit_status is not None:
        doc["smartctl"]["exit_status"] = exit_status
    if passed is not None:
        doc["smart_status"]["passed"] = passed
    for row in doc["ata_smart_attributes"]["table"]:
        if raws and row["id"] in raws:
            row["raw"] = {"value": raws[row["id"]], "string": str(raws[row["id"]])}
    if temp is not None:
        doc["temperature"]["current"] = temp
    doc.update(top)
    return smart.parse_smartctl(json.dumps(doc), "sda")


def test_healthy_sata():
    h = smart.parse_smartctl(SATA, "sda")
    assert (h.protocol, h.model, h.serial, h.firmware) == ("ATA", "ST4000NM0035-1V4107", "ZC1A2B3C", "TN03")
    assert (h.smart_passed, h.exit_status, h.exit_status_bits) == (True, 0, [])
    assert (h.temperature_c, h.power_on_hours) == (34, 32811)
    assert sorted(h.attributes) == [5, 187, 197, 198, 199]
    assert h.attributes[5].thresh == 10 and h.attributes[5].raw == 0
    assert smart_findings("sda", h) == []


def test_exit_status_bits_decoded():
    assert smart.decode_exit_status(0) == []
    assert smart.decode_exit_status(0x08 | 0x40) == ["SMART status check returned DISK FAILING",
                                                     "device error log contains errors"]
    assert len(smart.decode_exit_status(0xFF)) == 8


@pytest.mark.parametrize("kwargs,expected", [
    ({"passed": False, "exit_status": 8}, {(Level.CRIT, "smart.failed")}),
    ({"exit_status": 16}, {(Level.CRIT, "smart.exit_status")}),
    ({"exit_status": 128}, {(Level.CRIT, "smart.exit_status")}),
    ({"exit_status": 64}, {(Level.WARN, "smart.logged_errors")}),
    ({"exit_status": 32}, {(Level.WARN, "smart.logged_errors")}),
    ({"raws": {5: 24}}, {(Level.WARN, "smart.reallocated_sector_ct")}),
    ({"raws": {187: 1}}, {(Level.WARN, "smart.reported_uncorrect")}),
    ({"raws": {197: 8}}, {(Level.WARN, "smart.current_pending_sector")}),
    ({"raws": {198: 8}}, {(Level.WARN, "smart.offline_uncorrectable")}),
    ({"raws": {199: 12}}, {(Level.WARN, "smart.crc_errors")}),
    ({"temp": 61}, {(Level.WARN, "smart.hot")}),
    ({"scsi_grown_defect_list": 3}, {(Level.WARN, "smart.grown_defects")}),
])
def test_derived_states(kwargs, expected):
    findings = smart_findings("sda", variant(**kwargs))
    assert codes(findings) == expected
    assert all(f.evidence for f in findings)


def test_crc_advice_points_at_cabling():
    (f,) = smart_findings("sda", variant(raws={199: 3}))
    assert "cable" in f.advice and f.evidence == ["199 UDMA_CRC_Error_Count raw 3"]


def test_real_virtio_output_is_unknown_with_reason():
    h = smart.parse_smartctl(VDA, "vda")
    reason = smart.usable(h)
    assert isinstance(reason, Unknown)
    assert "Unable to detect device type" in reason.reason


def test_disk_without_smart_support_is_unknown():
    doc = {"smartctl": {"exit_status": 4}, "device": {"protocol": "SCSI"}, "scsi_vendor": "QEMU",
           "scsi_product": "QEMU HARDDISK", "smart_support": {"available": False}}
    h = smart.parse_smartctl(json.dumps(doc), "sda")
    assert smart.usable(h) == Unknown("smartctl: device has no SMART support (QEMU QEMU HARDDISK)")


def test_sas_drive_without_ata_table():
    doc = {"smartctl": {"exit_status": 0}, "device": {"protocol": "SCSI"}, "scsi_vendor": "SEAGATE",
           "scsi_product": "ST1200MM0088", "smart_status": {"passed": True},
           "temperature": {"current": 30}, "scsi_grown_defect_list": 0}
    h = smart.parse_smartctl(json.dumps(doc), "sdb")
    assert (h.model, h.protocol, h.grown_defects) == ("SEAGATE ST1200MM0088", "SCSI", 0)
    assert smart_findings("sdb", h) == []


@pytest.mark.parametrize("text", ["", "{}", "[1]", "smartctl 7.3\n", '{"smartctl": 1}'])
def test_garbage(text):
    with pytest.raises(ParseError):
        smart.parse_smartctl(text)


_scalar = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=6)
_row = st.fixed_dictionaries({"id": st.sampled_from([5, 187, 197, 198, 199, 9]) | _scalar},
                             optional={"raw": st.dictionaries(st.sampled_from(["value", "string"]), _scalar)
                                       | _scalar, "name": _scalar, "value": _scalar,
                                       "when_failed": _scalar})


@settings(max_examples=150, deadline=None)
@given(st.fixed_dictionaries(
    {"smartctl": st.fixed_dictionaries({}, optional={"exit_status": _scalar,
                                                      "messages": st.lists(_scalar | st.dictionaries(
                                                          st.just("string"), _scalar), max_size=2)})},
    optional={"smart_status": st.dictionaries(st.just("passed"), _scalar) | _scalar,
              "temperature": st.dictionaries(st.just("current"), _scalar) | _scalar,
              "power_on_time": st.dictionaries(st.just("hours"), _scalar) | _scalar,
              "ata_smart_attributes": st.fixed_dictionaries({"table": st.lists(_row, max_size=4) | _scalar}),
              "scsi_grown_defect_list": _scalar, "model_name": _scalar}))
def test_parser_never_crashes_on_odd_json(doc):
    h = smart.parse_smartctl(json.dumps(doc), "sdx")
    smart.usable(h)
    smart_findings("sdx", h)


@settings(max_examples=100, deadline=None)
@given(st.text())
def test_parser_never_crashes_on_text(text):
    try:
        smart.parse_smartctl(text)
    except ParseError:
        pass
