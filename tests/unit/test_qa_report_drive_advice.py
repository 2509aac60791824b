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
