"""QA of `inspector report` as an operator reads it at 80 columns: no figure cut, no line past
the terminal, a finding always says what to do."""
from __future__ import annotations

import io

from rich.cells import cell_len
from rich.console import Console

from inspector.collect import build_report
from inspector.host import HostRoot
from inspector.render import render_report
from conftest import fixture_root


def report_text(root: str, width: int = 80, sections: list[str] | None = None) -> str:
    report = build_report(HostRoot(str(fixture_root(root))), sections)
    buf = io.StringIO()
    render_report(report, Console(file=buf, width=width, color_system=None))
    return buf.getvalue()


def test_nic_table_keeps_queue_length_and_carrier_at_80_columns():
    text = report_text("net-errors", sections=["net"])
    table = text.split("╭─ Network")[1].split("counters and offloads")[0]
    rows = {cells[0]: cells for cells in
            ([c.strip() for c in line.split("│")[1:-1]] for line in table.splitlines()
             if line.count("│") >= 8)}
    assert "…" not in table
    assert rows["eno1"][3:5] == ["1500", "1000"], rows["eno1"]
    assert rows["eno2"][6].startswith("down, no") and "carrier" in table
    assert max(cell_len(line) for line in text.splitlines()) <= 80
