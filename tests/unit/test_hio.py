"""hio_info parser (real ES3000 sample + derived states), trend store, and hio health rules."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from inspector.discover import drive_state, hio
from inspector.discover.drive_cmd import ParseError
from inspector.discover.drive_state import Trend, TrendStore, next_trend, rose
from inspector.health.drives import hio_findings
from inspector.model import Level, Unknown
from inspector.roots.host import HostRoot

SAMPLE = (Path(__file__).parents[1] / "fixtures/samples/hio_info/es3000-healthy.txt").read_text()


def codes(findings):
    return {(f.level, f.code) for f in findings}


def test_real_sample_every_field():
    h = hio.parse_hio_info(SAMPLE, "hioa")
    assert h.device_in_output == "hioa"
    assert (h.size_gb, h.max_size_gb) == (1204, 1204)
    assert h.serial == "030PXS10D4000029"
    assert h.driver_version == "2.0.0.39"
    assert (h.bridge_firmware, h.controller_firmware, h.battery_firmware) == ("320", "320", "111")
    assert h.battery_status == "OK"
    assert h.run_time_s == 1816611
    assert (h.total_io_read, h.total_io_write) == (259518244, 298356159)
    assert (h.total_read_mb, h.total_write_mb) == (1729073, 1828273)
    assert (h.io_timeout, h.rw_error, h.max_bit_flip, h.average_erase_count) == (0, 0, 5, 1)
    assert h.max_bad_block_rate_pct == pytest.approx(0.112)
    assert (h.event_log, h.health) == ("OK", "OK")
    # every labelled line became a field with its evidence
    assert len(h.evidence) == len(hio.LABELS) == 20
    assert h.evidence["size_gb"] == "hioa Size(GB): 1204"
    assert hio_findings("hioa", h) == []


@pytest.mark.parametrize("old,new,expected", [
    ("Health: OK", "Health: Degraded", (Level.CRIT, "hio.health")),
    ("Event log: OK", "Event log: Bad Block close to limit", (Level.CRIT, "hio.event_log")),
    ("Battery status: OK", "Battery status: warning", (Level.CRIT, "hio.battery")),
    ("Battery status: OK", "Battery status: charging", (Level.CRIT, "hio.battery")),
    ("R/W error: 0", "R/W error: 2", (Level.CRIT, "hio.rw_error")),
    ("IO timeout: 0", "IO timeout: 7", (Level.WARN, "hio.io_timeout")),
])
def test_derived_states(old, new, expected):
    variant = SAMPLE.replace(old, new)
    assert variant != SAMPLE
    findings = hio_findings("hioa", hio.parse_hio_info(variant, "hioa"))
    assert codes(findings) == {expected}
    assert new in findings[0].evidence


def test_rising_bad_block_rate_finding_carries_both_readings():
    h = hio.parse_hio_info(SAMPLE.replace("0.112%", "0.140%"), "hioa")
    h.bad_block_rate_rose_from = 0.112
    (finding,) = hio_findings("hioa", h)
    assert (finding.level, finding.code) == (Level.WARN, "hio.bad_block_rising")
    assert finding.evidence == ["Max bad block rate: 0.140%", "previous reading: 0.112%"]


def test_hot_controller():
    h = hio.parse_hio_info(SAMPLE, "hioa")
    h.temperature_c, h.evidence["temperature_c"] = 91.0, "temperature: 91 C"
    (finding,) = hio_findings("hioa", h)
    assert (finding.level, finding.code, finding.evidence) == (Level.CRIT, "hio.hot", ["temperature: 91 C"])


def test_unparsable_value_is_unknown_not_zero():
    h = hio.parse_hio_info(SAMPLE.replace("IO timeout: 0", "IO timeout: n/a"), "hioa")
    assert isinstance(h.io_timeout, Unknown)
    assert hio_findings("hioa", h) == []


@pytest.mark.parametrize("text", ["", "garbage\n", "Usage: hio_info -d dev\n", "\x00\xff:"])
def test_garbage_raises_parse_error(text):
    with pytest.raises(ParseError):
        hio.parse_hio_info(text)


@settings(max_examples=200, deadline=None)
@given(st.text())
def test_parser_never_crashes(text):
    try:
        h = hio.parse_hio_info(text)
    except ParseError:
        return
    hio_findings("x", h)


@settings(max_examples=100, deadline=None)
@given(st.integers(min_value=0, max_value=len(SAMPLE)), st.text(max_size=20))
def test_truncated_or_corrupted_sample(cut, junk):
    try:
        h = hio.parse_hio_info(SAMPLE[:cut] + junk)
    except ParseError:
        return
    hio_findings("x", h)


def test_temperature_output():
    assert hio.parse_hio_temperature("hioa temperature: 52 C\n") == 52
    assert hio.parse_hio_temperature("48\n") == 48
    assert hio.parse_hio_temperature("no sensor\n") is None


# ------------------------------------------------------------------ trend (pure + store)
def test_rose_is_pure_comparison():
    assert rose(0.112, 0.135)
    assert not rose(0.135, 0.135)
    assert not rose(0.135, 0.112)
    assert not rose(None, 0.1)


def test_next_trend_keeps_a_rise_for_the_window_then_forgets_it():
    t0 = next_trend(None, 0.112, now=1000)
    assert t0.rose_from is None
    t1 = next_trend(t0, 0.135, now=2000)
    assert (t1.rose_from, t1.rose_at) == (0.112, 2000)
    t2 = next_trend(t1, 0.135, now=3000)             # next run: still reported
    assert t2.rose_from == 0.112
    t3 = next_trend(t2, 0.135, now=2000 + drive_state.RISE_WINDOW_S + 1)
    assert t3.rose_from is None                      # old news after the window


def test_store_persists_and_survives_corruption(tmp_path):
    store = TrendStore(str(tmp_path))
    before, after = store.update("k", 0.1, now=1)
    assert before is None and after.value == 0.1
    before, after = TrendStore(str(tmp_path)).update("k", 0.2, now=2)
    assert before is not None and before.value == 0.1 and after.rose_from == 0.1
    Path(store.path).write_text("{not json")
    assert store.get("k") is None
    store.update("k", 0.3, now=3)
    assert json.loads(Path(store.path).read_text())["k"]["value"] == 0.3


def test_state_dir_rules(monkeypatch):
    assert drive_state.state_dir({"INSPECTOR_STATE_DIR": "/x"}) == "/x"
    monkeypatch.setattr(drive_state.os, "geteuid", lambda: 1000)
    assert drive_state.state_dir({"XDG_STATE_HOME": "/s"}) == "/s/inspector"
    monkeypatch.setattr(drive_state.os, "geteuid", lambda: 0)
    assert drive_state.state_dir({}) == "/var/lib/inspector"


def test_capture_uses_recorded_trend_and_never_writes(tmp_path, monkeypatch):
    monkeypatch.setenv("INSPECTOR_STATE_DIR", str(tmp_path / "state"))
    key = "hio:030PXS10D4000029:bad_block_rate"
    sidecar = {"version": 1, "facts": {
        "command": {"hio_info -d /dev/hioa": {"argv": ["hio_info", "-d", "/dev/hioa"], "returncode": 0,
                                              "stdout": SAMPLE.replace("0.112%", "0.2%"), "stderr": "",
                                              "error": None, "duration": 0.1}},
        "drive_trend": {key: Trend(0.2, 5.0, rose_from=0.112, rose_at=5.0).to_json()}}}
    (tmp_path / "inspector-sidecar.json").write_text(json.dumps(sidecar))
    h = hio.collect(HostRoot(str(tmp_path)), "hioa", timeout=1)
    assert isinstance(h, hio.HioHealth), h
    assert h.bad_block_rate_rose_from == 0.112
    assert "rose from 0.112% to 0.2%" in h.bad_block_trend
    assert isinstance(h.temperature_c, Unknown)       # hio_temperature not recorded
    assert not (tmp_path / "state").exists()


def test_store_does_not_rewrite_unchanged_values(tmp_path, monkeypatch):
    store = TrendStore(str(tmp_path))
    saves = []
    real_save = store._save

    def counted_save(data: dict) -> None:
        saves.append(1)
        real_save(data)
    monkeypatch.setattr(store, "_save", counted_save)
    store.update("k", 0.1, now=1)
    store.update("k", 0.1, now=2)      # a TUI refresh: same value, no write
    store.update("k", 0.2, now=3)      # a rise: written
    assert len(saves) == 2
    trend = store.get("k")
    assert trend is not None and trend.rose_from == 0.1


def test_live_collect_without_store_has_no_trend(tmp_path, monkeypatch):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    tool = bin_dir / "hio_info"
    tool.write_text(f"#!/bin/sh\nexec /bin/cat '{tmp_path}/out.txt'\n")
    tool.chmod(0o755)
    (tmp_path / "out.txt").write_text(SAMPLE)
    monkeypatch.setenv("PATH", str(bin_dir))
    h = hio.collect(HostRoot("/"), "hioa", timeout=5, store=None)
    assert isinstance(h, hio.HioHealth), h
    assert h.health == "OK" and h.bad_block_trend == "no earlier value"
    assert h.bad_block_rate_rose_from is None
