"""End to end: `inspector report --root flash-mixed` shows each device's health state, with
findings and evidence, in text and JSON (health comes from the recorded command outputs)."""
from __future__ import annotations

from conftest import fixture_root, run_bin, run_cli

ROOT = str(fixture_root("flash-mixed"))


def test_report_json_health_and_findings():
    result = run_cli("report", "--root", ROOT, "--json", "--section", "storage")
    assert result.status == 0, result.err
    doc = result.json()
    health = doc["sections"]["storage"]["health"]
    assert set(health) == {"hioa", "hiob", "fioa", "fct1", "nvme0n1", "sda"}
    assert health["hioa"]["battery_status"] == "warning"
    assert health["hioa"]["bad_block_rate_rose_from"] == 0.112
    assert health["hiob"] == {"unknown": "hio_info timed out after 5 s"}
    assert health["fioa"]["reserves_pct"] == 8.0 and health["fioa"]["controller"] == "fct0"
    assert health["fct1"]["state"] == "failed" and health["fct1"]["read_only"] is True
    assert health["nvme0n1"]["temperature_c"] == 37 and health["nvme0n1"]["critical_warning"] == 0
    assert health["sda"]["attributes"]["199"]["raw"] == 12
    assert {n: h.get("level") for n, h in health.items()} == {
        "hioa": "crit", "hiob": None, "fioa": "warn", "fct1": "crit", "nvme0n1": "ok", "sda": "warn"}
    found = {(f["subject"], f["level"], f["code"]): f for f in doc["findings"]
             if f["code"].split(".")[0] in ("hio", "fio", "smart", "nvme", "drive")}
    assert set(found) == {
        ("hioa", "crit", "hio.battery"), ("hioa", "warn", "hio.io_timeout"),
        ("hioa", "warn", "hio.bad_block_rising"), ("hiob", "unknown", "drive.health_unknown"),
        ("fioa", "warn", "fio.reserves_low"), ("fioa", "warn", "fio.hot"),
        ("fct1", "crit", "fio.failed"), ("fct1", "crit", "fio.read_only"),
        ("sda", "warn", "smart.current_pending_sector"), ("sda", "warn", "smart.crc_errors")}
    assert found[("fioa", "warn", "fio.reserves_low")]["evidence"] == [
        "Reserve space status: Healthy; Reserves: 8.00%, warn at 10.00%"]
    assert found[("sda", "warn", "smart.crc_errors")]["evidence"] == ["199 UDMA_CRC_Error_Count raw 12"]


def test_report_text_shows_health_blocks():
    proc = run_bin("report", "--root", ROOT, "--section", "storage", env={"COLUMNS": "220"})
    assert proc.returncode == 0, proc.stderr
    text = proc.stdout
    for expected in ("health CRIT [hio_info -d /dev/hioa]", "battery warning",
                     "rose from 0.112% to 0.135%", "health: unknown (hio_info timed out after 5 s)",
                     "health WARN [fio-status -a]", "reserves 8% (warn 10%)",
                     "health CRIT [fio-status -a]", "card failed: DEVICE IS OFFLINE",
                     "health OK [nvme smart-log]", "health WARN [smartctl --json -a]",
                     "evidence Battery status: warning"):
        assert expected in text, expected


def test_check_exit_code_is_critical():
    result = run_cli("check", "--root", ROOT)
    assert result.status == 2
    assert "hioa: Battery status: warning" in result.out


def test_export_carries_drive_health_levels():
    result = run_cli("export", "--prometheus", "--root", ROOT)
    assert result.status == 0, result.err
    levels = {line.split('device="')[1].split('"')[0]: line.rsplit(" ", 1)[1]
              for line in result.out.splitlines() if line.startswith("inspector_drive_health_level{")}
    # hiob: hio_info timed out, so its health is unknown: value 3, still a series
    assert levels == {"hioa": "2", "fioa": "1", "fct1": "2", "nvme0n1": "0", "sda": "1", "hiob": "3"}
