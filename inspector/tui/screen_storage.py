"""Storage: the device tree with health badges; the selected device's details, members, health
block and live iostat -x figures with an await chart. `/` filters the tree, `p` probes the
selected device (opens the IO probe form)."""
from __future__ import annotations

from typing import Any

from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.widgets import Input, Static, Tree

from inspector.model import Finding, Report, Unknown
from inspector.tui.base import InspectorScreen
from inspector.tui.modelview import (badge, child_groups, detail_table, findings_for, get,
                                     label_of, section_state, worst_level)
from inspector.widgets.chart import LiveChart


def build_nodes(section: Any) -> list[tuple[str, Any, list]]:
    """[(label, item, children)]: the lsblk-like tree when the section has `devices` and
    `roots` (names, children by name), else the section's nested collections in model order."""
    devices, roots = get(section, "devices"), get(section, "roots")
    if isinstance(devices, dict) and isinstance(roots, list):
        def node(name: str, depth: int, seen: frozenset) -> tuple[str, Any, list]:
            dev = devices.get(name)
            kids = [k for k in (get(dev, "children", default=[]) or []) if k in devices]
            if depth > 12 or name in seen:
                kids = []
            return (name, dev, [node(k, depth + 1, seen | {name}) for k in kids])
        return [node(r, 0, frozenset()) for r in roots if r in devices] + detached_nodes(section)

    def nodes_of(obj: Any, depth: int) -> list[tuple[str, Any, list]]:
        out = []
        if depth > 6:
            return out
        for _, items in child_groups(obj):
            if len(items) == 1 and not isinstance(get(obj, _), (list, dict)):
                continue  # a single nested record (queue limits ...) is a detail, not a child
            for item in items:
                out.append((label_of(item), item, nodes_of(item, depth + 1)))
        return out
    return nodes_of(section, 0)


def detached_nodes(section: Any) -> list[tuple[str, Any, list]]:
    """Drives and flash controllers with a health record but no block device (a failed or
    detached card such as an offline fct1): `inspector report` lists them, so the tree does."""
    devices, health = get(section, "devices"), get(section, "health")
    if not isinstance(health, dict):
        return []
    return [(name, record, []) for name, record in health.items()
            if not (isinstance(devices, dict) and name in devices)]


def is_detached(section: Any, name: str, item: Any) -> bool:
    health = get(section, "health")
    devices = get(section, "devices")
    return (isinstance(health, dict) and health.get(name) is item
            and not (isinstance(devices, dict) and name in devices))


def extra_blocks(section: Any, name: str) -> list:
    """md/dm records and the drive health block of one device, when the section has them."""
    parts: list = []
    for field_name, title in (("md", "md array"), ("dm", "device-mapper")):
        table = get(section, field_name)
        if isinstance(table, dict) and name in table:
            parts.append(Text(title, style="bold"))
            parts.append(detail_table(table[name]))
    health = get(section, "health")
    if isinstance(health, dict) and name in health:
        parts.append(Text("drive health", style="bold"))
        try:
            from inspector.render.drives import render_health
            parts.append(render_health(health[name]))
        except Exception:
            parts.append(detail_table(health[name]))
    return parts


def detached_state(record: Any, short: bool = False) -> str:
    """The controller's own state words: "failed" (short, for the tree) or fio-status's
    "Failed: DEVICE IS OFFLINE ..." line."""
    from inspector.model import known
    for name in (("state", "health") if short else ("status_line", "state", "health")):
        value = get(record, name)
        if isinstance(value, str) and value and known(value):
            return value if len(value) <= 60 else value[:59] + "…"
    if isinstance(record, Unknown):
        return str(record)
    return "no block device"


class StorageScreen(InspectorScreen):
    MODE = "storage"
    AUTO_FOCUS = "#device-tree"
    BINDINGS = [Binding("slash", "filter", "Filter", key_display="/", id="storage.filter"),
                Binding("p", "probe", "IO probe here", id="storage.probe"),
                Binding("escape", "clear_filter", "Clear filter", show=False,
                        id="storage.clear_filter")]

    def compose_body(self) -> ComposeResult:
        with Horizontal(id="storage-main"):
            with Vertical(id="tree-pane"):
                yield Input(placeholder="filter devices (esc clears)", id="tree-filter")
                yield Tree("storage", id="device-tree")
            with VerticalScroll(id="device-pane"):
                yield Static(id="device-detail")
                yield Static(id="device-iostat", classes="line")
                yield LiveChart("await (ms)", series=("await",), unit="ms", id="await-chart",
                                placeholder="no live data")

    def on_mount(self) -> None:
        self._filter = ""
        self._tree_key = None
        self._selected: Any = None
        self._selected_label = ""
        super().on_mount()

    # ------------------------------------------------------------------ tree
    def show_report(self, report: Report | None) -> None:
        tree = self.query_one("#device-tree", Tree)
        section = report.section("storage") if report else None
        findings = report.findings if report else []
        state = section_state(section, "storage") if report else "collecting..."
        key = (id(section), self._filter, len(findings))
        if key == self._tree_key:
            return
        self._tree_key = key
        tree.clear()
        tree.root.expand()
        if state:
            tree.root.set_label(Text("storage", style="bold"))
            tree.root.add_leaf(Text(state, style="yellow"))
            self._show_detail(None, findings, state)
            return
        tree.root.set_label(Text("storage", style="bold"))
        nodes = build_nodes(section)
        self._add(tree.root, nodes, findings, section)
        if not tree.root.children:
            tree.root.add_leaf(Text("no devices" if not self._filter else "no match", style="grey62"))
        self._show_detail(self._selected, findings, None)

    def _matches(self, label: str, children: list) -> bool:
        if not self._filter:
            return True
        if self._filter.lower() in label.lower():
            return True
        return any(self._matches(lbl, ch) for lbl, _, ch in children)

    def _add(self, parent, nodes: list, findings: list[Finding], section: Any = None) -> None:
        for label, item, children in nodes:
            if not self._matches(label, children):
                continue
            text = Text(label)
            level = worst_level(findings_for(findings, label))
            if level is not None:
                text.append(" ").append_text(badge(level))
            if section is not None and is_detached(section, label, item):
                text.append(f" {detached_state(item, short=True)}, no dev", style="grey62")
            if children:
                node = parent.add(text, data=(label, item), expand=True)
                self._add(node, children, findings, section)
            else:
                parent.add_leaf(text, data=(label, item))

    def on_tree_node_highlighted(self, event: Tree.NodeHighlighted) -> None:
        data = event.node.data
        if data is None:
            return
        self._selected_label, self._selected = data
        report = getattr(self.app, "report", None)
        self._show_detail(self._selected, report.findings if report else [], None)
        chart = self.query_one("#await-chart", LiveChart)
        chart.clear()
        self.show_live(getattr(self.app, "live_sample", None), None)

    def _show_detail(self, item: Any, findings: list[Finding], state: str | None) -> None:
        detail = self.query_one("#device-detail", Static)
        if state:
            detail.update(Text(state, style="yellow"))
            return
        if item is None:
            detail.update(Text("select a device (arrows, / to filter)", style="grey62"))
            return
        own = findings_for(findings, self._selected_label)
        report = getattr(self.app, "report", None)
        section = report.section("storage") if report else None
        parts: list = [Text(self._selected_label, style="bold cyan")]
        # what is wrong comes first: on an 80x24 terminal the attribute table would push it
        # below the fold, and a CRIT badge in the tree is what brought the operator here
        if own:
            from inspector.render.findings import finding_body   # as `report` shows it
            grid = Table.grid(padding=(0, 1))   # wrapped lines hang under the message
            grid.add_column(no_wrap=True)
            grid.add_column()
            for f in own:
                grid.add_row(badge(f.level), finding_body(f))
            parts.append(grid)
        else:
            parts.append(Text("no findings for this device", style="green"))
        if is_detached(section, self._selected_label, item):
            # the health block below says everything the vendor tool knows about it
            parts.append(Text(f"no block device: {detached_state(item)} (controller without a "
                              "block device: failed, offline or detached)", style="yellow"))
        else:
            parts.append(detail_table(item))
        parts += extra_blocks(section, self._selected_label)
        detail.update(Group(*parts))

    # ------------------------------------------------------------------ live
    def show_live(self, sample, error) -> None:
        line = self.query_one("#device-iostat", Static)
        chart = self.query_one("#await-chart", LiveChart)
        reason = self.live_reason()
        if reason:
            line.update(Text(f"iostat  {reason}", style="yellow"), layout=False)
            chart.set_placeholder(reason)
            return
        disk = next((d for d in sample.disks if d.name == self._selected_label), None)
        if disk is None:
            line.update(Text(f"iostat  no live figures for {self._selected_label or 'this node'}",
                             style="grey62"))
            chart.set_placeholder("select a block device")
            return
        text = Text("iostat  ", style="bold")
        for label, value, fmt in (("r/s", disk.r_s, "{:.1f}"), ("w/s", disk.w_s, "{:.1f}"),
                                  ("rkB/s", disk.rkb_s, "{:.0f}"), ("wkB/s", disk.wkb_s, "{:.0f}"),
                                  ("await", disk.await_ms, "{:.2f}ms"), ("aqu-sz", disk.aqu_sz, "{:.2f}"),
                                  ("%util", disk.util, "{:.1f}")):
            text.append(f"{label} ", style="grey62").append(fmt.format(value) if value is not None else "-").append("  ")
        line.update(text, layout=False)
        chart.push(disk.await_ms)

    # ------------------------------------------------------------------ actions
    def action_filter(self) -> None:
        box = self.query_one("#tree-filter", Input)
        box.display = True
        box.focus()

    def on_input_changed(self, event: Input.Changed) -> None:
        if event.input.id == "tree-filter":
            self._filter = event.value.strip()
            self._tree_key = None
            self.show_report(getattr(self.app, "report", None))

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if event.input.id == "tree-filter":
            self.query_one("#device-tree", Tree).focus()

    def action_clear_filter(self) -> None:
        box = self.query_one("#tree-filter", Input)
        if box.display or self._filter:
            box.value = ""
            box.display = False
            self._filter = ""
            self._tree_key = None
            self.show_report(getattr(self.app, "report", None))
            self.query_one("#device-tree", Tree).focus()
        else:
            self.app.action_back()

    def action_probe(self) -> None:
        target = None
        if self._selected_label:
            target = f"/dev/{self._selected_label}"
        self.app.open_probe_form("io", target)
