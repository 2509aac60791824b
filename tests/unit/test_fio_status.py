"""fio-status parsers (VSL 3 / VSL 2 text, -fj JSON), controller mapping, and Fusion-io rules."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from inspector.discover import fio_status
from inspector.discover.drive_cmd import ParseError
from inspector.health.drives import fio_findings
from inspector.model import Level, Unknown

SAMPLES = Path(__file__).parents[1] / "fixtures/samples/fio-status"
VSL3 = (SAMPLES / "iodrive2-vsl3-healthy.txt").read_text()
FAILED = (SAMPLES / "iodrive2-offline-readonly.txt").read_text()
VSL2 = (SAMPLES / "vsl2-attached-as.txt").read_text()
FJ = (SAMPLES / "fio-status-fj-healthy.json").read_text()


def codes(findings):
    return {(f.level, f.code) for f in findings}


def only(text: str):
    (c,) = fio_status.parse_text(text).controllers
    return c


def test_vsl3_healthy_sample():
    status = fio_status.parse_text(VSL3)
    assert status.driver_version == "3.2.16 build 1731"
    (c,) = status.controllers
    assert (c.controller, c.device, c.state) == ("fct0", "fioa", "attached")
    assert c.mapping == "fio-status (contained VSUs)"
    assert c.power_loss_protection == "protected"
    assert c.pcie_link == "4 lanes at 5.0 Gt/sec each, 2000.00 MBytes/sec total"
    assert c.pci_address == "00:04.0"
    assert c.firmware == "v7.1.15, rev 110356 Public"
    assert (c.temperature_c, c.temperature_max_c) == (64.47, 64.97)
    assert (c.media_status, c.reserves_pct, c.reserves_warn_pct) == ("Healthy", 100.0, 10.0)
    assert (c.rated_pbw, c.pbw_remaining_pct) == (17.0, 99.46)
    assert c.physical_bytes_written == 92553058889120
    assert (c.product, c.serial) == ("F00-001-1T20-CS-0001", "1241D0259")
    assert c.vsu_state == "Online"
    assert not (c.read_only or c.reduced_write or c.active_errors or c.offline)
    assert fio_findings("fioa", c) == []


def test_failed_offline_read_only_sample():
    c = only(FAILED)
    assert (c.controller, c.state, c.offline) == ("fct0", "failed", True)
    assert c.failed_reason == "DEVICE IS OFFLINE. ALL READS AND WRITES WILL FAIL!"
    assert c.active_errors and c.read_only
    assert isinstance(c.device, Unknown)
    assert codes(fio_findings("fct0", c)) == {(Level.CRIT, "fio.failed"), (Level.CRIT, "fio.read_only")}
    read_only = [f for f in fio_findings("fct0", c) if f.code == "fio.read_only"][0]
    assert read_only.evidence == ["WARNING: READ-ONLY MODE. ALL WRITES WILL FAIL!"]


def test_vsl2_attached_as_layout():
    c = only(VSL2)
    assert (c.controller, c.device, c.state) == ("fct0", "fioa", "attached")
    assert c.mapping == "fio-status (attached as)"
    assert (c.temperature_c, c.board_temperature_c) == (47.7, 42)
    assert (c.media_status, c.reserves_pct) == ("Healthy", 100.0)
    assert (c.write_reduced_threshold_pct, c.read_only_threshold_pct) == (96.0, 94.0)
    assert c.physical_bytes_written == 275933273649736
    assert fio_findings("fioa", c) == []


def test_hp_media_status_with_data_field():
    c = only(VSL2.replace("warn at 10.00%", "warn at 10.00%; Data: 99.12%"))
    assert (c.reserves_pct, c.reserves_warn_pct) == (100.0, 10.0)


@pytest.mark.parametrize("old,new,expected", [
    ("Reserves: 100.00%", "Reserves: 9.50%", {(Level.WARN, "fio.reserves_low")}),
    ("Reserves: 100.00%", "Reserves: 10.00%", {(Level.WARN, "fio.reserves_low")}),
    ("Healthy; Reserves: 100.00%", "Reduced-write; Reserves: 0.00%",
     {(Level.CRIT, "fio.reduced_write"), (Level.CRIT, "fio.reserves_exhausted")}),
    ("Healthy; Reserves: 100.00%", "Read-only; Reserves: 0.00%",
     {(Level.CRIT, "fio.read_only"), (Level.CRIT, "fio.reserves_exhausted")}),
    ("99.46% remaining", "8.10% remaining", {(Level.WARN, "fio.endurance_low")}),
    ("Internal temperature: 64.47", "Internal temperature: 78.00", {(Level.WARN, "fio.hot")}),
    ("Internal temperature: 64.47", "Internal temperature: 86.10", {(Level.CRIT, "fio.hot")}),
    ("Powerloss protection: protected", "Powerloss protection: not protected",
     {(Level.WARN, "fio.power_loss")}),
    ("fct0\tAttached", "fct0\tDetached", {(Level.WARN, "fio.detached")}),
])
def test_vsl3_derived_states(old, new, expected):
    variant = VSL3.replace(old, new)
    assert variant != VSL3
    findings = fio_findings("fioa", only(variant))
    assert codes(findings) == expected
    assert all(f.evidence for f in findings)


def test_active_errors_alone_is_a_warning():
    variant = VSL3.replace("\tPowerloss", "!! ---> There are active errors or warnings on this device!\n\tPowerloss", 1)
    assert codes(fio_findings("fioa", only(variant))) == {(Level.WARN, "fio.active_errors")}


def test_reduced_write_mode_line():
    variant = VSL3.replace("\tPowerloss", "\tWARNING: REDUCED-WRITE MODE. WRITES ARE THROTTLED\n\tPowerloss", 1)
    assert (Level.CRIT, "fio.reduced_write") in codes(fio_findings("fioa", only(variant)))


def test_json_form():
    status = fio_status.parse_json(FJ)
    (c,) = status.controllers
    assert (c.controller, c.device, c.state) == ("fct0", "fioa", "attached")
    assert (c.reserves_pct, c.reserves_warn_pct, c.pbw_remaining_pct) == (100.0, 10.0, 99.46)
    assert (c.temperature_c, c.temperature_warn_c, c.pcie_errors) == (64.47, 78.0, False)
    assert fio_findings("fioa", c) == []


@pytest.mark.parametrize("changes,expected", [
    ({"reserve_status": "Read-only", "reserve_space_pct": "0.00"},
     {(Level.CRIT, "fio.read_only"), (Level.CRIT, "fio.reserves_exhausted")}),
    ({"reserve_space_pct": "5.00"}, {(Level.WARN, "fio.reserves_low")}),
    ({"temp_internal_deg_c": "79.5"}, {(Level.WARN, "fio.hot")}),
    ({"has_pcie_errors": "1"}, {(Level.WARN, "fio.pcie_errors")}),
    ({"iom_state": "Failed: DEVICE IS OFFLINE"}, {(Level.CRIT, "fio.failed")}),
])
def test_json_derived_states(changes, expected):
    doc = json.loads(FJ)
    doc["adapter"][0]["iomemory"][0].update(changes)
    (c,) = fio_status.parse_json(json.dumps(doc)).controllers
    assert codes(fio_findings("fioa", c)) == expected


def test_two_cards_map_by_name_and_failed_one_keeps_controller_name():
    text = VSL3 + "\n" + FAILED.replace("fct0", "fct1")
    mapped = fio_status.map_devices(fio_status.parse_text(text), ["fioa"])
    assert set(mapped) == {"fioa", "fct1"}
    assert mapped["fct1"].state == "failed"


def test_unnamed_attached_controllers_pair_by_order():
    status = fio_status.FioStatus(controllers=[
        fio_status.FioHealth(controller="fct1", state="attached"),
        fio_status.FioHealth(controller="fct0", state="attached")])
    mapped = fio_status.map_devices(status, ["fiob", "fioa"])
    assert mapped["fioa"].controller == "fct0" and mapped["fiob"].controller == "fct1"
    assert mapped["fioa"].mapping.startswith("by order")


@pytest.mark.parametrize("text", ["", "fio-status: command not found\n", "Usage: fio-status [-a]\n"])
def test_text_garbage(text):
    with pytest.raises(ParseError):
        fio_status.parse_text(text)


@pytest.mark.parametrize("header", ["fct0 :odd", "fct0", "fct0\t: Failed"])
def test_odd_status_lines(header):
    c = only(header + "\n")
    assert c.controller == "fct0" and c.state == "unknown"


@pytest.mark.parametrize("cut_line", ["\tPCIe negotiated link", "\tReserve space status", "\tMedia status"])
def test_truncated_label_without_colon(cut_line):
    only("fct0\tAttached\n" + cut_line + "\n")     # found by hypothesis: must not raise


def test_no_devices_is_not_garbage():
    assert fio_status.parse_text("Found 0 ioMemory devices in this system\n").controllers == []


@pytest.mark.parametrize("text", ["", "[]", "{}", '{"adapter": 3}', "not json", "[" * 5000])
def test_json_garbage(text):
    with pytest.raises(ParseError):
        fio_status.parse_json(text)


@settings(max_examples=150, deadline=None)
@given(st.text())
def test_text_parser_never_crashes(text):
    try:
        status = fio_status.parse_text(text)
    except ParseError:
        return
    for c in status.controllers:
        fio_findings(c.controller, c)


@settings(max_examples=100, deadline=None)
@given(st.integers(min_value=0, max_value=len(VSL3)), st.text(max_size=30))
def test_truncated_vsl3(cut, junk):
    try:
        status = fio_status.parse_text(VSL3[:cut] + junk)
    except ParseError:
        return
    for c in status.controllers:
        fio_findings(c.controller, c)


_json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=10)
_iom_keys = st.sampled_from(["device_path", "iom_state", "reserve_status", "reserve_space_pct",
                             "rated_writes_remaining_percent", "temp_internal_deg_c", "vsu",
                             "has_pcie_errors", "reserve_warning_threshold_percent", "read_only"])


@settings(max_examples=150, deadline=None)
@given(st.lists(st.dictionaries(_iom_keys, _json_values, max_size=6), max_size=3))
def test_json_parser_never_crashes(ioms):
    doc = json.dumps({"adapter": [{"iomemory": ioms}]})
    for c in fio_status.parse_json(doc).controllers:
        fio_findings(c.controller, c)
