"""Storage: every block device in one table like `lsblk` with iostat -x columns on each row
(NAME tree-indented, TYPE, SIZE, MOUNT, health level and shorthand, r/s, w/s, await, %util and
a %util sparkline); below it, the selected device's findings with evidence and advice, its
fields grouped, and live await and IOPS charts.

Keys: `/` filters (the first match is selected and the detail follows), `a` shows the empty
devices `report` hides too, `p` opens the IO probe form on the selected device. Live columns
change with update_cell in one batch per sample; rows are rebuilt only when the report, the
filter or the width changes.
"""
from __future__ import annotations

from typing import Any

from rich.console import Group
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.widgets import DataTable, Input, Static

from inspector.config import UTIL_CRIT_PCT, UTIL_WARN_PCT
from inspector.model import Report
from inspector.tui.base import InspectorScreen
from inspector.tui.fields import EditField
from inspector.tui.modelview import get, section_state
from inspector.tui.panels import level_style
from inspector.tui.storage_rows import DeviceRow, device_detail, storage_rows
from inspector.tui.trends import DiskFigure, disk_series
from inspector.widgets import units
from inspector.widgets.chart import LiveChart
from inspector.widgets.spark import sparkline

LIVE_COLUMNS = ("r/s", "w/s", "await", "%util")
TREND_MIN_WIDTH = 100      # below this many columns the sparkline column goes

# the selected device's charts: widget id, the figure it charts
DEVICE_CHARTS: tuple[tuple[str, DiskFigure], ...] = (("#await-chart", "await"), ("#iops-chart", "iops"))


def root_mount_device(section: Any) -> str | None:
    """The device "/" is mounted from, as discovery saw it."""
    for name, dev in (get(section, "devices", default={}) or {}).items():
        if any(m.mountpoint == "/" for m in get(dev, "mounts", default=[]) or []):
            return name
    return None


class StorageScreen(InspectorScreen):
    MODE = "storage"
    AUTO_FOCUS = "#device-table"
    BINDINGS = [Binding("slash", "filter", "Filter", key_display="/", id="storage.filter"),
                Binding("a", "toggle_empty", "Empty devices", id="storage.empty"),
                Binding("p", "probe", "IO probe here", id="storage.probe"),
                Binding("escape", "clear_filter", "Clear filter", show=False,
                        id="storage.clear_filter")]

    def compose_body(self) -> ComposeResult:
        yield EditField(placeholder="filter devices: name, type, mount, health (Enter keeps, "
                                    "Esc clears)", id="tree-filter", edit_on_focus=True,
                        escape_clears=True)
        yield DataTable(id="device-table", cursor_type="row", zebra_stripes=False)
        yield Static(id="storage-note", classes="line")
        with VerticalScroll(id="device-pane"):
            yield Static(id="device-detail")
            yield Static(id="device-iostat", classes="line")
            with Horizontal(id="device-charts"):
                yield LiveChart("await", series=("await",), unit="ms", id="await-chart",
                                placeholder="no live data")
                yield LiveChart("IOPS", series=("r+w",), id="iops-chart",
                                placeholder="no live data")

    def on_mount(self) -> None:
        self._filter = ""
        self._show_empty = False
        self._rows: list[DeviceRow] = []
        self._by_key: dict[str, DeviceRow] = {}
        self._hidden = 0
        self._table_key: Any = None
        self._live_cells: dict[str, tuple] = {}
        self._selected: DeviceRow | None = None
        self._want: str | None = None       # row key to select after a rebuild
        self._trend_w = 0
        super().on_mount()

    # ------------------------------------------------------------------ table
    def _section(self) -> Any:
        report = self.inspector.report
        return report.section("storage") if report else None

    def show_report(self, report: Report | None) -> None:
        section = report.section("storage") if report else None
        findings = report.findings if report else []
        width = self.size.width or self.app.size.width
        key = (id(report), self._filter, self._show_empty, width >= TREND_MIN_WIDTH,
               self.inspector.collect_error)
        if key == self._table_key:
            return
        self._table_key = key
        table = self.query_one("#device-table", DataTable)
        error = self.inspector.collect_error
        state = section_state(section, "storage") if report else (error or "collecting...")
        if state:
            self._rows, self._hidden = [], 0
            table.clear(columns=True)
            table.add_column("storage")
            table.add_row(Text(state, style="yellow"))
            self._show_detail(None, state)
            self._note()
            return
        rows, self._hidden = storage_rows(section, findings, self._show_empty)
        if self._filter:
            needle = self._filter.lower()
            rows = [r for r in rows if needle in " ".join(
                (r.label, r.name, r.type, r.mount, r.health.plain)).lower()]
        first_build = not self._rows and self._selected is None
        self._rows = rows
        self._by_key = {r.key: r for r in rows}
        self._build_table(table, rows, width)
        if self._filter:
            self._want = rows[0].key if rows else None      # the first match
        elif first_build:
            root = root_mount_device(section)
            self._want = next((r.key for r in rows if r.name == root), None)
        elif self._selected is not None:
            self._want = self._selected.key
        self._select(self._want)
        self._note()

    def _build_table(self, table: DataTable, rows: list[DeviceRow], width: int) -> None:
        table.clear(columns=True)
        self._live_cells = {}
        if not rows:
            table.add_column("storage")
            table.add_row(Text("no match" if self._filter else "no devices", style="grey62"))
            self._show_detail(None, "no match" if self._filter else "no devices")
            return
        type_w = min(7, max(4, max(len(r.type) for r in rows)))
        fixed = type_w + 5 + 5 + 5 + 7 + 6 + 2 * 9 + 3      # + cell padding and scrollbar
        name_w, mount_w, health_w = fit_widths(
            width - fixed, [(min(28, max(4, max(len(r.label) for r in rows))), 8),
                            (min(16, max(5, max(len(r.mount) for r in rows))), 5),
                            (min(30, max(6, max(r.health.cell_len for r in rows))), 6)])
        used = fixed + name_w + mount_w + health_w
        self._trend_w = min(60, width - used - 2) if width >= TREND_MIN_WIDTH else 0
        self._trend_w = self._trend_w if self._trend_w >= 8 else 0
        for label, w, key in (("NAME", name_w, "name"), ("TYPE", type_w, "type"),
                              ("SIZE", 5, "size"), ("MOUNT", mount_w, "mount"),
                              ("HEALTH", health_w, "health"), ("r/s", 5, "r/s"),
                              ("w/s", 5, "w/s"), ("await", 7, "await"), ("%util", 6, "%util")):
            table.add_column(label, width=w, key=key)
        if self._trend_w:
            table.add_column("%util trend", width=self._trend_w, key="trend")
        view = self.inspector.live_sample
        disks = {d.name: d for d in view.disks} if view is not None else {}
        for r in rows:
            health = r.health.copy()
            health.truncate(health_w, overflow="ellipsis")
            cells = [Text(_cut(r.label, name_w), style="bold" if r.label[:1] not in "├└│ " else ""),
                     _cut(r.type, type_w), Text(r.size, justify="right"), _cut(r.mount, mount_w),
                     health]
            live = self._live_values(r, disks)
            self._live_cells[r.key] = live
            table.add_row(*cells, *live, key=r.key)

    def _live_values(self, row: DeviceRow, disks: dict) -> tuple:
        d = disks.get(row.name)
        if d is None:
            blank = Text("-", style="grey50", justify="right")
            return (blank,) * (4 + (1 if self._trend_w else 0))
        util_style = level_style(d.util, UTIL_WARN_PCT, UTIL_CRIT_PCT)
        cells: tuple[Text, ...] = (
            Text(units.per_s(d.r_s), justify="right"), Text(units.per_s(d.w_s), justify="right"),
            Text(units.latency_ms(d.await_ms), justify="right"),
            Text(units.pct(d.util), style=util_style, justify="right"))
        if self._trend_w:
            cells += (Text(sparkline(self.inspector.trends.get(disk_series(row.name, "util")),
                                     self._trend_w, 100.0), style=util_style or "cyan"),)
        return cells

    def _note(self) -> None:
        note = Text(no_wrap=True, overflow="ellipsis", style="grey62")
        if self._filter:
            note.append(f"filter '{self._filter}': {len(self._rows)} rows", style="bold yellow")
            note.append("  (esc clears)  ")
        if self._show_empty:
            note.append("empty devices shown (a hides them)")
        elif self._hidden:
            note.append(f"{self._hidden} empty device{'s' if self._hidden > 1 else ''} "
                        "(size 0, e.g. unbound loop) hidden: a shows them")
        self.query_one("#storage-note", Static).update(note)

    def _select(self, key: str | None) -> None:
        table = self.query_one("#device-table", DataTable)
        if not self._rows:
            return
        index = next((i for i, r in enumerate(self._rows) if r.key == key), 0)
        table.move_cursor(row=index)
        self._selected_changed(self._rows[index])

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        row = self._by_key.get(event.row_key.value or "" if event.row_key is not None else "")
        if row is not None and row is not self._selected:
            self._selected_changed(row)

    def _selected_changed(self, row: DeviceRow) -> None:
        self._selected = row
        self._show_detail(row, None)
        self.fill_charts()
        self._iostat_line(self.inspector.live_sample)

    def fill_charts(self) -> None:
        row = self._selected
        if row is None:
            return
        trends = self.inspector.trends
        for chart_id, series in DEVICE_CHARTS:
            chart = self.query_one(chart_id, LiveChart)
            chart.clear()
            chart.extend((v,) for v in trends.get(disk_series(row.name, series)))
        self.charted_from_trends()

    def _show_detail(self, row: DeviceRow | None, state: str | None) -> None:
        detail = self.query_one("#device-detail", Static)
        if state or row is None:
            detail.update(Text(state or "select a device (arrows, / to filter)",
                               style="yellow" if state else "grey62"))
            return
        report = self.inspector.report
        detail.update(Group(*device_detail(self._section(), row,
                                           report.findings if report else [])))
        self.call_after_refresh(self._fit_charts)

    def _fit_charts(self) -> None:
        """The charts take the rows the detail leaves (at least 8: on a small terminal the
        pane scrolls to them)."""
        pane = self.query_one("#device-pane", VerticalScroll)
        used = sum(self.query_one(s).outer_size.height for s in ("#device-detail", "#device-iostat"))
        height = max(8, pane.scrollable_content_region.height - used)
        charts = self.query_one("#device-charts", Horizontal)
        if charts.styles.height is None or charts.styles.height.value != height:
            charts.styles.height = height

    def on_resize(self) -> None:
        super().on_resize()
        self.call_after_refresh(self._fit_charts)

    # ------------------------------------------------------------------ live
    def show_live(self, sample, error) -> None:
        reason = self.live_reason()
        if not reason and sample is not None and self._rows:
            table = self.query_one("#device-table", DataTable)
            disks = {d.name: d for d in sample.disks}
            keys = ["r/s", "w/s", "await", "%util"] + (["trend"] if self._trend_w else [])
            with self.app.batch_update():
                for r in self._rows:
                    live = self._live_values(r, disks)
                    old = self._live_cells.get(r.key)
                    if old is not None and [c.plain for c in old] == [c.plain for c in live]:
                        continue
                    self._live_cells[r.key] = live
                    for col, new, prev in zip(keys, live, old or (None,) * len(keys)):
                        if prev is None or prev.plain != new.plain or prev.style != new.style:
                            table.update_cell(r.key, col, new)
        self._iostat_line(sample)
        row = self._selected
        new_sample = self.new_sample_to_chart()
        for chart_id, series in DEVICE_CHARTS:
            chart = self.query_one(chart_id, LiveChart)
            if reason:
                chart.set_placeholder(reason)
            elif row is None or sample is None or row.name not in {d.name for d in sample.disks}:
                chart.set_placeholder(f"no live figures for {row.name if row else 'this row'}")
            elif new_sample:
                values = self.inspector.trends.get(disk_series(row.name, series))
                chart.push(values[-1] if values else None)

    def _iostat_line(self, sample) -> None:
        line = self.query_one("#device-iostat", Static)
        reason = self.live_reason()
        if reason:
            line.update(Text(f"iostat  {reason}", style="yellow"))
            return
        row = self._selected
        disk = next((d for d in sample.disks if row is not None and d.name == row.name), None) \
            if sample is not None else None
        if disk is None:
            line.update(Text(f"iostat  no live figures for {row.name if row else 'this row'}",
                             style="grey62"))
            return
        text = Text("iostat  ", style="bold")
        for label, value in (("r/s", units.per_s(disk.r_s)), ("w/s", units.per_s(disk.w_s)),
                             ("read", units.bytes_s((disk.rkb_s or 0) * 1000)),
                             ("write", units.bytes_s((disk.wkb_s or 0) * 1000)),
                             ("await", units.latency_ms(disk.await_ms)),
                             ("aqu-sz", f"{disk.aqu_sz:.2f}" if disk.aqu_sz is not None else "-"),
                             ("%util", units.pct(disk.util))):
            text.append(f"{label} ", style="grey62").append(value).append("  ")
        line.update(text)

    # ------------------------------------------------------------------ actions
    def action_filter(self) -> None:
        box = self.query_one("#tree-filter", EditField)
        box.display = True
        box.start_editing()

    def action_toggle_empty(self) -> None:
        self._show_empty = not self._show_empty
        self.show_report(self.inspector.report)

    def on_input_changed(self, event: Input.Changed) -> None:
        if event.input.id == "tree-filter":
            self._filter = event.value.strip()
            self.show_report(self.inspector.report)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if event.input.id == "tree-filter":
            self.query_one("#device-table", DataTable).focus()

    def on_edit_field_editing_changed(self, event: EditField.EditingChanged) -> None:
        # the edit ended: Enter keeps the filter, Esc (which emptied it) drops it; the keys go
        # back to the table either way
        if event.field.id == "tree-filter" and not event.editing and event.field.has_focus:
            if event.field.value:
                self.query_one("#device-table", DataTable).focus()
            else:
                self.action_clear_filter()

    def action_clear_filter(self) -> None:
        box = self.query_one("#tree-filter", Input)
        if box.display or self._filter:
            box.value = ""
            box.display = False
            self._filter = ""
            self.show_report(self.inspector.report)
            self.query_one("#device-table", DataTable).focus()
        else:
            self.inspector.action_back()

    def action_probe(self) -> None:
        row = self._selected
        target = f"/dev/{row.name}" if row is not None and row.origin == "device" else None
        self.inspector.open_probe_form("io", target)


def fit_widths(room: int, wanted: list[tuple[int, int]]) -> list[int]:
    """Widths for flexible columns [(wanted, minimum)]: as wanted when they fit in `room`,
    else shrunk from the last one (health, then mount, then name) down to their minimum, so
    the live columns stay on screen at 80 columns."""
    widths = [w for w, _ in wanted]
    for i in reversed(range(len(widths))):
        excess = sum(widths) - room
        if excess <= 0:
            break
        widths[i] = max(wanted[i][1], widths[i] - excess)
    return widths


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[:width - 1] + "…"
