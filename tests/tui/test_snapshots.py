"""SVG snapshots of every screen at 80x24 and 200x50: on fixture roots (a capture: no live
data; flash cards, an md array recovering, a Xen guest) and "live" (a fixture with a frozen
sampler and a deterministic history, so the live panels, tables and charts are drawn).

Deterministic: discovery done once per root, no clock on screen, exactly one live sample
(live_interval of an hour). Regenerate after an intended change with
`.venv/bin/pytest tests/tui/test_snapshots.py --snapshot-update` and look at the SVGs.

The five screens of a root at a size are taken in one run of the app, one after the other
(the screenshots are the same as from an app started for each: the baselines did not change
when this came): an app's start and discovery cost more than a screen switch."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from textual.app import App
from textual.pilot import Pilot

from conftest import fixture_root
from frozen import FrozenSampler, frozen_history
from inspector.report.collect import build_report
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


class Taken(App[str]):
    """An app for snap_compare whose run gives a screenshot taken before (in screenshots()):
    the plugin compares it and reports a difference as for an app it ran itself."""

    def __init__(self, svg: str) -> None:
        super().__init__()
        self.svg = svg

    def run(self, *args, **kwargs) -> str:
        return self.svg


def screenshots(app: InspectorApp, size: tuple[int, int]) -> dict[str, str]:
    """Every screen of SCREENS in one run of `app`, each as snap_compare takes it: the keys
    pressed once ready, the screen settled (ready_then), then the plugin's own pauses and
    animations waited before the screenshot (textual._doc.take_svg_screenshot)."""
    async def visit_all(pilot: Pilot[Any]) -> None:
        shots = {}
        await wait_ready(pilot)
        for name, keys in SCREENS.items():
            await pilot.press(*keys)
            for _ in range(3):
                await pilot.pause()
            await pilot.pause()
            await pilot.wait_for_scheduled_animations()
            await pilot.pause()
            await pilot.pause()
            await pilot.wait_for_scheduled_animations()
            shots[name] = app.export_screenshot(title=app.title, simplify=True)
        app.exit(shots)
    shots = app.run(headless=True, size=size, auto_pilot=visit_all)
    assert isinstance(shots, dict) and set(shots) == set(SCREENS), shots
    return shots


@pytest.fixture(scope="module")
def taken() -> Callable[[str, str, tuple[int, int]], Taken]:
    """taken(root, screen, size): that screen's screenshot, from one run per root and size
    ("live": the frozen kvm-virtio-guest). Module-wide, so one xdist worker takes them all."""
    runs: dict[tuple[str, tuple[int, int]], dict[str, str]] = {}

    def get(root: str, screen: str, size: tuple[int, int]) -> Taken:
        if (root, size) not in runs:
            app = frozen_app("kvm-virtio-guest") if root == "live" else make_app(root)
            runs[root, size] = screenshots(app, size)
        return Taken(runs[root, size][screen])
    return get


@pytest.mark.parametrize("size", SIZES, ids=SIZE_IDS)
@pytest.mark.parametrize("screen", list(SCREENS))
@pytest.mark.parametrize("root", ROOTS)
def test_screen(snap_compare, taken, root, screen, size):
    assert snap_compare(taken(root, screen, size), terminal_size=size)


@pytest.mark.parametrize("size", SIZES, ids=SIZE_IDS)
@pytest.mark.parametrize("screen", list(SCREENS))
def test_screen_live(snap_compare, taken, screen, size):
    """kvm-virtio-guest with frozen live figures: every live panel, column and chart drawn."""
    assert snap_compare(taken("live", screen, size), terminal_size=size)


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
