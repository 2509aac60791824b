"""SVG snapshots of every screen at 80x24 and 200x50: on fixture roots (a capture: no live
data; flash cards, an md array recovering, a Xen guest) and "live" (a fixture with a frozen
sampler and a deterministic history, so the live panels, tables and charts are drawn).

Deterministic: discovery done once per root, no clock on screen, exactly one live sample
(live_interval of an hour). Regenerate after an intended change with
`.venv/bin/pytest tests/tui/test_snapshots.py --snapshot-update` and look at the SVGs."""
from __future__ import annotations

import pytest
from textual.pilot import Pilot

from conftest import fixture_root
from frozen import FrozenSampler, frozen_history
from inspector.collect import build_report
from inspector.roots.host import HostRoot
from inspector.tui.app import InspectorApp
from test_pilot import wait_for

_REPORTS: dict = {}
SIZES = [(80, 24), (200, 50)]
ROOTS = ["flash-mixed", "storage-raid1-recovering", "xen-pv-guest"]
# screen key, extra keys pressed there
SCREENS = {"overview": ("1",), "storage": ("2",), "virt": ("3",), "net": ("4",), "dns": ("5",)}
SIZE_IDS = lambda s: f"{s[0]}x{s[1]}"  # noqa: E731


def report_of(name: str):
    if name not in _REPORTS:
        _REPORTS[name] = build_report(HostRoot(str(fixture_root(name))))
    return _REPORTS[name]


def make_app(name: str) -> InspectorApp:
    report = report_of(name)
    return InspectorApp(HostRoot(str(fixture_root(name))), sampler=False,
                        collector=lambda r: report)


def frozen_app(name: str) -> InspectorApp:
    report = report_of(name)
    app = InspectorApp(HostRoot(str(fixture_root(name))), collector=lambda r: report,
                       sampler=FrozenSampler(None), live_interval=3600)
    app.sampler = FrozenSampler(frozen_history(report, app.trends))
    return app


async def wait_ready(pilot: Pilot[None]) -> None:
    """Discovery in and, with a sampler, the live sample; then what they queued handled."""
    app = pilot.app
    assert isinstance(app, InspectorApp)
    await wait_for(pilot, lambda: app.report is not None
                   and (app.sampler is None or app.live_sample is not None))
    await pilot.pause()


def ready_then(*keys: str):
    """Wait for the report (and the one live sample), press the keys, then let the screen
    settle: a key that rebuilds a DataTable sizes its columns on a later refresh."""
    async def run_before(pilot) -> None:
        await wait_ready(pilot)
        for key in keys:
            await pilot.press(key)
        for _ in range(3):      # three refreshes: the one that sizes the columns is among them
            await pilot.pause()
    return run_before


@pytest.mark.parametrize("size", SIZES, ids=SIZE_IDS)
@pytest.mark.parametrize("screen", list(SCREENS))
@pytest.mark.parametrize("root", ROOTS)
def test_screen(snap_compare, root, screen, size):
    assert snap_compare(make_app(root), terminal_size=size,
                        run_before=ready_then(*SCREENS[screen]))


@pytest.mark.parametrize("size", SIZES, ids=SIZE_IDS)
@pytest.mark.parametrize("screen", list(SCREENS))
def test_screen_live(snap_compare, screen, size):
    """kvm-virtio-guest with frozen live figures: every live panel, column and chart drawn."""
    assert snap_compare(frozen_app("kvm-virtio-guest"), terminal_size=size,
                        run_before=ready_then(*SCREENS[screen]))


@pytest.mark.parametrize("size", [(80, 24), (120, 40)], ids=SIZE_IDS)
@pytest.mark.parametrize("screen", ["probes"])
def test_screen_kvm_guest(snap_compare, screen, size):
    """The Probes screen (its baselines belong to the probe layer's work)."""
    assert snap_compare(make_app("kvm-virtio-guest"), terminal_size=size,
                        run_before=ready_then("6"))


def test_help_lists_the_keys(snap_compare):
    assert snap_compare(make_app("kvm-virtio-guest"), terminal_size=(80, 24),
                        run_before=ready_then("2", "question_mark"))


def test_overview_80x24_long_findings_list_and_long_hostname(snap_compare):
    """C2: at 80x24 every tab label is whole and a cut findings list says "+N more"."""
    import dataclasses

    from inspector.model import Finding, Level
    app = make_app("flash-mixed")
    report = report_of("flash-mixed")
    changed = dataclasses.replace(
        report, host=dataclasses.replace(report.host, hostname="db-primary-07.dc2.example.internal"),
        findings=list(report.findings) + [Finding(Level.WARN, f"sd{c}", "8 pending sectors "
                                                  "(attribute 197)") for c in "bcdefghij"])
    app.collector = lambda r: changed
    assert snap_compare(app, terminal_size=(80, 24), run_before=ready_then())
