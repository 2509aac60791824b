"""SVG snapshots of every screen on fixture roots at 80x24 and 120x40.

Deterministic: a capture root (no live data, no sampler), discovery done once per root, no
clock on screen. Regenerate after an intended change with
`.venv/bin/pytest tests/tui/test_snapshots.py --snapshot-update` and review the SVGs."""
from __future__ import annotations

import pytest

from conftest import fixture_root
from inspector.collect import build_report
from inspector.host import HostRoot
from inspector.tui.app import InspectorApp

_REPORTS: dict = {}
SIZES = [(80, 24), (120, 40)]
# screen key, extra keys pressed there (storage: highlight the first device to show details)
SCREENS = {"overview": ("1",), "storage": ("2", "down"), "virt": ("3",), "net": ("4",),
           "dns": ("5",), "probes": ("6",)}


def make_app(name: str) -> InspectorApp:
    root = HostRoot(str(fixture_root(name)))
    if name not in _REPORTS:
        _REPORTS[name] = build_report(root)
    return InspectorApp(root, sampler=False, collector=lambda r: _REPORTS[name])


async def wait_report(pilot) -> None:
    for _ in range(200):
        if pilot.app.report is not None:
            break
        await pilot.pause(0.02)
    await pilot.pause()


def wait_report_then(*keys: str):
    """Wait for the report, press the keys, then let the screen settle: a key that rebuilds a
    DataTable (the overview refills its findings on resume/resize) sizes its columns to the
    new rows on a later refresh, and a screenshot taken right after the key press (what
    snap_compare's `press` does) sometimes caught the header-only widths."""
    async def run_before(pilot) -> None:
        await wait_report(pilot)
        for key in keys:
            await pilot.press(key)
        for _ in range(3):
            await pilot.pause(0.05)
    return run_before


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
@pytest.mark.parametrize("screen", list(SCREENS))
def test_screen_kvm_guest(snap_compare, screen, size):
    assert snap_compare(make_app("kvm-virtio-guest"), terminal_size=size,
                        run_before=wait_report_then(*SCREENS[screen]))


@pytest.mark.parametrize("root,screen", [("xen-pv-guest", "overview"), ("xen-pv-guest", "net"),
                                         ("storage-raid1-faulty", "storage"),
                                         # C1: fct1 (failed, no block device) in the tree; B6
                                         ("flash-mixed", "storage"), ("flash-mixed", "net")])
def test_screen_problem_roots(snap_compare, root, screen):
    assert snap_compare(make_app(root), terminal_size=(80, 24),
                        run_before=wait_report_then(*SCREENS[screen]))


def test_overview_80x24_long_findings_list_and_long_hostname(snap_compare):
    """C2: at 80x24 every tab label is whole and a cut findings list says "+N more"."""
    import dataclasses

    from inspector.model import Finding, Level
    app = make_app("flash-mixed")
    report = _REPORTS["flash-mixed"]
    changed = dataclasses.replace(
        report, host=dataclasses.replace(report.host, hostname="db-primary-07.dc2.example.internal"),
        findings=list(report.findings) + [Finding(Level.WARN, f"sd{c}", "8 pending sectors "
                                                  "(attribute 197)") for c in "bcdefghij"])
    app.collector = lambda r: changed
    assert snap_compare(app, terminal_size=(80, 24), run_before=wait_report)
