"""Virtualization, Network and DNS screens.

Each shows its report section through the same renderer `inspector report` uses (so a section
is drawn the same way everywhere), plus the screen's live part: steal time chart (virt), rx/tx
and error charts of the selected NIC (network), per-server latency while a DNS probe runs (dns).
"""
from __future__ import annotations

from typing import Any

from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.widgets import DataTable, Static

from inspector.model import Report
from inspector.tui.base import InspectorScreen
from inspector.tui.messages import ProbeUpdate
from inspector.model import Unknown
from inspector.tui.modelview import (badge, findings_for, fmt_value, get, is_dc, label_of,
                                     scalar_fields, section_state, worst_level)
from inspector.tui.summaries import virt_line
from inspector.tui.units import bytes_s as rate
from inspector.widgets.chart import LiveChart


def section_body(name: str, section: Any, title: str) -> Any:
    state = section_state(section, title)
    if state:
        return Text(state, style="yellow")
    from inspector.render import render_section
    return render_section(name, section)


class SectionScreen(InspectorScreen):
    SECTION = ""
    TITLE = ""

    def _section(self, report: Report | None) -> Any:
        return report.section(self.SECTION) if report else None

    def _body(self, report: Report | None) -> Any:
        if report is None:
            return Text("collecting...", style="grey62")
        return section_body(self.SECTION, self._section(report), self.TITLE.lower())


class VirtScreen(SectionScreen):
    MODE = "virt"
    SECTION = "virt"
    TITLE = "Virtualization"

    def compose_body(self) -> ComposeResult:
        with VerticalScroll(id="virt-pane"):
            yield Static(id="virt-summary", classes="line")
            yield LiveChart("CPU steal (%)", series=("steal", "iowait"), unit="%", id="steal-chart",
                            placeholder="no live data")
            yield Static(id="virt-body")

    def show_report(self, report: Report | None) -> None:
        section = self._section(report)
        self.query_one("#virt-summary", Static).update(
            virt_line(section) if report else Text("collecting...", style="grey62"))
        self.query_one("#virt-body", Static).update(self._body(report))

    def show_live(self, sample, error) -> None:
        chart = self.query_one("#steal-chart", LiveChart)
        reason = self.live_reason()
        if reason:
            chart.set_placeholder(reason)
            return
        chart.push(sample.steal, sample.iowait)


def nic_items(section: Any) -> tuple[list[Any], str | None]:
    """(interfaces, None) or ([], why none are shown). Only the interfaces list counts: the
    sysctls (or any other record list) are never NICs, even when the root has no interfaces."""
    for name in ("nics", "interfaces", "links"):
        value = get(section, name)
        if value is None:
            continue
        if isinstance(value, Unknown):
            return [], f"no network interfaces visible in this root ({value.reason})"
        items = [v for v in (value.values() if isinstance(value, dict) else value)
                 if is_dc(v) or isinstance(v, dict)] if isinstance(value, (list, tuple, dict)) else []
        return items, None if items else "no network interfaces visible in this root"
    return [], "no network interfaces visible in this root"


# what an operator scans first; other fields are in the detail pane
NIC_COLUMNS = ("name", "kind", "driver", "mtu", "tx_queue_len", "operstate", "speed_mbps",
               "carrier")


class NetScreen(SectionScreen):
    MODE = "net"
    SECTION = "net"
    TITLE = "Network"

    def compose_body(self) -> ComposeResult:
        table = DataTable(id="nic-table", cursor_type="row")
        yield table
        with Horizontal(id="nic-charts"):
            yield LiveChart("rx/tx", series=("rx", "tx"), unit="B/s", id="nic-rate-chart",
                            placeholder="no live data")
            yield LiveChart("errors+drops /s", series=("errors", "drops"), id="nic-err-chart",
                            placeholder="no live data")
        with VerticalScroll(id="net-pane"):
            yield Static(id="nic-detail")
            yield Static(id="net-body")

    def on_mount(self) -> None:
        self._nics: list[Any] = []
        self._selected = ""
        self._columns: list[str] = []
        self._table_key = None
        super().on_mount()

    def show_report(self, report: Report | None) -> None:
        section = self._section(report)
        table = self.query_one("#nic-table", DataTable)
        state = section_state(section, "network") if report else "collecting..."
        nics, why_none = ([], state) if state else nic_items(section)
        findings = report.findings if report else []
        key = (id(section), len(findings))
        if key != self._table_key:
            self._table_key = key
            self._nics = nics
            table.clear(columns=True)
            if not nics:
                table.add_column("network interfaces")
                table.add_row(Text(why_none or "no network interfaces visible in this root",
                                   style="yellow"))
            else:
                available = [n for n, v in scalar_fields(nics[0])
                             if not isinstance(v, (list, tuple, dict))]
                preferred = [c for c in NIC_COLUMNS if c in available]
                cols = (preferred or available)[:7]
                self._columns = cols
                table.add_column("")
                for c in cols:
                    table.add_column(c.replace("_", " "))
                for nic in nics:
                    label = label_of(nic)
                    level = worst_level(findings_for(findings, label))
                    table.add_row(badge(level), *[fmt_value(getattr(nic, c, None), 24) for c in cols],
                                  key=label)
                if not self._selected:
                    self._selected = label_of(nics[0])
        self._show_nic(findings)
        self.query_one("#net-body", Static).update(self._body(report))

    def _show_nic(self, findings) -> None:
        nic = next((n for n in self._nics if label_of(n) == self._selected), None)
        detail = self.query_one("#nic-detail", Static)
        if nic is None:
            detail.update("")
            return
        rows = Table(box=None, show_header=False, expand=True)
        rows.add_column(style="bold cyan", no_wrap=True)
        rows.add_column()
        for name, value in scalar_fields(nic):
            rows.add_row(name.replace("_", " "), fmt_value(value))
        alerts = [Text().append_text(badge(f.level)).append(f" {f.message}")
                  for f in findings_for(findings, self._selected)]
        detail.update(Group(Text(self._selected, style="bold cyan"), rows, *alerts))

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        if event.row_key is not None and event.row_key.value:
            if event.row_key.value != self._selected:
                self._selected = event.row_key.value
                for chart in self.query(LiveChart):
                    chart.clear()
                report = getattr(self.app, "report", None)
                self._show_nic(report.findings if report else [])

    def show_live(self, sample, error) -> None:
        rate_chart = self.query_one("#nic-rate-chart", LiveChart)
        err_chart = self.query_one("#nic-err-chart", LiveChart)
        reason = self.live_reason()
        if reason:
            rate_chart.set_placeholder(reason)
            err_chart.set_placeholder(reason)
            return
        nic = next((n for n in sample.nics if n.name == self._selected), None)
        if nic is None:
            rate_chart.set_placeholder(f"no live figures for {self._selected or 'any NIC'}")
            return
        rate_chart.border_title = f"{nic.name} rx {rate(nic.rx_bps)} tx {rate(nic.tx_bps)}" + \
            ("  STALLED" if nic.stalled else "")
        rate_chart.push(nic.rx_bps, nic.tx_bps)
        err_chart.push(nic.errors_s, nic.drops_s)


class DnsScreen(SectionScreen):
    MODE = "dns"
    SECTION = "dns"
    TITLE = "Resolver"
    BINDINGS = [Binding("p", "probe", "DNS probe", id="dns.probe")]

    def compose_body(self) -> ComposeResult:
        with VerticalScroll(id="dns-pane"):
            yield Static(id="dns-body")
            yield Static(id="dns-probe-line", classes="line")
            yield LiveChart("per-server latency (ms)", series=("p50", "p99", "max"), unit="ms",
                            id="dns-chart", placeholder="start a DNS probe (p) to chart latency")

    def show_report(self, report: Report | None) -> None:
        self.query_one("#dns-body", Static).update(self._body(report))
        self._probe_line()

    def on_screen_resume(self) -> None:
        super().on_screen_resume()
        runs = [r for r in self.app.probes.runs if r.request.kind == "dns"]
        if runs:  # redraw the latest DNS run's chart from its history
            chart = self.query_one("#dns-chart", LiveChart)
            chart.clear()
            for update in runs[-1].history:
                self._chart_update(update)

    def _chart_update(self, update: ProbeUpdate) -> None:
        """One line per nameserver when the interval carries each server's latency (the DNS
        probe's rounds do); else the round's p50/p99/max across servers."""
        extra = update.extra or {}
        if extra.get("final"):
            return
        chart = self.query_one("#dns-chart", LiveChart)
        per_server = extra.get("per_server_ms")
        if per_server:
            if set(per_server) - set(chart.series):
                chart.set_series(list(dict.fromkeys([*(s for s in chart.series if s in per_server),
                                                     *per_server])))
            chart.push(*[per_server.get(name) for name in chart.series])
        else:
            chart.push(*[None if v is None else v / 1e6 for v in (update.p50, update.p99, update.max)])

    def _probe_line(self) -> None:
        app: Any = self.app
        runs = [r for r in app.probes.runs if r.request.kind == "dns"]
        line = self.query_one("#dns-probe-line", Static)
        if not runs:
            from inspector.tui.probe_runs import probe_available
            missing = probe_available("dns")
            line.update(Text(f"probe  {missing or 'no DNS probe run yet (p starts one)'}",
                             style="grey62"))
            return
        run = runs[-1]
        text = Text(f"probe  #{run.run_id} {run.state}", style="bold")
        per_server = next((u.extra["per_server_ms"] for u in reversed(run.history)
                           if u.extra and u.extra.get("per_server_ms")), {})
        for server, ms in per_server.items():
            text.append(f"  {server} {ms:.1f} ms" if ms is not None else f"  {server} -")
        line.update(text)

    def show_probe_update(self, update: ProbeUpdate) -> None:
        run = self.app.probes.get(update.run_id)
        if run is None or run.request.kind != "dns":
            return
        self._chart_update(update)
        self._probe_line()

    def show_probe_finished(self, run_id: int) -> None:
        self._probe_line()

    def action_probe(self) -> None:
        self.app.open_probe_form("dns", None)
