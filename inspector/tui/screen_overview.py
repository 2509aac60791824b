"""Overview: what is wrong, then what the host is doing, at any size.

Findings first (live ones as they begin and end, then the rest worst first, one line each, OK
ones folded; Enter shows evidence and advice), the virtualization and resolver verdicts one
line each, then the live panels (CPU, memory, load and pressure, filesystems, disks, NICs,
processes) painted by inspector.tui.dashboard for the rows in view into one canvas that
refreshes once per live sample. When even the panels' smallest forms do not fit, the whole
body scrolls (PageDown, End, the mouse wheel).
"""
from __future__ import annotations

import time

from rich.console import Group
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.message import Message
from textual.widgets import DataTable, Static

from inspector.model import Finding, Report, known
from inspector.tui import dashboard
from inspector.tui.base import InspectorScreen
from inspector.tui.findings_rows import FindingRow, finding_rows
from inspector.tui.flow_canvas import FlowCanvas
from inspector.tui.modelview import badge
from inspector.tui.process_lines import tasks_text
from inspector.tui.screen_help import TextScreen
from inspector.tui.summaries import dns_line, virt_evidence, virt_line

SHORT_BELOW = 30     # rows: fewer findings rows, no identity line
# a live finding's figures (its message, rewritten each sample) are rewritten in the table at
# most this often: a DataTable redraws every cell on any cell's change, which was a third of
# the Overview's CPU at 1 Hz while a finding was active; rows that come, go or change level
# are shown at once, and the panels below show each second's figures
MESSAGES_EVERY_S = 3.0


class FindingsTable(DataTable):
    """The findings list; Enter opens the highlighted finding (declared here, on the focused
    widget, so it is the Enter the help lists, not the table's own row selection)."""
    HELP_TITLE = "findings list"
    BINDINGS = [Binding("enter", "screen.finding", "Finding details", id="overview.finding")]

    class Resized(Message):
        """Its height changed (the identity line hidden on a short terminal, the "+N more"
        line shown): how many findings fit must be counted again."""

    def on_resize(self) -> None:
        self.post_message(self.Resized())


class OverviewScreen(InspectorScreen):
    MODE = "overview"
    AUTO_FOCUS = "#findings"
    BINDINGS = [Binding("o", "toggle_ok", "OK findings", id="overview.ok"),
                Binding("e", "evidence", "Virt evidence", id="overview.evidence"),
                Binding("d", "app.switch_mode('storage')", "Disks", show=False,
                        id="overview.disks"),
                Binding("n", "app.switch_mode('net')", "NICs", show=False, id="overview.nics"),
                Binding("t", "processes", "Tasks", id="overview.tasks"),
                # the body scrolls whatever has the focus (the findings list keeps ↑ ↓)
                Binding("pagedown", "scroll('page_down')", "Scroll", show=False,
                        priority=True, id="overview.page_down"),
                Binding("pageup", "scroll('page_up')", "Scroll up", show=False, priority=True,
                        id="overview.page_up"),
                Binding("end", "scroll('end')", "Last panel", show=False, priority=True,
                        id="overview.end"),
                Binding("home", "scroll('home')", "First line", show=False, priority=True,
                        id="overview.home")]

    def compose_body(self) -> ComposeResult:
        with VerticalScroll(id="overview-body", can_focus=False):
            yield Static(id="identity", classes="line")
            yield Static(id="virtline", classes="line")
            yield Static(id="dnsline", classes="line")
            table = FindingsTable(id="findings", cursor_type="row", zebra_stripes=False)
            table.add_columns("level", "subject", "finding")
            yield table
            yield Static(id="findings-more", classes="line")
            yield FlowCanvas(self._paint, id="dashboard")

    def on_mount(self) -> None:
        self._findings: list[Finding | None] = []   # per table row; None: the OK fold row
        self._findings_key: tuple | None = None
        self._messages_at = 0.0        # when the messages were last rewritten in place
        self._show_ok = False
        super().on_mount()

    # ------------------------------------------------------------------ report
    def show_report(self, report: Report | None) -> None:
        self.set_class((self.size.height or self.app.size.height) < SHORT_BELOW, "-short")
        identity = Text(no_wrap=True, overflow="ellipsis")
        width = self.size.width or self.app.size.width
        error = self.inspector.collect_error
        if report is None:
            waiting = error or "collecting..."
            identity.append("host  ", style="bold").append(waiting, style="yellow" if error else "grey62")
            self.query_one("#identity", Static).update(identity)
            self.query_one("#virtline", Static).update(Text(f"virt  {waiting}", style="grey62"))
            self.query_one("#dnsline", Static).update(Text(f"dns   {waiting}", style="grey62"))
        else:
            h = report.host

            def show(value: object) -> str:  # the reason is one keypress away in the report
                return str(value) if known(value) else "?"
            identity.append("host  ", style="bold")
            identity.append(show(h.hostname), style="bold cyan")
            identity.append(f"  kernel {show(h.kernel)}  {show(h.machine)}")
            self.query_one("#identity", Static).update(identity)
            self.query_one("#virtline", Static).update(virt_line(report.section("virt")))
            self.query_one("#dnsline", Static).update(dns_line(report.section("dns"),
                                                               width - 2))
        self._fill_findings()
        self._repaint()

    # ------------------------------------------------------------------ live
    def show_live(self, sample, error) -> None:
        self._repaint()
        self._fill_findings()      # no-op unless the findings changed

    def _repaint(self) -> None:
        if self.query("#dashboard"):
            self.query_one("#dashboard", FlowCanvas).repaint()

    def _paint(self, width: int, rows: int) -> list[Text]:
        state = self.inspector
        # a failed or timed-out sample: every panel says so rather than show stale figures
        view = None if state.live_error else state.live_sample
        ctx = dashboard.Ctx(view=view, trends=state.trends, report=state.report,
                            reason=None if view is not None else self.live_reason())
        return dashboard.paint(ctx, width, rows)

    def _fit_dashboard(self) -> None:
        """The panels are laid out for the rows left in view under the findings."""
        if not self.query("#dashboard"):
            return
        body = self.query_one("#overview-body", VerticalScroll)
        canvas = self.query_one("#dashboard", FlowCanvas)
        canvas.set_rows_in_view(body.scrollable_content_region.height - canvas.virtual_region.y)

    # ------------------------------------------------------------------ findings
    def _fill_findings(self) -> None:
        state = self.inspector
        report = state.report
        # whether a report is in belongs to the key: an empty list before the first report
        # ("collecting...") and after it ("no findings") are not the same table
        done = report is not None
        view = None if state.live_error else state.live_sample
        rows, folded = finding_rows(list(report.findings) if report else [], view, self._show_ok)
        width = self.size.width or self.app.size.width
        frame = (done, self._show_ok, width, state.collect_error, folded,
                 tuple((r.subject, str(r.badge)) for r in rows))
        key = (frame, tuple(r.message for r in rows))
        if key == self._findings_key:
            return  # unchanged: do not rebuild the table every refresh
        table = self.query_one("#findings", DataTable)
        # only messages changed since the table was last written (a live finding's figures)
        messages_only = self._findings_key is not None and self._findings_key[0] == frame
        written = self._update_messages(table, rows, folded, width, messages_only) if rows \
            else None
        if written is not None:
            if written:
                self._findings_key = key
            return
        self._findings_key = key
        self._findings = [r.finding for r in rows] + ([None] if folded else [])
        self._messages_at = time.monotonic()
        table.clear()
        self._cells = []
        self.call_after_refresh(self._show_more)
        if not rows and not folded:
            error = state.collect_error
            waiting = error or "collecting..."
            empty = (Text(" OK ", style="bold black on green") if done else "", "",
                     "no findings: nothing wrong detected" if done else
                     Text(waiting, style="yellow" if error else "grey62"))
            self._set_widths(table, [empty])
            table.add_row(*empty)
            self.call_after_refresh(self._fit_dashboard)
            return
        cells = self._cells_of(rows, folded, width)
        self._set_widths(table, cells)
        for i, row in enumerate(cells):
            table.add_row(*row, key=str(i))
        self._cells = cells
        self.call_after_refresh(self._fit_dashboard)

    def _cells_of(self, rows: list[FindingRow], folded: int, width: int) -> list[tuple]:
        subject_w = min(16, max((len(r.subject) for r in rows), default=8))
        # level badge (9) + subject + cell padding: the message gets the rest, cut with "…" so
        # the table never needs a horizontal scrollbar (Enter shows the whole finding)
        message_w = max(20, width - 9 - subject_w - 8)
        cells: list[tuple[Text, Text, Text]] = []
        for r in rows:
            subject = r.subject if len(r.subject) <= subject_w else r.subject[:subject_w - 1] + "…"
            message = r.message if len(r.message) <= message_w else r.message[:message_w - 1] + "…"
            style = "grey62" if r.dim else ""
            cells.append((r.badge, Text(subject, style=style or "bold"), Text(message, style=style)))
        if folded:
            cells.append((Text(f" {folded} OK ", style="green"), Text(""),
                          Text(f"{folded} OK finding{'s' if folded > 1 else ''} folded: "
                               f"o shows {'them' if folded > 1 else 'it'}", style="grey62")))
        return cells

    def _update_messages(self, table: DataTable, rows: list[FindingRow], folded: int,
                         width: int, messages_only: bool) -> bool | None:
        """Only the messages changed: those cells are rewritten in place (True), or, when
        they alone changed since the table was last written (`messages_only`), not before
        MESSAGES_EVERY_S since then (False: the next sample asks again). None: the rows
        changed, rebuild."""
        cells = self._cells_of(rows, folded, width)
        before = getattr(self, "_cells", [])
        columns = list(table.columns.values())
        if (len(cells) != len(before) or table.row_count != len(cells) or len(columns) != 3
                or any(_cell_len(cell) > (column.width or 0)
                       for row in cells for cell, column in zip(row, columns))):
            return None
        self._findings = [r.finding for r in rows] + ([None] if folded else [])  # for Enter
        now = time.monotonic()
        if messages_only and now - self._messages_at < MESSAGES_EVERY_S:
            return False
        self._messages_at = now
        # as many rows as before (a finding that changed level, or one that ended as another
        # began on a loaded host): the changed cells are rewritten in place, since clearing
        # and refilling the table lays the whole screen out again (every widget repainted)
        for i, (old, new) in enumerate(zip(before, cells)):
            for column, old_cell, new_cell in zip(columns, old, new):
                if old_cell != new_cell:
                    table.update_cell(str(i), column.key, new_cell)
        self._cells = cells
        return True

    @staticmethod
    def _set_widths(table: DataTable, rows: list[tuple]) -> None:
        """Column widths from the rows, set outright: left to DataTable's auto width they are
        measured on a later idle pass, and a frame drawn before it showed the header widths
        (messages cut to "no findings:")."""
        for index, column in enumerate(table.columns.values()):
            cells = [Text(str(column.label))] + [r[index] if isinstance(r[index], Text)
                                                 else Text(str(r[index])) for r in rows]
            column.width = max(cell.cell_len for cell in cells)
            column.auto_width = False

    def _show_more(self) -> None:
        """A findings list longer than the pane says so: "+N more", never a silent cut."""
        table = self.query_one("#findings", DataTable)
        more = self.query_one("#findings-more", Static)
        visible = max(0, table.scrollable_content_region.height - 1)   # minus the header row
        first = int(table.scroll_y)
        below = len(self._findings) - first - visible
        above = first
        if below <= 0 and above <= 0:
            if more.display:
                more.display = False
                self.call_after_refresh(self._show_more)  # the table grew by a row
                self.call_after_refresh(self._fit_dashboard)
            return
        text = Text(no_wrap=True, overflow="ellipsis", style="bold yellow")
        if below > 0:
            text.append(f" +{below} more finding{'s' if below > 1 else ''} below")
        if above > 0:
            text.append(f"{' ·' if below > 0 else ''} {above} above")
        text.append("  (↑ ↓ move, Enter details)", style="grey62")
        more.update(text)
        if not more.display:
            more.display = True
            self.call_after_refresh(self._show_more)  # the table lost a row: count again
            self.call_after_refresh(self._fit_dashboard)

    def on_resize(self) -> None:
        self._findings_key = None   # messages are cut to the width: cut them again
        super().on_resize()
        self.call_after_refresh(self._show_more)
        self.call_after_refresh(self._fit_dashboard)

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        self.call_after_refresh(self._show_more)

    def on_findings_table_resized(self, event: FindingsTable.Resized) -> None:
        self.call_after_refresh(self._show_more)
        self.call_after_refresh(self._fit_dashboard)

    # ------------------------------------------------------------------ actions
    def action_scroll(self, where: str) -> None:
        body = self.query_one("#overview-body", VerticalScroll)
        {"page_down": body.scroll_page_down, "page_up": body.scroll_page_up,
         "end": body.scroll_end, "home": body.scroll_home}[where](animate=False)

    def action_toggle_ok(self) -> None:
        self._show_ok = not self._show_ok
        self._fill_findings()

    def action_evidence(self) -> None:
        report = self.inspector.report
        section = report.section("virt") if report else None
        lines = virt_evidence(section)
        body = Group(virt_line(section), Text(""),
                     Text("\n".join(f"• {line}" for line in lines) if lines
                          else "no evidence recorded", style="" if lines else "grey62"))
        self.app.push_screen(TextScreen("Virtualization evidence", body))

    def action_processes(self) -> None:
        """Every process doing IO and every D-state task of the last sample, not just the
        rows that fit the panel."""
        view = self.inspector.live_sample
        body: Text | Group
        if view is None:
            body = Text(self.live_reason() or "no live sample yet", style="yellow")
        else:
            body = Group(*tasks_text(view))
        self.app.push_screen(TextScreen("Tasks: IO and D state", body))

    def action_finding(self) -> None:
        table = self.query_one("#findings", DataTable)
        if not self._findings or table.cursor_row is None:
            return
        f = self._findings[min(table.cursor_row, len(self._findings) - 1)]
        if f is None:       # the "N OK folded" row: unfold
            self.action_toggle_ok()
            return
        body = Text()
        body.append_text(badge(f.level)).append(f" {f.subject}: ", style="bold").append(f.message)
        if f.code:
            body.append(f"\ncode: {f.code}", style="grey62")
        for line in f.evidence:
            body.append(f"\nevidence: {line}", style="grey70")
        if f.advice:
            body.append(f"\nadvice: {f.advice}", style="italic cyan")
        self.app.push_screen(TextScreen("Finding", body))

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        self.action_finding()      # a click on a row


def _cell_len(cell: object) -> int:
    return cell.cell_len if isinstance(cell, Text) else len(str(cell))


__all__ = ["OverviewScreen", "FindingsTable", "FindingRow"]
