"""The section table (inspector.report.sections): every entry's lazy names load and fit, and every
health rule module is in it."""
from __future__ import annotations

import importlib
import inspect
import pkgutil
import typing

import inspector.health
from inspector.report.sections import BY_NAME, NAMES, SECTIONS, all_rules, load


def test_every_renderer_loads_and_takes_the_sections_model():
    for section in SECTIONS:
        render = load(section.render)
        assert callable(render), section.render
        assert list(inspect.signature(render).parameters) == ["section"], section.render


def test_every_screen_loads_and_shows_its_section():
    from inspector.tui.base import InspectorScreen
    screens = [s for s in SECTIONS if s.screen is not None]
    assert [s.name for s in screens] == ["storage", "virt", "net", "dns"]
    for section in screens:
        assert section.screen is not None
        cls = load(section.screen.ref)
        assert issubclass(cls, InspectorScreen) and section.name == cls.MODE, section.screen


def test_every_collector_returns_a_dataclass_type():
    for section in SECTIONS:
        returned = typing.get_type_hints(section.collect)["return"]
        assert hasattr(returned, "__dataclass_fields__"), section.name


def test_every_health_rule_module_judges_in_the_table():
    modules = {m.name for m in pkgutil.iter_modules(inspector.health.__path__)}
    with_rules = {name for name in modules
                  if hasattr(importlib.import_module(f"inspector.health.{name}"), "rules")}
    assert with_rules == {rule_set.name for rule_set in all_rules()}
    for rule_set in all_rules():
        assert rule_set.rules.__module__ == f"inspector.health.{rule_set.name}"


def test_names_and_aliases_are_unique():
    aliases = [a for s in SECTIONS for a in (s.name, *s.aliases)]
    assert len(aliases) == len(set(aliases))
    assert NAMES == tuple(BY_NAME) == ("storage", "virt", "net", "dns", "cpu")


def test_report_section_option_reads_the_table():
    from inspector.commands.report import parse_sections
    assert parse_sections(["Virtualization,resolver", "cpu"]) == ["virt", "dns", "cpu"]
