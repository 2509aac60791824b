"""Overview: what is wrong, then what the host is doing, on one screen at any size.

Findings first (worst first, one line each, OK ones folded; Enter shows evidence and advice),
the virtualization and resolver verdicts one line each, then the live panels (CPU, memory,
load and pressure, filesystems, disks, NICs, processes) painted by inspector.tui.dashboard
into one canvas that refreshes once per live sample.
"""
from __future__ import annotations

from rich.console import Group
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.message import Message
from textual.widgets import DataTable, Static

from inspector.model import Finding, Level, Report, known
from inspector.tui import dashboard
from inspector.tui.base import InspectorScreen
from inspector.tui.modelview import badge
from inspector.tui.screen_help import TextScreen
from inspector.tui.summaries import dns_line, virt_evidence, virt_line
from inspector.widgets.canvas import TextCanvas

SHORT_BELOW = 30     # rows: fewer findings rows, no identity line


class FindingsTable(DataTable):
    """The findings list; Enter opens the highlighted finding (declared here, on the focused
    widget, so it is the Enter the help lists, not the table's own row selection)."""
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
                Binding("t", "processes", "Tasks", id="overview.tasks")]

    def compose_body(self) -> ComposeResult:
        yield Static(id="identity", classes="line")
        yield Static(id="virtline", classes="line")
        yield Static(id="dnsline", classes="line")
        table = FindingsTable(id="findings", cursor_type="row", zebra_stripes=False)
        table.add_columns("level", "subject", "finding")
        yield table
        yield Static(id="findings-more", classes="line")
        yield TextCanvas(self._paint, id="dashboard")

    def on_mount(self) -> None:
        self._findings: list[Finding | None] = []   # per table row; None: the OK fold row
        self._findings_key: tuple | None = None
        self._show_ok = False
        super().on_mount()

    # ------------------------------------------------------------------ report
    def show_report(self, report: Report | None) -> None:
        self.set_class((self.size.height or self.app.size.height) < SHORT_BELOW, "-short")
        identity = Text(no_wrap=True, overflow="ellipsis")
        error = self.inspector.collect_error
        if report is None:
            waiting = error or "collecting..."
            identity.append("host  ", style="bold").append(waiting, style="yellow" if error else "grey62")
            self.query_one("#identity", Static).update(identity)
            self.query_one("#virtline", Static).update(Text(f"virt  {waiting}", style="grey62"))
            self.query_one("#dnsline", Static).update(Text(f"dns   {waiting}", style="grey62"))
            self._fill_findings([])
            self._repaint()
            return
        h = report.host

        def show(value: object) -> str:  # the reason is one keypress away in the report
            return str(value) if known(value) else "?"
        identity.append("host  ", style="bold")
        identity.append(show(h.hostname), style="bold cyan")
        identity.append(f"  kernel {show(h.kernel)}  {show(h.machine)}")
        self.query_one("#identity", Static).update(identity)
        self.query_one("#virtline", Static).update(virt_line(report.section("virt")))
        self.query_one("#dnsline", Static).update(dns_line(report.section("dns")))
        self._fill_findings(self._merged(report))
        self._repaint()

    def _merged(self, report: Report | None) -> list[Finding]:
        """Discovery findings plus the live ones (NIC stall, processes stuck in D state)."""
        findings = list(report.findings) if report else []
        sample = self.inspector.live_sample
        live = list(getattr(sample, "findings", []) or [])
        if live:
            from inspector.health import sort_findings
            findings = sort_findings(findings + live)
        return findings

    # ------------------------------------------------------------------ live
    def show_live(self, sample, error) -> None:
        self._repaint()
        report = self.inspector.report
        if report is not None:
            self._fill_findings(self._merged(report))  # no-op unless the findings changed

    def _repaint(self) -> None:
        if self.query("#dashboard"):
            self.query_one("#dashboard", TextCanvas).repaint()

    def _paint(self, width: int, height: int) -> list[Text]:
        state = self.inspector
        # a failed or timed-out sample: every panel says so rather than show stale figures
        view = None if state.live_error else state.live_sample
        ctx = dashboard.Ctx(view=view, trends=state.trends, report=state.report,
                            reason=None if view is not None else self.live_reason())
        return dashboard.paint(ctx, width, height)

    # ------------------------------------------------------------------ findings
    def _fill_findings(self, findings: list[Finding]) -> None:
        # whether a report is in belongs to the key: an empty list before the first report
        # ("collecting...") and after it ("no findings") are not the same table
        done = self.inspector.report is not None
        width = self.size.width or self.app.size.width
        key = (done, self._show_ok, width, self.inspector.collect_error,
               tuple((f.level, f.subject, f.message) for f in findings))
        if key == self._findings_key:
            return  # unchanged: do not rebuild the table every refresh
        self._findings_key = key
        shown = [f for f in findings if self._show_ok or f.level != Level.OK]
        folded = len(findings) - len(shown)
        self._findings = list(shown) + ([None] if folded else [])
        table = self.query_one("#findings", DataTable)
        table.clear()
        self.call_after_refresh(self._show_more)
        if not findings:
            error = self.inspector.collect_error
            waiting = error or "collecting..."
            empty = (Text(" OK ", style="bold black on green") if done else "", "",
                     "no findings: nothing wrong detected" if done else
                     Text(waiting, style="yellow" if error else "grey62"))
            self._set_widths(table, [empty])
            table.add_row(*empty)
            return
        subject_w = min(16, max(len(f.subject) for f in findings))
        # level badge (9) + subject + cell padding: the message gets the rest, cut with "…" so
        # the table never needs a horizontal scrollbar (Enter shows the whole finding)
        message_w = max(20, width - 9 - subject_w - 8)
        rows: list[tuple[Text, Text, str | Text]] = []
        for f in shown:
            subject = f.subject if len(f.subject) <= subject_w else f.subject[:subject_w - 1] + "…"
            message = f.message if len(f.message) <= message_w else f.message[:message_w - 1] + "…"
            rows.append((badge(f.level), Text(subject, style="bold"), message))
        if folded:
            rows.append((Text(f" {folded} OK ", style="green"), Text(""),
                         Text(f"{folded} OK finding{'s' if folded > 1 else ''} folded: "
                              f"o shows {'them' if folded > 1 else 'it'}", style="grey62")))
        self._set_widths(table, rows)
        for i, row in enumerate(rows):
            table.add_row(*row, key=str(i))

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
            return
        text = Text(no_wrap=True, overflow="ellipsis", style="bold yellow")
        if below > 0:
            text.append(f" +{below} more finding{'s' if below > 1 else ''} below")
        if above > 0:
            text.append(f"{' ·' if below > 0 else ''} {above} above")
        text.append("  (↓/PgDn scroll, Enter details)", style="grey62")
        more.update(text)
        if not more.display:
            more.display = True
            self.call_after_refresh(self._show_more)  # the table lost a row: count again

    def on_resize(self) -> None:
        self._findings_key = None   # messages are cut to the width: cut them again
        super().on_resize()
        self.call_after_refresh(self._show_more)

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        self.call_after_refresh(self._show_more)

    def on_findings_table_resized(self, event: FindingsTable.Resized) -> None:
        self.call_after_refresh(self._show_more)

    # ------------------------------------------------------------------ actions
    def action_toggle_ok(self) -> None:
        self._show_ok = not self._show_ok
        report = self.inspector.report
        self._fill_findings(self._merged(report) if report else [])

    def action_evidence(self) -> None:
        report = self.inspector.report
        section = report.section("virt") if report else None
        lines = virt_evidence(section)
        body = Group(virt_line(section), Text(""),
                     Text("\n".join(f"• {line}" for line in lines) if lines
                          else "no evidence recorded", style="" if lines else "grey62"))
        self.app.push_screen(TextScreen("Virtualization evidence", body))

    def action_processes(self) -> None:
        """Every top-IO process and every D-state task of the last sample, not just the
        rows that fit the panel."""
        view = self.inspector.live_sample
        body: Text | Group
        if view is None:
            body = Text(self.live_reason() or "no live sample yet", style="yellow")
        else:
            body = Group(*dashboard._top_io(view.top_io, 1000), Text(""),
                         *dashboard._dstate(view.dstate, 1000))
        self.app.push_screen(TextScreen("Tasks: top IO and D state", body))

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
