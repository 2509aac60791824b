"""The report's sections in one table: for each, the collector that reads it, the health rules
that judge it, the renderer that prints it and the TUI screen that shows it.

Whatever goes over the sections reads this table: collect.build_report, the health step,
`report`'s text and `--section`, the JSON schema and the TUI's tabs. A new section is one
entry here (its collector, rules, renderer and screen modules aside).

Collectors and rules are imported directly. The renderer and the screen are named
"module:attribute" and loaded on first use (`load`), so commands that never draw (`report
--json`, `check`, `export`, `snapshot`) do not import rich's renderers nor Textual
(tests/bench/bench_costs.py prints both import times); tests/unit/test_sections.py checks that
every name loads and fits.
"""
from __future__ import annotations

import functools
import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from inspector.discover import cpu, net, resolver, storage, virt
from inspector.health import RuleSet
from inspector.health import cpu as cpu_rules
from inspector.health import dns as dns_rules
from inspector.health import drives as drive_rules
from inspector.health import net as net_rules
from inspector.health import storage as storage_rules
from inspector.health import virt as virt_rules
from inspector.roots.host import HostRoot


@dataclass(frozen=True)
class ScreenRef:
    title: str      # the label of its tab
    ref: str        # "module:Class" of its inspector.tui.base.InspectorScreen; its MODE is the section's name


@dataclass(frozen=True)
class Section:
    name: str                           # key of Report.sections and of `report --json`
    title: str                          # heading of its panel in `inspector report`
    collect: Callable[[HostRoot], Any]  # the section's dataclass, Unknown(reason) inside, never raises
    rules: tuple[RuleSet, ...]          # its findings, each set judging the whole report
    render: str                         # "module:function": the section's dataclass -> rich renderable
    screen: ScreenRef | None = None     # its TUI screen; None: shown in the overview only
    aliases: tuple[str, ...] = ()       # other names `report --section` accepts


SECTIONS: tuple[Section, ...] = (
    Section("storage", "Storage", storage.collect,
            (RuleSet("storage", storage_rules.rules), RuleSet("drives", drive_rules.rules)),
            "inspector.render.storage:render",
            ScreenRef("Storage", "inspector.tui.screen_storage:StorageScreen")),
    Section("virt", "Virtualization", virt.collect, (RuleSet("virt", virt_rules.rules),),
            "inspector.render.virt:render",
            ScreenRef("Virtualization", "inspector.tui.screens_detail:VirtScreen"),
            aliases=("virtualization",)),
    Section("net", "Network", net.collect, (RuleSet("net", net_rules.rules),),
            "inspector.render.net:render",
            ScreenRef("Network", "inspector.tui.screens_detail:NetScreen"),
            aliases=("network",)),
    Section("dns", "Resolver", resolver.collect, (RuleSet("dns", dns_rules.rules),),
            "inspector.render.resolver:render",
            ScreenRef("DNS", "inspector.tui.screens_detail:DnsScreen"),
            aliases=("resolver",)),
    Section("cpu", "CPU and power", cpu.collect, (RuleSet("cpu", cpu_rules.rules),),
            "inspector.render.cpu:render"),
)
# what runs looks a section up here (a test swaps an entry: tests/conftest.replace_section)
BY_NAME: dict[str, Section] = {section.name: section for section in SECTIONS}
NAMES: tuple[str, ...] = tuple(BY_NAME)


def all_rules() -> list[RuleSet]:
    """Every section's rules, in table order: each set judges whatever sections the report has."""
    return [rule_set for section in BY_NAME.values() for rule_set in section.rules]


@functools.cache
def load(ref: str) -> Any:
    """The attribute a "module:attribute" reference of the table names."""
    module, _, attribute = ref.partition(":")
    return getattr(importlib.import_module(module), attribute)
