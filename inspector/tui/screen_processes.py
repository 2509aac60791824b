"""Processes: who is doing it, btop-class and read-only.

One row per process (threads folded into it by the sampler), sorted by CPU, memory (RSS +
swap), IO (read + write bytes/s) or time in D state, largest first; `c` `m` `i` `D` pick the
order, Enter shows the whole (redacted) command line. The rows are positions, not processes:
each sample rewrites the cells that changed (update_cell in one batch), never clears the
table, so the cursor stays where the operator put it.
"""
from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import DataTable, Static

from inspector.live.processes import ProcessRate, SortKey, sort_processes
from inspector.model import Unknown
from inspector.text.escapes import visible
from inspector.tui.base import InspectorScreen
from inspector.tui.panels import cut, level_style
from inspector.tui.process_lines import dstate_note, one_line, short_command
from inspector.tui.screen_help import TextScreen
from inspector.widgets import units

ROWS_MAX = 200           # processes listed: the top ones by the sort key
SORT_TITLES = {SortKey.CPU: "CPU", SortKey.MEM: "memory", SortKey.IO: "IO",
               SortKey.DSTATE: "time in D state"}
# (label, width, right-aligned)
COLUMNS = (("pid", 7, True), ("user", 9, False), ("S", 1, False), ("cpu%", 6, True),
           ("rss", 6, True), ("swap", 6, True), ("read/s", 9, True), ("write/s", 9, True),
           ("in D", 5, True), ("thr", 4, True), ("command", 0, False))
FIXED_WIDTH = sum(w + 2 for _, w, _ in COLUMNS[:-1])


def _size_kib(kib: int | None) -> str:
    return "-" if kib is None else units.size(kib * 1024) if kib else "0"


def process_cells(p: ProcessRate, command_w: int) -> tuple[str | Text, ...]:
    cpu_style = level_style(p.cpu_pct, 80, 100)
    return (str(p.pid), cut(one_line(p.user), 9), Text(p.state, style="bold red" if p.state == "D" else ""),
            Text(f"{p.cpu_pct:.1f}", style=cpu_style), _size_kib(p.rss_kib),
            _size_kib(p.swap_kib), units.bytes_s(p.read_bytes_s),
            units.bytes_s(p.write_bytes_s),
            Text(f"{p.dstate_s:.0f}s" if p.dstate_s else "", style=level_style(p.dstate_s, 5, 30)),
            str(p.threads), cut(short_command(p), command_w))


class ProcessesScreen(InspectorScreen):
    MODE = "processes"
    AUTO_FOCUS = "#process-table"
    BINDINGS = [Binding("c", "sort('cpu')", "By CPU", id="processes.cpu"),
                Binding("m", "sort('mem')", "By memory", id="processes.mem"),
                Binding("i", "sort('io')", "By IO", id="processes.io"),
                Binding("D", "sort('dstate')", "By D state", id="processes.dstate"),
                Binding("enter", "details", "Command line", id="processes.details")]

    def compose_body(self) -> ComposeResult:
        yield Static(id="processes-summary", classes="line")
        table: DataTable = DataTable(id="process-table", cursor_type="row", zebra_stripes=False)
        for label, width, _ in COLUMNS:
            table.add_column(label, width=width or 20, key=label)
        yield table

    def on_mount(self) -> None:
        self.sort_key = SortKey.CPU
        self._shown: list[ProcessRate] = []
        self._cells: list[tuple] = []         # what each row shows now
        self._command_w = 20
        super().on_mount()

    # ------------------------------------------------------------------ live
    def show_report(self, report) -> None:
        self._fit_command_column()
        self.show_live(self.inspector.live_sample, self.inspector.live_error)

    def show_live(self, sample, error) -> None:
        summary = self.query_one("#processes-summary", Static)
        reason = self.live_reason()
        procs = None if reason else getattr(sample, "processes", None)
        if reason or not isinstance(procs, list):
            text = reason or (procs.reason if isinstance(procs, Unknown) else "not sampled")
            summary.update(Text(f" {text}", style="yellow"))
            self._fill([])
            return
        head = Text(f" {len(procs)} processes", style="bold")
        head.append(f"  sorted by {SORT_TITLES[self.sort_key]}", style="cyan")
        note = dstate_note(sample)
        if note:
            head.append(f"  ·  {note}", style="grey62")
        head.append("  ·  c m i D sort, Enter command line", style="grey62")
        summary.update(head)
        self._fill(sort_processes(procs, self.sort_key, ROWS_MAX))

    def _fill(self, shown: list[ProcessRate]) -> None:
        table = self.query_one("#process-table", DataTable)
        self._shown = shown
        cells = [process_cells(p, self._command_w) for p in shown]
        with self.app.batch_update():
            while table.row_count > len(cells):
                table.remove_row(str(table.row_count - 1))
                self._cells.pop()
            for i, row in enumerate(cells):
                if i >= table.row_count:
                    table.add_row(*row, key=str(i))
                    self._cells.append(row)
                    continue
                before = self._cells[i]
                for (label, _, _), old, new in zip(COLUMNS, before, row):
                    if str(old) != str(new) or getattr(old, "style", None) != getattr(new, "style", None):
                        table.update_cell(str(i), label, new)
                self._cells[i] = row

    def _fit_command_column(self) -> None:
        width = self.size.width or self.app.size.width
        command_w = max(12, width - FIXED_WIDTH - 3)
        if command_w == self._command_w:
            return
        self._command_w = command_w
        table = self.query_one("#process-table", DataTable)
        column = table.columns.get("command")    # type: ignore[call-overload]
        if column is not None:
            column.width = command_w
        self._cells = [tuple("\0" for _ in COLUMNS) for _ in self._cells]   # redraw all
        table.refresh()

    # ------------------------------------------------------------------ actions
    def action_sort(self, key: str) -> None:
        self.sort_key = SortKey(key)
        self.show_live(self.inspector.live_sample, self.inspector.live_error)

    def action_details(self) -> None:
        table = self.query_one("#process-table", DataTable)
        row = table.cursor_row
        if row is None or not 0 <= row < len(self._shown):
            return
        p = self._shown[row]
        body = Text()
        body.append(f"{one_line(p.comm)}  pid {p.pid}  user {one_line(p.user)}  state {p.state}  "
                    f"{p.threads} thread{'s' if p.threads != 1 else ''}\n", style="bold")
        body.append(visible(p.cmdline) or f"[{one_line(p.comm)}]")
        body.append("\n\ncommand lines are redacted as captures redact them", style="grey62")
        self.app.push_screen(TextScreen("Process", body))

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        self.action_details()

