"""Probes: start IO / memcached / DNS probes from a form, chart them live, compare two runs.

The form names the target and the bounds (seconds, workers or connections); each kind keeps
its own values. A request is checked before anything else (its limits, then its target as
this host has it: inspector.probes.request.check_target); a run that writes or opens many
connections then opens a confirmation naming target and bound. Runs given on the command line
(`inspector --probe SPEC`) are checked and started in order without a question: the command
line was the confirmation.

Keys never land where they were not meant (the k9s way): a focused field types nothing until
Enter (or a click) starts its edit, so 1-6, q, ? and the screen's keys act from anywhere in the
form. While editing, Enter starts the run, Esc ends the edit, Tab and shift+Tab end it and edit
the next field at once (priority bindings, handled before the next key of the same burst is
delivered: a laggy SSH link sends `/tmp`, Tab and `7` together, and the `7` must land in the
next field). Enter on the kind opens its list; the focus stays on it after a choice. `s`
starts from anywhere but an edited field; Esc leaves the form for the runs table, where `x`
stops the highlighted run, `S` stops all, `c` pins the highlighted run to panel B.

Every run is its own process (tui.probes.runs); panel A follows the highlighted run, B shows
the pinned one, and side by side they share their y scales.
"""
from __future__ import annotations

import time
from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.widgets import Button, Checkbox, DataTable, Select, Static

from inspector.probes.base import ProbeError, ProbeKind
from inspector.probes.request import KINDS, check_target, describe, needs_confirmation
from inspector.tui.base import InspectorScreen
from inspector.tui.fields import EditField
from inspector.tui.probes.figures import rate_text, state_text, whole_run
from inspector.tui.probes.panel import RunPanel
from inspector.tui.probes.run_columns import columns_for, probe_cell, probe_room
from inspector.tui.probes.runs import LiveRun, ProbeRequest, form_request
from inspector.tui.screen_help import ConfirmScreen
from inspector.widgets.probe_chart import LatencyChart, RateChart, merge_log

__all__ = ["ProbesScreen", "RunPanel"]

ROW_REFRESH_S = 1.0
FORM_FIELDS = "#probe-kind, #probe-target, #probe-seconds, #probe-concurrency, #probe-write"
# the fields' labels (border titles) fit the fields at 80 columns
LABELS = {"workers": "jobs", "connections": "conns"}


def default_values(kind: ProbeKind) -> dict[str, Any]:
    info = KINDS[kind]
    return {"target": info.default_target, "seconds": "10",
            "concurrency": str(info.default_concurrency), "write": False}


class NumberField(EditField):
    """A number field: while edited it types digits and a point; any other key stays a
    screen key (`n`, `s`, `q` ...)."""
    NUMERIC = frozenset("0123456789.")

    def accepts(self, character: str) -> bool:
        return character in self.NUMERIC


class RunsTable(DataTable):
    """The runs table with render caches sized for what it shows (a few rows of ten cells),
    not DataTable's 10,000 cells: each run's figures change every second, every change is a
    new cache entry, and the full caches held megabytes once a few runs had gone
    (tests/integration/test_tui_probe_runs_tmux.py prints the TUI's RSS over fifty runs)."""

    def __init__(self, **kw: Any) -> None:
        super().__init__(**kw)
        for cache, size in (("_cell_render_cache", 400), ("_row_render_cache", 60),
                            ("_line_cache", 120)):
            if hasattr(self, cache):
                getattr(self, cache).maxsize = size


class ProbesScreen(InspectorScreen):
    MODE = "probes"
    AUTO_FOCUS = "#probe-target"
    _runs_width = 0         # the width the runs table was laid out for
    BINDINGS = [
        Binding("s", "start", "Start", id="probes.start"),
        # priority: a key goes to the widget focused when it arrives, so in a burst (`/tmp`
        # Tab `7` Enter over a laggy link) the focus must have moved and the next field be
        # edited before the `7` is delivered; a field's edit state follows these keys in the
        # order they came (see _edited)
        Binding("enter", "field_enter", show=False, priority=True),
        Binding("escape", "field_escape", show=False, priority=True),
        Binding("tab", "next_field", show=False, priority=True),
        Binding("shift+tab", "previous_field", show=False, priority=True),
        Binding("escape", "leave_form", "Runs", show=False, id="probes.escape"),
        Binding("x", "stop", "Stop run", id="probes.stop"),
        Binding("c", "compare", "Pin to B", id="probes.compare"),
        # priority, like Enter: in a burst (`n` Enter from the runs table) the target must be
        # edited before Enter is looked at
        Binding("n", "new", "New probe", id="probes.new", priority=True),
        Binding("h", "history", "History", id="probes.history"),
        Binding("f2", "focus_runs", "Runs", id="probes.runs"),
    ]

    def compose_body(self) -> ComposeResult:
        with Horizontal(id="probe-form"):
            yield Select([(info.title, str(k)) for k, info in KINDS.items()], value="io",
                         allow_blank=False, id="probe-kind")
            target = EditField(KINDS[ProbeKind.IO].default_target, placeholder="target",
                               id="probe-target")
            target.border_title = "target"
            yield target
            seconds = NumberField("10", placeholder="seconds", id="probe-seconds")
            seconds.border_title = "secs"
            yield seconds
            yield NumberField("1", placeholder="workers", id="probe-concurrency")
            yield Checkbox("write", id="probe-write")
            yield Button("Start", id="probe-start", variant="success")
        yield Static(id="probe-hint", classes="line")
        # every figure in the table is the whole run's (cumulative); the panels show the
        # last interval beside it. Columns: on mount and resize (_lay_out_runs)
        yield RunsTable(id="runs", cursor_type="row")
        with Horizontal(id="run-panels"):
            yield RunPanel("A", id="panel-a")
            yield RunPanel("B (c pins a run here)", id="panel-b")

    def on_resize(self) -> None:
        self.set_class(self.size.width < 100, "-narrow")
        self.set_class(self.size.height < 32, "-short")
        super().on_resize()
        self._lay_out_runs()
        self.call_after_refresh(self.share_scales)

    def _lay_out_runs(self) -> None:
        """The runs table's columns and probe cells for the width (run_columns): laid out
        again when it changes, since a DataTable column never narrows by itself."""
        width = self.size.width or self.app.size.width
        if width == self._runs_width:
            return
        self._runs_width = width
        table = self.query_one("#runs", DataTable)
        cursor = table.cursor_row
        table.clear(columns=True)
        for key, label in columns_for(width):
            table.add_column(label, key=key)
        for run in self.inspector.probes.runs:
            table.add_row(*self._row(run), key=str(run.run_id))
        if table.row_count:
            table.move_cursor(row=min(cursor, table.row_count - 1))

    def on_mount(self) -> None:
        self._row_updated: dict[int, float] = {}
        self._lay_out_runs()
        self._kind = ProbeKind.IO
        self._values = {k: default_values(k) for k in KINDS}
        super().on_mount()
        # the list's face carries the border the label goes on
        for face in self.query("#probe-kind SelectCurrent"):
            face.border_title = "kind"
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
            # after the first frame: the screen shows before the targets are checked
            self.call_after_refresh(self.start_given, list(requests))

    # ------------------------------------------------------------------ form
    def _field(self, name: str) -> Any:
        return self.query_one(f"#probe-{name}")

    def _form_values(self) -> dict[str, Any]:
        return {"target": self._field("target").value, "seconds": self._field("seconds").value,
                "concurrency": self._field("concurrency").value,
                "write": self._field("write").value}

    def _switch_kind(self, kind: ProbeKind) -> None:
        """Each kind keeps its own target, seconds, workers and write: a memcached run never
        inherits an IO target (a memcached run "to /dev/loop3")."""
        if kind == self._kind:
            return
        self._values[self._kind] = self._form_values()
        self._kind = kind
        self._apply_kind()

    def _apply_kind(self) -> None:
        values, info = self._values[self._kind], KINDS[self._kind]
        target = self._field("target")
        target.value = values["target"]
        target.cursor_position = len(target.value)
        self._field("seconds").value = values["seconds"]
        concurrency = self._field("concurrency")
        concurrency.value = values["concurrency"]
        concurrency.placeholder = info.concurrency or "-"
        concurrency.border_title = LABELS.get(info.concurrency or "", info.concurrency or "-")
        concurrency.disabled = info.concurrency is None
        write = self._field("write")
        write.value = values["write"]
        write.disabled = info.write is None
        self._hint()

    def prefill(self, kind: str, target: str | None) -> None:
        """The form for `kind`, its target given (None: the kind's last one), the target
        focused and not edited: the screen's keys still act until Enter."""
        kind_ = ProbeKind(kind)
        self._switch_kind(kind_)
        select = self.query_one("#probe-kind", Select)
        if select.value != str(kind_):
            select.value = str(kind_)
        box = self._field("target")
        if target is not None:
            box.value = target
        box.cursor_position = len(box.value)
        box.focus()
        # once more after the screen is shown: its auto-focus or a closing palette restoring
        # its focus must not take it away
        self.call_after_refresh(lambda: None if box.has_focus else box.focus())
        self._hint()

    def on_select_changed(self, event: Select.Changed) -> None:
        if event.select.id == "probe-kind" and isinstance(event.value, str):
            self._switch_kind(ProbeKind(event.value))
            focused = self.focused
            if focused is not None and (focused is event.select
                                        or event.select in focused.ancestors):
                # chosen from its list, which has closed: the focus stays on the kind, in
                # the form (not a prefill's change)
                self.call_after_refresh(event.select.focus)

    def _hint(self) -> None:
        info = KINDS[self._kind]
        hint = Text(no_wrap=True, overflow="ellipsis")
        if not self.inspector.root.live:   # first: at 80 columns the end of the line is cut
            hint.append("probes act on THIS machine, not on the capture  ", style="bold yellow")
        editing = self._edited is not None
        hint.append("Enter starts · Esc done · Tab next field" if editing else
                    "Enter edits, then Enter starts · s starts · Esc to the runs", style="bold")
        hint.append(f"   target: {info.target_help}", style="grey62")
        self.query_one("#probe-hint", Static).update(hint)

    def request_from_form(self) -> ProbeRequest:
        values = self._form_values()
        return form_request(self._kind, values["target"], values["seconds"],
                            values["concurrency"], values["write"])

    # A key reaches the focused field's queue at once but is handled there later; these
    # priority keys act when they arrive. So the field being edited is tracked here, in key
    # order (`_edited`): an edit starts at once (the field has no key of its own pending: an
    # idle field types nothing), and ends in the field's own queue, after the keys typed
    # before the Esc, Enter or Tab that ends it. The EditingChanged messages of those starts
    # and ends come later still (a loaded host: after the next keys): they are counted in
    # `_own_changes` and do not move `_edited` again.
    _edited: EditField | None = None

    def __init__(self, *args: Any, **kw: Any) -> None:
        super().__init__(*args, **kw)
        self._own_changes: dict[EditField, int] = {}     # see _edited

    def _focused_field(self) -> EditField | None:
        focused = self.focused
        return focused if isinstance(focused, EditField) else None

    def on_edit_field_editing_changed(self, event: EditField.EditingChanged) -> None:
        own = self._own_changes.get(event.field, 0)
        if own:                                  # ours: `_edited` followed it in key order
            self._own_changes[event.field] = own - 1
        elif event.editing:
            self._edited = event.field           # a click, a paste
        elif self._edited is event.field:
            self._edited = None                  # left by the mouse, ended in the field
        self._hint()

    def _begin_edit(self, field: EditField) -> None:
        self._edited = field
        if not field.editing:
            self._count_own(field)
        field.start_editing()

    def _count_own(self, field: EditField) -> None:
        self._own_changes[field] = self._own_changes.get(field, 0) + 1

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in ("next_field", "previous_field"):
            return not self.query_one("#probe-kind", Select).expanded
        if action == "field_enter":             # elsewhere Enter is the widget's (the list)
            return self._focused_field() is not None
        if action == "new":                     # a letter in an edited text field
            return self._edited is None or isinstance(self._edited, NumberField)
        if action == "field_escape":
            field = self._focused_field()
            return field is not None and field is self._edited
        return True

    def action_field_enter(self) -> None:
        """Enter on a field: starts its edit; on the field being edited, ends it and starts
        the run with everything typed before."""
        field = self._focused_field()
        if field is None:
            return
        if field is self._edited:
            self._end_edit(field)
            self.action_start()
        else:
            self._begin_edit(field)

    def action_field_escape(self) -> None:
        field = self._focused_field()
        if field is not None:
            self._end_edit(field)

    def _end_edit(self, field: EditField) -> None:
        if self._edited is field:
            self._edited = None

        def stop() -> None:                      # after the keys typed before this one
            if field.editing:
                self._count_own(field)
                field.stop_editing()
        field.call_later(stop)

    def action_next_field(self) -> None:
        self._focus_and_edit(self.focus_next)

    def action_previous_field(self) -> None:
        self._focus_and_edit(self.focus_previous)

    def _focus_and_edit(self, move: Any) -> None:
        """Tab: an edit goes on in the next field (a form being filled in); otherwise the
        focus only moves."""
        left = self._focused_field()
        editing = left is not None and left is self._edited
        if left is not None and editing:
            self._end_edit(left)
        moved = move()
        if editing and isinstance(moved, EditField) and not moved.disabled:
            self._begin_edit(moved)

    def action_start(self) -> None:
        """After every field has handled the keys it was sent before this one: `/srv`, Tab,
        `3`, Enter in one burst must start with /srv and 3, not with what the fields held a
        moment before."""
        fields = list(self.query(FORM_FIELDS))
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
        except ProbeError as exc:
            self.notify(str(exc), severity="error")
            return
        self._values[self._kind] = self._form_values()
        self.confirm_and_start(request)

    def confirm_and_start(self, request: ProbeRequest) -> None:
        """The form's rules for a request: checked (limits, target), then a run that writes
        or loads a server is confirmed."""
        remote = getattr(getattr(self.app, "sampler", None), "remote", None)
        if remote:      # --ssh: the run would be this machine's, not the host shown
            self.notify(f"probes run on this machine only; the TUI is showing {remote} over "
                        "ssh", severity="error")
            return
        problem = check_target(request)
        if problem:
            self.notify(problem, severity="error")
            return
        reason = needs_confirmation(request)
        if not reason:
            self.start_request(request)
            return

        def answered(ok: bool | None) -> None:
            if ok:
                self.start_request(request)
            else:
                self.notify("probe not started")
        self.app.push_screen(ConfirmScreen(f"Start {request.info.title} probe?",
                                           f"{describe(request)}\n\nThis {reason}."), answered)

    def start_given(self, requests: list[ProbeRequest]) -> None:
        """`inspector --probe SPEC ...`: each checked and started in order, no question asked
        (the command line asked for them); one that cannot run says why and the rest go on."""
        for request in requests:
            problem = check_target(request)
            if problem:
                self.notify(f"--probe {request.text}: {problem}", severity="error")
            else:
                self.start_request(request)

    def start_request(self, request: ProbeRequest) -> LiveRun | None:
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

    # ------------------------------------------------------------------ runs
    def _cells(self, run: LiveRun) -> dict[str, Any]:
        """Every column's cell for a run, by column key."""
        total = whole_run(run)
        errors = run.errors
        room = probe_room(self._runs_width or self.size.width or self.app.size.width)
        return {"run": f"#{run.run_id}",
                "probe": probe_cell(str(run.request.kind), run.target_text, room),
                "state": state_text(run),
                "err": Text(str(errors), style="bold red" if errors else "grey50"),
                "ops": str(total.ops) if total.ops is not None else "-",
                "ops/s": rate_text(total.ops_per_s), "p50": total.latency("p50"),
                "p99": total.latency("p99"), "max": total.latency("max")}

    def _row(self, run: LiveRun) -> list[Any]:
        """A run's cells in the order of the columns shown."""
        cells = self._cells(run)
        table = self.query_one("#runs", DataTable)
        return [cells[str(key.value)] for key in table.columns]

    def _update_row(self, run: LiveRun, throttle: bool = False) -> None:
        table = self.query_one("#runs", DataTable)
        key = str(run.run_id)
        if key not in table.rows:
            return
        now = time.monotonic()
        if throttle and now - self._row_updated.get(run.run_id, 0.0) < ROW_REFRESH_S:
            return  # the table needs no 4 Hz: its cells re-render the whole table
        self._row_updated[run.run_id] = now
        with self.app.batch_update():
            for col, value in zip(table.columns, self._row(run)):
                # widths grow with the figures: an ops count past the header's width must not
                # be cut to its first digits
                table.update_cell(key, col, value, update_width=True)

    def show_probe_update(self, run_id: int) -> None:
        run = self.inspector.probes.get(run_id)
        if run is None:
            return
        self._update_row(run, throttle=True)
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

    def _highlighted(self) -> LiveRun | None:
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
        """A new probe: the target, being edited."""
        target = self._field("target")
        if self._edited is not None and self._edited is not target:
            self._end_edit(self._edited)
        self.set_focus(target)          # now, not after the keys already on their way
        self._begin_edit(target)

    def action_leave_form(self) -> None:
        self.query_one("#runs", DataTable).focus()

    def action_focus_runs(self) -> None:
        self.query_one("#runs", DataTable).focus()

    def show_report(self, report: Any) -> None:
        pass
