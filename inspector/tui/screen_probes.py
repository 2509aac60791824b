"""Probes: start IO / memcached / DNS probes from a form, chart them live, compare two runs.

The form names the target and the bounds (seconds, operations, workers or connections); a run
that writes or opens many connections first opens a confirmation naming target and bound.
The runs table lists every run (several may be active); the left panel follows the highlighted
run, `c` pins it to the right panel for before/after comparisons; `x` stops the highlighted run
and `S` stops them all.
"""
from __future__ import annotations

import time
from typing import Any

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.widgets import Button, Checkbox, DataTable, Input, Select, Static

from inspector.tui.base import InspectorScreen
from inspector.tui.messages import ProbeUpdate
from inspector.probes.base import ProbeError
from inspector.probes.request import config_for
from inspector.tui.probe_runs import (KIND_TITLES, KINDS, ProbeRequest, ProbeRun, RunState,
                                      describe, form_request, needs_confirmation)
from inspector.tui.screen_help import ConfirmScreen
from inspector.widgets.chart import LiveChart
from inspector.widgets.histogram import LatencyHistogram, format_ns

DEFAULT_TARGETS = {"io": "/tmp", "memcached": "127.0.0.1:11211", "dns": "/etc/resolv.conf"}
ROW_REFRESH_S = 1.0
RUN_COLUMNS = ("run", "probe", "target", "state", "ops", "ops/s", "p50", "p99", "max")


class RunPanel(Vertical):
    """Live chart, percentile table and histogram of one run."""

    def __init__(self, title: str, **kw):
        super().__init__(**kw)
        self.title = title
        self.run_id: int | None = None
        self._hist_state: object = None

    def compose(self) -> ComposeResult:
        yield LiveChart(self.title, series=("p50", "p99", "max"), unit="ms", classes="run-chart",
                        placeholder="no run selected")
        with Horizontal(classes="run-stats"):
            yield Static(classes="run-table")
            yield LatencyHistogram("histogram", rows=None, classes="run-hist")

    def attach(self, run: ProbeRun | None) -> None:
        chart = self.query_one(LiveChart)
        self.run_id = run.run_id if run else None
        chart.clear("no run selected" if run is None else _waiting_text(run))
        chart.rename_series(("p50", "p99", "max"))
        chart.border_title = f"{self.title}: {run.title}" if run else self.title
        if run is not None:
            history = list(run.history)
            if history:
                chart.rename_series((history[0].extra.primary, "p99", "max"))
            chart.extend([_ms(u) for u in history if not u.extra.final])
            if history:
                self._stats(run, history[-1])
        else:
            self.query_one(".run-table", Static).update("")
            self.query_one(LatencyHistogram).update("no samples yet")

    def finished(self, run: ProbeRun) -> None:
        """A run that ended before its first interval says why in place of its chart (the toast
        with the error is gone by the time someone looks)."""
        self.query_one(LiveChart).set_placeholder(_waiting_text(run))

    def add(self, run: ProbeRun, update: ProbeUpdate) -> None:
        if update.run_id != self.run_id:
            return
        extra = update.extra
        if not extra.final:
            chart = self.query_one(LiveChart)
            # an interval without a median carries its mean: say so in the legend
            chart.rename_series((extra.primary, "p99", "max"))
            chart.push(*_ms(update))
        self._stats(run, update)

    def _stats(self, run: ProbeRun, update: ProbeUpdate) -> None:
        table = Table(box=None, show_header=False, pad_edge=False)
        table.add_column(style="bold cyan", no_wrap=True)
        table.add_column(justify="right", no_wrap=True)
        table.add_row("state", run.state)
        table.add_row("elapsed", f"{update.elapsed:.1f} s")
        table.add_row("ops", f"{update.ops}")
        table.add_row("ops/s", f"{update.ops_per_s:.0f}")
        extra = update.extra
        if extra.percentiles_ns:
            for name, ns in extra.percentiles_ns.items():
                table.add_row(name, format_ns(ns))
        else:
            table.add_row("p50", format_ns(update.p50))
            table.add_row("p99", format_ns(update.p99))
        table.add_row("max", format_ns(update.max if extra.max_ns is None else extra.max_ns))
        if update.errors:
            table.add_row(Text("errors", style="bold red"), str(update.errors))
        if extra.loop == "python":
            # the IO probe's C loop is not built: its Python loop counts GIL waits (this
            # screen's own work) as IO latency (README: the IO probe's C loop)
            table.add_row(Text("timing", style="yellow"), Text("Python", style="yellow"))
        # fixed-size panes: repaint without a layout pass (4 Hz)
        self.query_one(".run-table", Static).update(table, layout=False)
        hist = self.query_one(LatencyHistogram)
        if extra.buckets:
            hist.update_buckets(extra.buckets)
            self._hist_state = "final"
        elif run.active and self._hist_state != ("waiting", run.run_id):
            self._hist_state = ("waiting", run.run_id)
            hist.update(Text("per-interval p50/p99/max in the chart;\nhistogram when the run ends",
                             style="grey62"), layout=False)


def _waiting_text(run: ProbeRun) -> str:
    if run.state == RunState.FAILED:
        return f"failed: {run.error or 'no reason given'}"
    if run.active:
        return "waiting for the first interval..."
    return f"{run.state} before the first interval"


def _ms(u: ProbeUpdate) -> tuple:
    return tuple(None if v is None else v / 1e6 for v in (u.p50, u.p99, u.max))


class ProbesScreen(InspectorScreen):
    MODE = "probes"
    AUTO_FOCUS = "#runs"
    BINDINGS = [Binding("escape", "leave_field", "Back", show=False, id="probes.escape"),
                Binding("s", "start", "Start", id="probes.start"),
                Binding("x", "stop", "Stop run", id="probes.stop"),
                Binding("c", "compare", "Pin to right", id="probes.compare"),
                Binding("n", "new", "New probe", id="probes.new"),
                Binding("h", "history", "History", id="probes.history"),
                Binding("f2", "focus_runs", "Runs", id="probes.runs")]

    def compose_body(self) -> ComposeResult:
        with Horizontal(id="probe-form"):
            yield Select([(KIND_TITLES[k], k) for k in KINDS], value="io", allow_blank=False,
                         id="probe-kind")
            # select_on_focus off: a focus that lands while the operator is already typing
            # (the form opened from the palette) must not select the typed text for replacement
            yield Input(DEFAULT_TARGETS["io"], placeholder="target", id="probe-target",
                        select_on_focus=False)
            yield Input("10", placeholder="seconds", id="probe-seconds", type="number",
                        select_on_focus=False)
            yield Input("1", placeholder="workers/conns", id="probe-concurrency", type="integer",
                        select_on_focus=False)
            yield Checkbox("write", id="probe-write")
            yield Button("Start", id="probe-start", variant="success")
        yield Static(id="probe-hint", classes="line")
        table = DataTable(id="runs", cursor_type="row")
        for col in RUN_COLUMNS:
            table.add_column(col, key=col)
        yield table
        with Horizontal(id="run-panels"):
            yield RunPanel("A", id="panel-a")
            yield RunPanel("B (c pins a run here)", id="panel-b")

    def on_resize(self) -> None:
        self.set_class(self.size.width < 100, "-narrow")
        super().on_resize()

    def on_mount(self) -> None:
        self._row_updated: dict[int, float] = {}
        super().on_mount()
        self._hint()
        self.apply_pending()

    def apply_pending(self) -> None:
        pending = getattr(self.app, "pending_probe_form", None)
        if pending is not None:
            self.app.pending_probe_form = None
            self.prefill(*pending)

    # ------------------------------------------------------------------ form
    def prefill(self, kind: str, target: str | None) -> None:
        self.query_one("#probe-kind", Select).value = kind
        box = self.query_one("#probe-target", Input)
        box.value = target or DEFAULT_TARGETS[kind]
        box.cursor_position = len(box.value)
        box.focus()
        # once more after the screen is shown: its auto-focus (the runs table) or a closing
        # palette restoring its focus must not leave the typed letters to the screen's keys
        self.call_after_refresh(lambda: None if box.has_focus else box.focus())
        self._hint()

    def on_select_changed(self, event: Select.Changed) -> None:
        if event.select.id == "probe-kind" and isinstance(event.value, str):
            target = self.query_one("#probe-target", Input)
            if target.value in DEFAULT_TARGETS.values():
                target.value = DEFAULT_TARGETS[event.value]
            self._hint()

    def _hint(self) -> None:
        hint = Text(no_wrap=True, overflow="ellipsis")
        if not self.app.root.live:   # first: at 80 columns the end of the line is cut
            hint.append("probes act on THIS machine, not on the capture  ", style="bold yellow")
        hint.append("target · seconds · workers/connections · write  then s or Start; "
                    "x stops, S stops all, c pins to B", style="grey62")
        self.query_one("#probe-hint", Static).update(hint)

    def request_from_form(self) -> ProbeRequest:
        return form_request(self.query_one("#probe-kind", Select).value,
                            self.query_one("#probe-target", Input).value,
                            self.query_one("#probe-seconds", Input).value,
                            self.query_one("#probe-concurrency", Input).value,
                            self.query_one("#probe-write", Checkbox).value)

    def action_start(self) -> None:
        try:
            request = self.request_from_form()
        except ValueError as exc:
            self.notify(str(exc), severity="error")
            return
        try:     # the target is one its kind can use: a clear line now, not a failed run
            config_for(request)
        except ProbeError as exc:
            self.notify(str(exc), severity="error")
            return
        reason = needs_confirmation(request)
        if reason:
            self.app.push_screen(ConfirmScreen(f"Start {KIND_TITLES[request.kind]} probe?",
                                               f"{describe(request)}\n\nThis {reason}."),
                                 lambda ok: self._confirmed(ok, request))
        else:
            self.start_request(request)

    def _confirmed(self, ok: bool | None, request: ProbeRequest) -> None:
        if ok:
            self.start_request(request)
        else:
            self.notify("probe not started")

    def start_request(self, request: ProbeRequest) -> ProbeRun | None:
        try:
            run = self.app.probes.start(request)
        except Exception as exc:
            self.notify(f"cannot start: {exc}", severity="error")
            return None
        table = self.query_one("#runs", DataTable)
        table.add_row(*self._row(run), key=str(run.run_id))
        table.move_cursor(row=table.row_count - 1)
        table.focus()  # keys (x stop, c pin, q quit) act on runs again, not on the form
        self.query_one("#panel-a", RunPanel).attach(run)
        self.show_state()
        return run

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "probe-start":
            self.action_start()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if event.input.id and event.input.id.startswith("probe-"):
            self.action_start()

    # ------------------------------------------------------------------ runs
    def _row(self, run: ProbeRun) -> list:
        u = run.last
        state_style = {"running": "bold green", "failed": "bold red", "stopped": "yellow"}.get(run.state, "")
        return [f"#{run.run_id}", KIND_TITLES[run.request.kind], run.request.target[-28:],
                Text(run.state, style=state_style),
                str(u.ops) if u else "-", f"{u.ops_per_s:.0f}" if u else "-",
                format_ns(u.p50) if u else "-", format_ns(u.p99) if u else "-",
                format_ns(u.max) if u else "-"]

    def _update_row(self, run: ProbeRun, throttle: bool = False) -> None:
        table = self.query_one("#runs", DataTable)
        key = str(run.run_id)
        if key not in table.rows:
            return
        now = time.monotonic()
        if throttle and now - self._row_updated.get(run.run_id, 0.0) < ROW_REFRESH_S:
            return  # the table needs no 4 Hz: its cells re-render the whole table
        self._row_updated[run.run_id] = now
        with self.app.batch_update():
            for col, value in zip(RUN_COLUMNS, self._row(run)):
                # widths grow with the figures: an ops count past the header's width must not
                # be cut to its first digits
                table.update_cell(key, col, value, update_width=True)

    def show_probe_update(self, update: ProbeUpdate) -> None:
        run = self.app.probes.get(update.run_id)
        if run is None:
            return
        self._update_row(run, throttle=not update.extra.final)
        for panel in self.query(RunPanel):
            panel.add(run, update)

    def show_probe_finished(self, run_id: int) -> None:
        run = self.app.probes.get(run_id)
        if run is not None and self.is_mounted:
            self._update_row(run)
            for panel in self.query(RunPanel):
                if panel.run_id == run_id:
                    panel.finished(run)
            self.show_state()

    def on_screen_resume(self) -> None:
        super().on_screen_resume()
        self.apply_pending()
        table = self.query_one("#runs", DataTable)
        for run in self.app.probes.runs:
            if str(run.run_id) not in table.rows:  # started elsewhere (palette, DNS screen)
                table.add_row(*self._row(run), key=str(run.run_id))
            self._update_row(run)
        for panel in self.query(RunPanel):
            run = self.app.probes.get(panel.run_id) if panel.run_id else None
            if run is not None:
                panel.attach(run)

    def _highlighted(self) -> ProbeRun | None:
        table = self.query_one("#runs", DataTable)
        if not table.row_count:
            return None
        try:
            key = table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value
        except Exception:
            return None
        return self.app.probes.get(int(key)) if key else None

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        run = self._highlighted()
        panel = self.query_one("#panel-a", RunPanel)
        if run is not None and panel.run_id != run.run_id:
            panel.attach(run)

    def action_stop(self) -> None:
        run = self._highlighted()
        if run is None or not run.active:
            active = self.app.probes.active()
            run = active[-1] if active else None
        if run is None:
            self.notify("no probe running")
            return
        run.stop()
        self.notify(f"stopping {run.title}")

    def action_compare(self) -> None:
        run = self._highlighted()
        if run is None:
            self.notify("no run to pin")
            return
        self.query_one("#panel-b", RunPanel).attach(run)

    def action_history(self) -> None:
        self.app.open_history()

    def action_new(self) -> None:
        self.query_one("#probe-target", Input).focus()

    def action_leave_field(self) -> None:
        if isinstance(self.focused, (Input, Select, Checkbox, Button)):
            self.query_one("#runs", DataTable).focus()
        else:
            self.app.action_back()

    def action_focus_runs(self) -> None:
        self.query_one("#runs", DataTable).focus()

    def show_report(self, report: Any) -> None:
        pass
