"""Probes: start IO / memcached / DNS probes from a form, chart them live, compare two runs.

The form names the target and the bounds (seconds, workers or connections); each kind keeps
its own values. Its target is checked for its kind before anything else (a DNS run needs a
resolv.conf with nameservers or addresses, memcached HOST:PORT, a write probe a directory); a
run that writes or opens many connections then opens a confirmation naming target and bound.

Keys: the target has focus when the screen opens; Enter starts from any field; Tab and
shift+Tab move between fields at once (priority bindings, handled before the next key of the
same burst is delivered: a laggy SSH link sends `/tmp`, Tab and `7` together, and the `7` must
land in the next field); Esc leaves the form for the runs table, where digits switch screens,
`x` stops the highlighted run, `S` stops all, `c` pins the highlighted run to panel B.

Every run is its own process (probe_runs); panel A follows the highlighted run, B shows the
pinned one, and side by side they share their y scales.
"""
from __future__ import annotations

import time
from typing import Any

from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.widgets import Button, Checkbox, DataTable, Input, Select, Static

from inspector.probes.base import ProbeKind
from inspector.tui.base import InspectorScreen
from inspector.tui.messages import ProbeUpdate
from inspector.tui.probes.figures import rate_text, state_text, whole_run
from inspector.tui.probes.panel import RunPanel
from inspector.tui.probes.runs import (
    KIND_TITLES,
    KINDS,
    ProbeRequest,
    ProbeRun,
    check_target,
    describe,
    form_request,
    needs_confirmation,
)
from inspector.tui.screen_help import ConfirmScreen
from inspector.widgets.probe_chart import LatencyChart, RateChart, merge_log

__all__ = ["ProbesScreen", "RunPanel"]

DEFAULT_TARGETS = {"io": "/tmp", "memcached": "127.0.0.1:11211", "dns": "/etc/resolv.conf"}
CONCURRENCY_LABELS = {"io": "workers", "memcached": "connections", "dns": "-"}
ROW_REFRESH_S = 1.0
# every figure in the table is the whole run's (cumulative); the panels show the last
# interval beside it
RUN_COLUMNS = (("run", "#"), ("probe", "probe"), ("state", "state"), ("err", "err"),
               ("ops", "ops"), ("ops/s", "run ops/s"), ("p50", "run p50"), ("p99", "run p99"),
               ("max", "run max"))
FIXED_WIDTH = 3 + 8 + 3 + 8 + 9 + 8 + 8 + 8 + 2 * len(RUN_COLUMNS) + 2


def default_values(kind: str) -> dict[str, Any]:
    from inspector.probes.request import KINDS
    return {"target": DEFAULT_TARGETS[kind], "seconds": "10",
            "concurrency": str(KINDS[ProbeKind(kind)].default_concurrency), "write": False}


class FormInput(Input):
    """A field whose own editing keys (ctrl+u, backspace, arrows...) act at once, in the
    order they came. Textual runs a widget's key bindings only when the key has bubbled up to
    the app, while the next key goes straight to the widget: in one burst, `C-u 3` typed the 3
    and then cleared it, and `abc BSpace d` left "abc"."""

    async def _on_key(self, event: events.Key) -> None:
        bindings = getattr(self, "_bindings", None)
        own = bindings.key_to_bindings.get(event.key) if bindings is not None else None
        if own and not event.is_printable:
            event.prevent_default()
            event.stop()
            await self.run_action(own[0].action)
            return
        await super()._on_key(event)


class NumberInput(FormInput):
    """A number field whose non-numeric keys are not swallowed: `n` (new probe) and the other
    screen keys still work while it has focus; nothing it cannot hold is typed into it."""
    NUMERIC = set("0123456789.-+eE")

    def check_consume_key(self, key: str, character: str | None) -> bool:
        return character is not None and character in self.NUMERIC

    async def _on_key(self, event: events.Key) -> None:
        if event.is_printable and event.character and event.character not in self.NUMERIC:
            # not typed (the field cannot hold it); the screen's key of that letter acts
            # (a default-prevented key never reaches the app's binding check: run it here)
            event.prevent_default()
            event.stop()
            active = self.app.active_bindings.get(event.key)
            if active is not None and active.node is self.screen and active.enabled:
                await self.app.run_action(active.binding.action, active.node)
            return
        await super()._on_key(event)


class RunsTable(DataTable):
    """The runs table with render caches sized for what it shows (a few rows of ten cells),
    not DataTable's 10,000 cells: each run's figures change every second, every change is a
    new cache entry, and the full caches held megabytes once a few runs had gone
    (tests/integration/test_tui_probe_runs_tmux.py prints the TUI's RSS over fifty runs)."""

    def __init__(self, **kw):
        super().__init__(**kw)
        for cache, size in (("_cell_render_cache", 400), ("_row_render_cache", 60),
                            ("_line_cache", 120)):
            if hasattr(self, cache):
                getattr(self, cache).maxsize = size


class ProbesScreen(InspectorScreen):
    MODE = "probes"
    AUTO_FOCUS = "#probe-target"
    BINDINGS = [
        Binding("enter", "start", "Start", key_display="Enter", priority=True,
                id="probes.start"),
        Binding("s", "start_outside", "Start", show=False, id="probes.start_key"),
        Binding("tab", "next_field", show=False, priority=True),
        Binding("shift+tab", "previous_field", show=False, priority=True),
        Binding("escape", "leave_field", "Runs", show=False, priority=True,
                id="probes.escape"),
        Binding("x", "stop", "Stop run", id="probes.stop"),
        Binding("c", "compare", "Pin to B", id="probes.compare"),
        # priority, like Enter: in a burst (`n` Enter over a laggy link) it must move the focus
        # before Enter is looked at, or Enter lands on the runs table and starts nothing
        Binding("n", "new", "New probe", id="probes.new", priority=True),
        Binding("h", "history", "History", id="probes.history"),
        Binding("f2", "focus_runs", "Runs", id="probes.runs"),
    ]

    def compose_body(self) -> ComposeResult:
        with Horizontal(id="probe-form"):
            yield Select([(KIND_TITLES[k], str(k)) for k in KINDS], value="io",
                         allow_blank=False, id="probe-kind")
            # select_on_focus off: a focus that lands while the operator is already typing
            # (the form opened from the palette) must not select the typed text for replacement
            yield FormInput(DEFAULT_TARGETS["io"], placeholder="target", id="probe-target",
                            select_on_focus=False)
            yield NumberInput("10", placeholder="seconds", id="probe-seconds", type="number",
                              select_on_focus=False)
            yield NumberInput("1", placeholder="workers", id="probe-concurrency",
                              type="integer", select_on_focus=False)
            yield Checkbox("write", id="probe-write")
            yield Button("Start", id="probe-start", variant="success")
        yield Static(id="probe-hint", classes="line")
        table = RunsTable(id="runs", cursor_type="row")
        for key, label in RUN_COLUMNS:
            table.add_column(label, key=key)
        yield table
        with Horizontal(id="run-panels"):
            yield RunPanel("A", id="panel-a")
            yield RunPanel("B (c pins a run here)", id="panel-b")

    def on_resize(self) -> None:
        self.set_class(self.size.width < 100, "-narrow")
        self.set_class(self.size.height < 32, "-short")
        super().on_resize()
        self.call_after_refresh(self.share_scales)

    def on_mount(self) -> None:
        self._row_updated: dict[int, float] = {}
        self._kind = "io"
        self._values = {str(k): default_values(str(k)) for k in KINDS}
        super().on_mount()
        self._apply_kind()
        self.apply_pending()

    def on_screen_resume(self) -> None:
        super().on_screen_resume()
        table = self.query_one("#runs", DataTable)
        for run in self.inspector.probes.runs:
            if str(run.run_id) not in table.rows:  # started elsewhere (palette, DNS screen)
                table.add_row(*self._row(run), key=str(run.run_id))
            self._update_row(run)
        for panel in self.query(RunPanel):
            panel.repaint()
        self.share_scales()
        self.apply_pending()

    def apply_pending(self) -> None:
        state = self.inspector
        pending = state.pending_probe_form
        if pending is not None:
            state.pending_probe_form = None
            self.prefill(*pending)
        requests = state.pending_probe_requests
        if requests:
            state.pending_probe_requests = []
            self._start_in_turn(list(requests))

    # ------------------------------------------------------------------ form
    def _field(self, name: str) -> Any:
        return self.query_one(f"#probe-{name}")

    def _form_values(self) -> dict[str, Any]:
        return {"target": self._field("target").value, "seconds": self._field("seconds").value,
                "concurrency": self._field("concurrency").value,
                "write": self._field("write").value}

    def _switch_kind(self, kind: str) -> None:
        """Each kind keeps its own target, seconds, workers and write: a memcached run never
        inherits an IO target (a memcached run "to /dev/loop3")."""
        if kind == self._kind:
            return
        self._values[self._kind] = self._form_values()
        self._kind = kind
        self._apply_kind()

    def _apply_kind(self) -> None:
        values = self._values[self._kind]
        target = self._field("target")
        target.value = values["target"]
        target.cursor_position = len(target.value)
        self._field("seconds").value = values["seconds"]
        concurrency = self._field("concurrency")
        concurrency.value = values["concurrency"]
        concurrency.placeholder = CONCURRENCY_LABELS[self._kind]
        concurrency.disabled = self._kind == "dns"
        write = self._field("write")
        write.value = values["write"]
        write.disabled = self._kind == "dns"
        self._hint()

    def prefill(self, kind: str, target: str | None) -> None:
        kind = str(kind)
        self._switch_kind(kind)
        select = self.query_one("#probe-kind", Select)
        if select.value != kind:
            select.value = kind
        box = self._field("target")
        if target is not None:
            box.value = target
        box.cursor_position = len(box.value)
        box.focus()
        # once more after the screen is shown: its auto-focus or a closing palette restoring
        # its focus must not leave the typed letters to the screen's keys
        self.call_after_refresh(lambda: None if box.has_focus else box.focus())
        self._hint()

    def on_select_changed(self, event: Select.Changed) -> None:
        if event.select.id == "probe-kind" and isinstance(event.value, str):
            self._switch_kind(event.value)

    def _hint(self) -> None:
        hint = Text(no_wrap=True, overflow="ellipsis")
        if not self.inspector.root.live:   # first: at 80 columns the end of the line is cut
            hint.append("probes act on THIS machine, not on the capture  ", style="bold yellow")
        what = {"io": "a file, directory or block device (write: a directory)",
                "memcached": "HOST:PORT", "dns": "a resolv.conf, or ADDR[:PORT],..."}[self._kind]
        hint.append("Enter starts · Tab next field · Esc to the runs", style="bold")
        hint.append(f"   target: {what}; seconds; "
                    f"{CONCURRENCY_LABELS[self._kind]}", style="grey62")
        self.query_one("#probe-hint", Static).update(hint)

    def request_from_form(self) -> ProbeRequest:
        values = self._form_values()
        return form_request(self._kind, values["target"], values["seconds"],
                            values["concurrency"], values["write"])

    def _in_form(self) -> bool:
        focused = self.focused
        if focused is None or self.query_one("#probe-kind", Select).expanded:
            return False
        form = self.query_one("#probe-form")
        return focused is form or form in focused.ancestors

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in ("start", "leave_field"):
            # Enter and Esc of the form's fields; elsewhere (the runs table, an open kind
            # menu) they do what they do there
            return self._in_form()
        if action == "start_outside":   # `s` on the runs table; in a field it is a letter
            return not self._in_form()
        if action in ("next_field", "previous_field"):
            return not self.query_one("#probe-kind", Select).expanded
        if action == "new":     # a priority key: in a text field it is a letter
            focused = self.focused
            return not (isinstance(focused, FormInput) and not isinstance(focused, NumberInput)
                        or self.query_one("#probe-kind", Select).expanded)
        return True

    def action_start_outside(self) -> None:
        self.action_start()

    def action_next_field(self) -> None:
        self.focus_next()

    def action_previous_field(self) -> None:
        self.focus_previous()

    def action_start(self) -> None:
        """After every field has handled the keys it was sent before this one: Enter is a
        priority key, run before the keys of its burst reach their fields (`/srv`, Tab, `3`,
        Enter must start with /srv and 3, not with what the fields held a moment before)."""
        fields = list(self.query_one("#probe-form").query("Input, Checkbox, Select"))
        left = [len(fields)]

        def field_done() -> None:
            left[0] -= 1
            if left[0] == 0:
                self._start_from_form()
        for field in fields:
            field.call_later(field_done)

    def _start_from_form(self) -> None:
        try:
            request = self.request_from_form()
        except ValueError as exc:
            self.notify(str(exc), severity="error")
            return
        self._values[self._kind] = self._form_values()
        self.confirm_and_start(request)

    def confirm_and_start(self, request: ProbeRequest, then: Any = None) -> None:
        """The form's rules for any request (the form, `--probe SPEC`): the target is checked
        for its kind, then a run that writes or loads a server is confirmed."""
        problem = check_target(request)
        if problem:
            self.notify(problem, severity="error")
            if then:
                then()
            return
        reason = needs_confirmation(request)
        if not reason:
            self.start_request(request)
            if then:
                then()
            return

        def answered(ok: bool | None) -> None:
            if ok:
                self.start_request(request)
            else:
                self.notify("probe not started")
            if then:
                then()
        self.app.push_screen(ConfirmScreen(f"Start {KIND_TITLES[request.kind]} probe?",
                                           f"{describe(request)}\n\nThis {reason}."), answered)

    def _start_in_turn(self, requests: list[ProbeRequest]) -> None:
        if requests:
            first, rest = requests[0], requests[1:]
            self.confirm_and_start(first, then=lambda: self._start_in_turn(rest))

    def start_request(self, request: ProbeRequest) -> ProbeRun | None:
        try:
            run = self.inspector.probes.start(request)
        except OSError as exc:
            self.notify(f"cannot start the probe process: {exc.strerror or exc}",
                        severity="error")
            return None
        table = self.query_one("#runs", DataTable)
        table.add_row(*self._row(run), key=str(run.run_id))
        table.move_cursor(row=table.row_count - 1)
        table.focus()  # keys (x stop, c pin, q quit) act on runs again, not on the form
        self.query_one("#panel-a", RunPanel).attach(run)
        self.share_scales()
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
        total = whole_run(run)
        errors = run.last.errors if run.last else 0
        width = max(12, (self.size.width or self.app.size.width) - FIXED_WIDTH)
        probe = f"{run.request.kind} {run.target_text}"
        if len(probe) > width:
            probe = f"{run.request.kind} …{run.target_text[-(width - len(run.request.kind) - 2):]}"
        return [f"#{run.run_id}", probe, state_text(run),
                Text(str(errors), style="bold red" if errors else "grey50"),
                str(total.ops) if total.ops is not None else "-", rate_text(total.ops_per_s),
                total.latency("p50"), total.latency("p99"), total.latency("max")]

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
            for (col, _), value in zip(RUN_COLUMNS, self._row(run)):
                # widths grow with the figures: an ops count past the header's width must not
                # be cut to its first digits
                table.update_cell(key, col, value, update_width=True)

    def show_probe_update(self, update: ProbeUpdate) -> None:
        run = self.inspector.probes.get(update.run_id)
        if run is None:
            return
        self._update_row(run, throttle=not update.extra.final)
        shown = False
        for panel in self.query(RunPanel):
            if panel.run is run:
                panel.repaint()
                shown = True
        if shown:
            self.share_scales()

    def show_probe_finished(self, run_id: int) -> None:
        run = self.inspector.probes.get(run_id)
        if run is not None and self.is_mounted:
            self._update_row(run)
            for panel in self.query(RunPanel):
                panel.finished(run)
            self.share_scales()
            self.show_state()

    def share_scales(self) -> None:
        """Side by side, both panels' charts use one y range (the union of what each shows),
        so the taller line is the slower run."""
        panels = [p for p in self.query(RunPanel) if p.run is not None]
        latency = [p.query_one(LatencyChart) for p in panels]
        rates = [p.query_one(RateChart) for p in panels]
        decades = None
        for chart in latency:
            decades = merge_log(decades, chart.natural_range())
        top = max((r for c in rates if (r := c.natural_range()) is not None), default=None)
        for chart in latency:
            chart.set_shared(decades if len(panels) > 1 else None)
        for rate_chart in rates:
            rate_chart.set_shared(top if len(panels) > 1 else None)

    def _highlighted(self) -> ProbeRun | None:
        table = self.query_one("#runs", DataTable)
        if not table.row_count:
            return None
        try:
            key = table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value
        except Exception:
            return None
        return self.inspector.probes.get(int(key)) if key else None

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        run = self._highlighted()
        panel = self.query_one("#panel-a", RunPanel)
        if run is not None and panel.run is not run:
            panel.attach(run)
            self.share_scales()

    def action_stop(self) -> None:
        run = self._highlighted()
        if run is None or not run.active:
            active = self.inspector.probes.active()
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
        self.share_scales()

    def action_history(self) -> None:
        self.inspector.open_history()

    def action_new(self) -> None:
        self._field("target").focus()

    def action_leave_field(self) -> None:
        self.query_one("#runs", DataTable).focus()

    def action_focus_runs(self) -> None:
        self.query_one("#runs", DataTable).focus()

    def show_report(self, report: Any) -> None:
        pass
