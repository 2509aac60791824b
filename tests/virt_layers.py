"""The virt section's layers by kind, and a report of the virt section alone, for the tests."""
from __future__ import annotations

from inspector.discover.virt import Layer, LayerKind, VirtSection
from inspector.model import HostIdentity, Report


def layer_of(section: VirtSection, kind: LayerKind) -> Layer:
    """The section's layer of this kind (collect always gives a container and a hardware one)."""
    found = section.layer(kind)
    assert found is not None, f"no {kind} layer in {section.summary!r}"
    return found


def virt_report(section: VirtSection) -> Report:
    """A report holding this section alone, as the virt rules read it."""
    return Report(host=HostIdentity("test", "6.1", "x86_64", "test", 0.0),
                  sections={"virt": section})
