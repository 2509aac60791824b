"""NVMe health: nvme-cli and smartctl JSON parsers, critical-warning bits, sysfs identity, rules."""
from __future__ import annotations

import io
import json
import shutil
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rich.console import Console

from conftest import fixture_root
from inspector.discover import nvme_health
from inspector.discover.drive_cmd import ParseError
from inspector.discover.nvme_health import NvmeHealth, decode_critical_warning
from inspector.health.drives import nvme_findings
from inspector.model import Level, Unknown, to_jsonable
from inspector.outputs.metrics import collect_metrics
from inspector.render.report import render_report
from inspector.report.collect import build_report
from inspector.roots.host import HostRoot

SAMPLES = Path(__file__).parents[1] / "fixtures/samples/nvme"
CLI = (SAMPLES / "nvme-cli-smart-log-healthy.json").read_text()
SMARTCTL = (SAMPLES / "smartctl-nvme-healthy.json").read_text()
FLASH_MIXED = Path(__file__).parents[1] / "fixtures/roots/flash-mixed"


def codes(findings):
    return {(f.level, f.code) for f in findings}


def cli(**changes) -> NvmeHealth:
    doc = json.loads(CLI)
    doc.update(changes)
    return nvme_health.parse_nvme_cli(json.dumps(doc), NvmeHealth(device="nvme0n1"))


def test_nvme_cli_healthy_kelvin_to_celsius():
    h = cli()
    assert h.source == "nvme smart-log"
    assert h.temperature_c == 37                       # 310 K
    assert (h.critical_warning, h.critical_warnings) == (0, [])
    assert (h.available_spare_pct, h.spare_threshold_pct, h.percent_used) == (100, 10, 3)
    assert (h.media_errors, h.error_log_entries, h.power_on_hours, h.unsafe_shutdowns) == (0, 27, 19312, 12)
    assert h.evidence["temperature_c"] == "temperature (K): 310"
    assert nvme_findings("nvme0n1", h) == []


def test_smartctl_nvme_healthy_matches_nvme_cli():
    h = nvme_health.parse_smartctl_nvme(SMARTCTL, NvmeHealth(device="nvme0n1"))
    assert h.source == "smartctl"
    assert (h.temperature_c, h.available_spare_pct, h.spare_threshold_pct, h.percent_used) == (37, 100, 10, 3)
    assert nvme_findings("nvme0n1", h) == []


def test_critical_warning_bits_decoded():
    assert decode_critical_warning(0) == []
    assert decode_critical_warning(0b1001) == ["available spare below threshold",
                                               "media placed in read-only mode"]
    assert decode_critical_warning(0x22) == ["temperature outside threshold",
                                             "persistent memory region read-only"]
    assert decode_critical_warning(0x40) == ["reserved bit 6"]


@pytest.mark.parametrize("changes,expected", [
    ({"critical_warning": 2, "temperature": 358}, {(Level.CRIT, "nvme.critical_warning")}),
    ({"critical_warning": 1, "avail_spare": 9},
     {(Level.CRIT, "nvme.critical_warning"), (Level.CRIT, "nvme.spare_low")}),
    ({"avail_spare": 10}, {(Level.CRIT, "nvme.spare_low")}),
    ({"percent_used": 91}, {(Level.WARN, "nvme.wear")}),
    ({"media_errors": 4}, {(Level.WARN, "nvme.media_errors")}),
    ({"critical_warning": {"value": 8}}, {(Level.CRIT, "nvme.critical_warning")}),
])
def test_derived_states(changes, expected):
    findings = nvme_findings("nvme0n1", cli(**changes))
    assert codes(findings) == expected
    assert all(f.evidence for f in findings)


def test_read_only_bit_message():
    (f,) = nvme_findings("nvme0n1", cli(critical_warning=8))
    assert "read-only" in f.message and f.evidence == ["critical_warning: 8"]


def test_celsius_string_temperature_is_not_converted():
    assert cli(temperature="45 C").temperature_c == 45


def test_sysfs_identity_from_fixture():
    h = nvme_health.sysfs_identity(HostRoot(str(FLASH_MIXED)), "nvme0n1")
    assert (h.controller, h.model, h.serial, h.firmware, h.controller_state) == (
        "nvme0", "SAMSUNG MZQLB1T9HAJR-00007", "S439NA0M500123", "EDA5202Q", "live")
    assert isinstance(h.critical_warning, Unknown)


@pytest.mark.parametrize("text", ["", "{}", "[]", "nope", '{"temperature": 3}'])
def test_garbage(text):
    with pytest.raises(ParseError):
        nvme_health.parse_nvme_cli(text, NvmeHealth(device="x"))
    with pytest.raises(ParseError):
        nvme_health.parse_smartctl_nvme(text, NvmeHealth(device="x"))


_values = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=10) | \
    st.dictionaries(st.sampled_from(["value", "raw"]), st.integers() | st.text(max_size=5), max_size=2)
_keys = st.sampled_from(["critical_warning", "temperature", "avail_spare", "spare_thresh",
                         "percent_used", "media_errors", "num_err_log_entries", "power_on_hours"])


@settings(max_examples=150, deadline=None)
@given(st.dictionaries(_keys, _values))
def test_nvme_cli_parser_never_crashes(doc):
    try:
        h = nvme_health.parse_nvme_cli(json.dumps(doc), NvmeHealth(device="x"))
    except ParseError:
        return
    nvme_findings("x", h)


@settings(max_examples=100, deadline=None)
@given(st.text())
def test_parsers_never_crash_on_text(text):
    for parse in (nvme_health.parse_nvme_cli, nvme_health.parse_smartctl_nvme):
        try:
            parse(text, NvmeHealth(device="x"))
        except ParseError:
            pass


def test_sysfs_only_when_neither_tool_is_installed(tmp_path):
    facts = {" ".join(argv): {"argv": argv, "returncode": None, "stdout": "", "stderr": "",
                              "error": f"{argv[0]} not installed", "duration": 0}
             for argv in (["nvme", "smart-log", "/dev/nvme0n1", "-o", "json"],
                          ["smartctl", "--json", "-a", "/dev/nvme0n1"])}
    (tmp_path / "inspector-sidecar.json").write_text(json.dumps({"version": 1, "facts": {"command": facts}}))
    # a copy: a link to the fixture's sys would leave the root, which --root reads inside it
    shutil.copytree(FLASH_MIXED / "sys", tmp_path / "sys", symlinks=True)
    h = nvme_health.collect(HostRoot(str(tmp_path)), "nvme0n1", 1)
    assert (h.source, h.model, h.controller_state) == ("sysfs", "SAMSUNG MZQLB1T9HAJR-00007", "live")
    assert h.critical_warning == Unknown("neither nvme nor smartctl installed")
    assert nvme_findings("nvme0n1", h) == []


def test_tool_failures_are_reasons_on_every_smart_field(tmp_path):
    facts = {"nvme smart-log /dev/nvme0n1 -o json": {"argv": ["nvme"], "returncode": 1, "stdout": "",
                                                     "stderr": "Permission denied\n", "error": None}}
    (tmp_path / "inspector-sidecar.json").write_text(json.dumps({"version": 1, "facts": {"command": facts}}))
    h = nvme_health.collect(HostRoot(str(tmp_path)), "nvme0n1", 1)
    assert isinstance(h.percent_used, Unknown), h.percent_used
    assert h.percent_used.reason == ("nvme exited with status 1: Permission denied; "
                                     "not recorded in capture (command smartctl --json -a /dev/nvme0n1)")


# An NVMe drive is never "health OK" when its controller is dead or its SMART log unread.

STATE = "sys/devices/pci0000:00/0000:00:1d.0/0000:3d:00.0/nvme/nvme0/state"


SMART_LOG = "nvme smart-log /dev/nvme0n1 -o json"


def _root(tmp_path, state: str, smart_log: dict | None) -> HostRoot:
    root = tmp_path / "root"
    shutil.copytree(fixture_root("flash-mixed"), root, symlinks=True)
    (root / STATE).write_text(state + "\n")
    sidecar = json.loads((root / "inspector-sidecar.json").read_text())
    if smart_log is None:
        del sidecar["facts"]["command"][SMART_LOG]
    else:
        sidecar["facts"]["command"][SMART_LOG] = smart_log
    (root / "inspector-sidecar.json").write_text(json.dumps(sidecar))
    return HostRoot(str(root))


def _text(report) -> str:
    buf = io.StringIO()
    render_report(report, Console(file=buf, width=80, color_system=None))
    return buf.getvalue()


def test_dead_controller_is_a_critical_finding(tmp_path):
    failed = {"argv": SMART_LOG.split(), "returncode": 1, "stdout": "", "error": None,
              "stderr": "NVMe status: Controller is dead\n", "duration": 0.01}
    report = build_report(_root(tmp_path, "dead", failed), ["storage"])
    found = [f for f in report.findings if f.subject == "nvme0n1"]
    assert [(f.level, f.code) for f in found] == [(Level.CRIT, "nvme.controller_state")]
    assert "nvme0 is dead" in found[0].message and "replace" in found[0].advice
    assert "nvme0n1 health CRIT" in _text(report)


def test_resetting_controller_is_a_warning(tmp_path):
    report = build_report(_root(tmp_path, "resetting", None), ["storage"])
    found = [f for f in report.findings if f.subject == "nvme0n1"]
    assert [(f.level, f.code) for f in found] == [(Level.WARN, "nvme.controller_state")]


def test_unread_smart_log_is_health_unknown_not_ok(tmp_path):
    report = build_report(_root(tmp_path, "live", None), ["storage"])
    assert not [f for f in report.findings if f.subject == "nvme0n1"]
    text = _text(report)
    assert "nvme0n1 health UNKNOWN" in text and "nvme0n1 health OK" not in text
    doc = to_jsonable(report)
    assert doc["sections"]["storage"]["health"]["nvme0n1"]["level"] == "unknown"
    level = [s.value for s in collect_metrics(doc) if s.name == "drive_health_level"
             and s.labels.get("device") == "nvme0n1"]
    assert level == [3]
