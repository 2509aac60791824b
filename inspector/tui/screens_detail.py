"""Virtualization, Network and DNS screens.

Each shows its report section through the same renderer `inspector report` uses (so a section
is drawn the same way everywhere), plus the screen's live part: steal time chart (virt), rx/tx
and error charts of the selected NIC (network), per-server latency while a DNS probe runs (dns).
"""
from __future__ import annotations

from typing import Any

from rich.console import Group
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.widgets import DataTable, Static

from inspector.model import Report, Unknown
from inspector.tui.base import InspectorScreen
from inspector.tui.modelview import findings_for, get, is_dc, label_of, section_state, worst_level
from inspector.tui.probes.dns_view import DnsProbeView, dns_runs
from inspector.tui.summaries import virt_line
from inspector.tui.trends import cpu_series, nic_series
from inspector.widgets.chart import LiveChart
from inspector.widgets.units import bytes_s as rate


def section_body(name: str, section: Any, title: str) -> Any:
    state = section_state(section, title)
    if state:
        return Text(state, style="yellow")
    from inspector.render.report import render_section
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
        if self.new_sample_to_chart():
            chart.push(sample.steal, sample.iowait)

    def fill_charts(self) -> None:
        trends = self.inspector.trends
        chart = self.query_one("#steal-chart", LiveChart)
        chart.clear()
        chart.extend(zip(trends.get(cpu_series("steal")), trends.get(cpu_series("iowait"))))
        self.charted_from_trends()


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


NIC_COLUMNS = (("NIC", "name"), ("KIND", "kind"), ("STATE", "state"), ("rx B/s", "rx"),
               ("tx B/s", "tx"), ("rx/tx trend", "trend"), ("err+drop/s", "err"),
               ("MTU", "mtu"), ("DRIVER", "driver"), ("offloads", "offloads"))
NIC_LIVE = ("state", "rx", "tx", "trend", "err")
WIDE_NET = 110      # columns from which KIND and the trend column show


class NetScreen(SectionScreen):
    """One table, one row per NIC: link state (STALLED when the receive path froze), live
    rx/tx with a sparkline, errors and drops per second, MTU, driver and the main offloads;
    the first physical NIC that is up is selected. Below: the selected NIC's findings, link,
    queues, its rx/tx and error charts, every offload under `ethtool -k`'s names and the Xen
    advice where it applies; then the network sysctls."""
    MODE = "net"
    SECTION = "net"
    TITLE = "Network"
    AUTO_FOCUS = "#nic-table"

    def compose_body(self) -> ComposeResult:
        yield DataTable(id="nic-table", cursor_type="row", zebra_stripes=False)
        yield Static(Text("offloads: tso gso gro lro, UPPER CASE on, lower case off  "
                          "(the detail lists every one as ethtool -k does)", style="grey62",
                          no_wrap=True, overflow="ellipsis"), id="nic-note", classes="line")
        with VerticalScroll(id="net-pane"):
            yield Static(id="nic-detail")
            with Horizontal(id="nic-charts"):
                yield LiveChart("rx/tx", series=("rx", "tx"), unit="B/s", id="nic-rate-chart",
                                placeholder="no live data")
                yield LiveChart("errors+drops /s", series=("errors+drops",),
                                id="nic-err-chart", placeholder="no live data")
            yield Static(id="nic-offloads")
            yield Static(id="net-body")

    def on_mount(self) -> None:
        self._nics: list[Any] = []
        self._selected = ""
        self._table_key: tuple | None = None
        self._painted: tuple | None = None     # what the detail and body below show
        self._live_cells: dict[str, tuple] = {}
        self._wide = False
        self._trend_w = 0
        super().on_mount()

    def show_report(self, report: Report | None) -> None:
        section = self._section(report)
        table = self.query_one("#nic-table", DataTable)
        error = self.inspector.collect_error
        state = section_state(section, "network") if report else (error or "collecting...")
        nics, why_none = ([], state) if state else nic_items(section)
        findings = report.findings if report else []
        width = self.size.width or self.app.size.width
        key = (id(report), width, self.inspector.live_sample is not None, state)
        if key != self._table_key:
            self._table_key = key
            self._nics = nics
            self._build_table(table, nics, findings, why_none, width)
        # a visit or a new live sample repaints the screen from the same report: the NIC's
        # detail and the sysctl table (Rich tables, most of a visit's CPU) stay as they are
        painted = (key, self._selected)
        if painted == self._painted:
            return
        self._painted = painted
        self._show_nic(findings)
        body = self.query_one("#net-body", Static)
        if report is None or state:
            body.update(Text(state or "collecting...", style="yellow"))
        else:
            from inspector.render.net import sysctl_table
            body.update(sysctl_table(section))

    def _columns(self) -> list[str]:
        return [key for _, key in NIC_COLUMNS
                if (key not in ("kind", "trend") or self._wide) and (key != "trend" or self._trend_w)]

    def _build_table(self, table: DataTable, nics: list[Any], findings, why_none, width) -> None:
        from inspector.tui.net_rows import default_nic, offloads_text
        table.clear(columns=True)
        self._live_cells = {}
        if not nics:
            table.add_column("network interfaces")
            table.add_row(Text(why_none or "no network interfaces visible in this root",
                               style="yellow"))
            return
        self._wide = width >= WIDE_NET
        name_w = min(16, max(3, max(len(n.name) for n in nics)))
        kind_w = min(14, max(4, max(len(n.kind) for n in nics)))
        longest_driver = max(6, max(len(n.driver) if isinstance(n.driver, str) else 1
                                    for n in nics))
        from inspector.tui.net_rows import state_text
        state_w = min(10, max(7, max(state_text(n).cell_len for n in nics)))  # 7: STALLED
        widths = {"name": name_w, "kind": kind_w, "state": state_w, "rx": 6, "tx": 6,
                  "err": 10, "mtu": 5, "driver": 0, "offloads": 15}
        # the driver's whole name where the row has room for it (virtio_net, not virtio_n)
        room = width - 4 - sum(w + 2 for k, w in widths.items()
                               if k != "driver" and (k != "kind" or self._wide))
        driver_w = max(6, min(14 if self._wide else 12, longest_driver, room - 2))
        widths["driver"] = driver_w
        used = sum(w + 2 for k, w in widths.items() if k != "kind" or self._wide)
        self._trend_w = min(50, width - used - 4) if self._wide and width - used - 4 >= 12 else 0
        widths["trend"] = self._trend_w
        for label, key in NIC_COLUMNS:
            if key in self._columns():
                table.add_column(label, width=widths[key], key=key)
        view = self.inspector.live_sample
        rates = {n.name: n for n in view.nics} if view is not None else {}
        for nic in nics:
            level = worst_level(findings_for(findings, nic.name))
            name = Text(nic.name, style="bold")
            if level is not None and level.label != "ok":
                name.stylize(LEVEL_TEXT_STYLE[level.label])
            driver = nic.driver if isinstance(nic.driver, str) else "-"
            live = self._live_values(nic, rates)
            self._live_cells[nic.name] = live
            cells = {"name": name, "kind": Text(nic.kind[:kind_w]),
                     "mtu": Text(str(nic.mtu) if isinstance(nic.mtu, int) else "?",
                                 justify="right"),
                     "driver": Text(driver if len(driver) <= driver_w
                                    else driver[:driver_w - 1] + "…"),
                     "offloads": offloads_text(nic),
                     **dict(zip(self._live_keys(), live))}
            table.add_row(*[cells[key] for key in self._columns()], key=nic.name)
        if not self._selected or self._selected not in {n.name for n in nics}:
            self._selected = default_nic(nics) or ""
        index = next((i for i, n in enumerate(nics) if n.name == self._selected), 0)
        table.move_cursor(row=index)

    def _live_keys(self) -> list[str]:
        return [k for k in NIC_LIVE if k != "trend" or self._trend_w]

    def _live_values(self, nic: Any, rates: dict) -> tuple:
        from inspector.tui.net_rows import state_text
        from inspector.widgets.chart import compact_number
        from inspector.widgets.spark import sparkline
        from inspector.widgets.units import per_s
        n = rates.get(nic.name)
        if n is None:
            blank = Text("-", style="grey50", justify="right")
            return tuple(state_text(nic) if k == "state" else blank for k in self._live_keys())
        state = Text("STALLED", style="bold white on red") if n.stalled else state_text(nic)
        cells = [state, Text(compact_number(n.rx_bps or 0.0), justify="right"),
                 Text(compact_number(n.tx_bps or 0.0), justify="right")]
        if self._trend_w:
            half = max(1, (self._trend_w - 1) // 2)
            trends = self.inspector.trends
            trend = Text(sparkline(trends.get(nic_series(nic.name, "rx")), half), style="green")
            trend.append(" ").append(sparkline(trends.get(nic_series(nic.name, "tx")), half),
                                     style="cyan")
            cells.append(trend)
        bad = (n.errors_s or 0.0) + (n.drops_s or 0.0)
        cells.append(Text(per_s(bad), justify="right", style="bold yellow" if bad else ""))
        return tuple(cells)

    def _show_nic(self, findings) -> None:
        from inspector.tui.net_rows import nic_detail
        nic = next((n for n in self._nics if label_of(n) == self._selected), None)
        detail = self.query_one("#nic-detail", Static)
        offloads = self.query_one("#nic-offloads", Static)
        if nic is None:
            detail.update("")
            offloads.update("")
            return
        parts = nic_detail(nic, findings)
        detail.update(Group(*parts[:-2]))       # the charts come before the long offload list
        offloads.update(Group(*parts[-2:]))

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        if (event.row_key is not None and event.row_key.value
                and event.row_key.value != self._selected):
                self._selected = event.row_key.value
                report = self.inspector.report
                self._show_nic(report.findings if report else [])
                self._painted = (self._table_key, self._selected)
                self.fill_charts()

    def fill_charts(self) -> None:
        trends = self.inspector.trends
        rx, tx = trends.get(nic_series(self._selected, "rx")), trends.get(nic_series(self._selected, "tx"))
        rate_chart = self.query_one("#nic-rate-chart", LiveChart)
        rate_chart.clear()
        rate_chart.extend(zip(rx, tx))
        err_chart = self.query_one("#nic-err-chart", LiveChart)
        err_chart.clear()
        err_chart.extend((v,) for v in trends.get(nic_series(self._selected, "errors")))
        self.charted_from_trends()

    def show_live(self, sample, error) -> None:
        rate_chart = self.query_one("#nic-rate-chart", LiveChart)
        err_chart = self.query_one("#nic-err-chart", LiveChart)
        reason = self.live_reason()
        if reason:
            rate_chart.set_placeholder(reason)
            err_chart.set_placeholder(reason)
            return
        rates = {n.name: n for n in sample.nics}
        if self._nics and self._live_cells:
            table = self.query_one("#nic-table", DataTable)
            keys = self._live_keys()
            with self.app.batch_update():
                for nic in self._nics:
                    live = self._live_values(nic, rates)
                    old = self._live_cells.get(nic.name)
                    self._live_cells[nic.name] = live
                    for col, new, prev in zip(keys, live, old or (None,) * len(keys)):
                        if prev is None or prev.plain != new.plain or prev.style != new.style:
                            table.update_cell(nic.name, col, new)
        nic = rates.get(self._selected)
        if nic is None:
            rate_chart.set_placeholder(f"no live figures for {self._selected or 'any NIC'}")
            return
        rate_chart.border_title = f"{nic.name} rx {rate(nic.rx_bps)} tx {rate(nic.tx_bps)}" + \
            ("  STALLED" if nic.stalled else "")
        if self.new_sample_to_chart():
            rate_chart.push(nic.rx_bps, nic.tx_bps)
            err_chart.push((nic.errors_s or 0.0) + (nic.drops_s or 0.0))


LEVEL_TEXT_STYLE = {"crit": "bold red", "warn": "bold yellow", "unknown": "magenta"}


class DnsScreen(SectionScreen):
    MODE = "dns"
    SECTION = "dns"
    TITLE = "Resolver"
    BINDINGS = [Binding("p", "probe", "DNS probe", id="dns.probe")]

    def compose_body(self) -> ComposeResult:
        with VerticalScroll(id="dns-pane"):
            yield Static(id="dns-body")
            yield DnsProbeView(id="dns-probe")

    def _probe_view(self) -> DnsProbeView:
        return self.query_one("#dns-probe", DnsProbeView)

    def show_report(self, report: Report | None) -> None:
        self.query_one("#dns-body", Static).update(self._body(report))

    def on_screen_resume(self) -> None:
        super().on_screen_resume()
        runs = dns_runs(self.inspector.probes.runs)
        self._probe_view().show(runs[-1] if runs else None)   # from its bounded intervals

    def show_probe_update(self, run_id: int) -> None:
        run = self.inspector.probes.get(run_id)
        if run is not None and run.request.kind == "dns":
            self._probe_view().interval(run)

    def show_probe_finished(self, run_id: int) -> None:
        run = self.inspector.probes.get(run_id)
        if run is not None and run.request.kind == "dns":
            self._probe_view().show(run)

    def action_probe(self) -> None:
        # the file this screen analyses, not the last one the form probed
        self.inspector.open_probe_form("dns", "/etc/resolv.conf")
