"""The discovery child escapes each report part by part (tui.discovery._Escaped): host strings
with control characters come out escaped every time, a part that did not change is reused
rather than copied again, and one that changed is escaped anew."""
from __future__ import annotations

import dataclasses

from inspector.model import Finding, HostIdentity, Level, Report
from inspector.tui.discovery import _Escaped


@dataclasses.dataclass
class Disk:
    model: str
    size: int


def _report(model: str, size: int, message: str) -> Report:
    host = HostIdentity(hostname="web\x1b]0;owned\x07", kernel="6.1", machine="x86_64",
                        source="live", collected_at=1.0)
    return Report(host=host, sections={"storage": [Disk(model, size)]},
                  findings=[Finding(Level.WARN, "sda", message, code="x")])


def test_parts_are_escaped_and_unchanged_ones_reused():
    escaped = _Escaped()
    first = escaped.report(_report("SSD\u202eevil", 10, "sda slow\x1b[2J"))
    assert first.host.hostname == "web\\x1b]0;owned\\x07"
    assert first.sections["storage"][0].model == "SSD\\u202eevil"
    assert first.findings[0].message == "sda slow\\x1b[2J"
    again = escaped.report(_report("SSD\u202eevil", 10, "sda slow\x1b[2J"))
    assert again.sections["storage"][0].model == "SSD\\u202eevil"
    clean = escaped.report(_report("SSD", 10, "sda slow"))
    assert clean.sections["storage"][0].model == "SSD"
    same = escaped.report(_report("SSD", 10, "sda slow"))
    assert same.sections["storage"] is clean.sections["storage"]      # reused, not copied
    assert same.findings is clean.findings
    grown = escaped.report(_report("SSD\x1b", 20, "sda slow"))
    assert grown.sections["storage"][0] == Disk("SSD\\x1b", 20)
