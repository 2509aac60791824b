"""Rich renderer for the virt section: the layers in one line, then the evidence per layer."""
from __future__ import annotations

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from inspector.discover.virt import Layer, VirtSection, Weight
from inspector.model import Unknown, known

_WEIGHT_STYLE = {Weight.STRONG: "green", Weight.MEDIUM: "cyan", Weight.WEAK: "dim",
                 Weight.INFO: "dim", Weight.SUSPECT: "yellow", Weight.IGNORED: "yellow"}


def layers_line(section: VirtSection) -> str:
    """"docker > kvm (firecracker) > hardware"; "hardware" alone on bare metal; the host roles
    after it ("hardware; host role: xen-host"), since a dom0 looks like bare metal otherwise."""
    line = section.summary or "hardware"
    hardware = section.layer("hardware")
    if line == "hardware" and hardware is not None and hardware.confidence == "low":
        line = "hardware?"   # nothing showed a VM, but nothing could be read either
    if section.roles:
        line += "; host role: " + ", ".join(role.role for role in section.roles)
    return line


def _layer_label(layer: Layer, in_vm: bool) -> str:
    if layer.kind != "hardware":
        return layer.label()
    if layer.flavor:
        return layer.flavor
    return "below the hypervisor (not visible)" if in_vm else "physical machine"


def _layer_title(layer: Layer, in_vm: bool) -> Text:
    title = Text(f"{layer.kind}: ", style="bold")
    title.append(_layer_label(layer, in_vm), style="bold cyan" if layer.present else "dim")
    title.append(f"  confidence {layer.confidence}", style="dim")
    return title


def render(section: object) -> RenderableType:
    if isinstance(section, Unknown) or not isinstance(section, VirtSection):
        return Text(str(section), style="yellow")
    parts: list[RenderableType] = [Text.assemble(("layers  ", "bold"),
                                                 (layers_line(section), "bold magenta"))]
    for role in section.roles:
        parts.append(Text.assemble(("role    ", "bold"), (role.role, "bold magenta"),
                                   f"  {role.detail}"))
        for e in role.evidence:
            parts.append(Text(f"    {e.source}: {e.value}", style="dim"))
    cpuid = section.cpuid
    if known(cpuid.method):
        blocks = ", ".join(cpuid.blocks) if known(cpuid.blocks) else str(cpuid.blocks)
        parts.append(Text(f"cpuid   via {cpuid.method}, {cpuid.vendor}, hypervisor bit "
                          f"{int(cpuid.hypervisor_bit) if known(cpuid.hypervisor_bit) else '?'}"
                          f"{', blocks ' + blocks if blocks else ''}", style="dim"))
    else:
        parts.append(Text(f"cpuid   {cpuid.method}", style="dim"))
    in_vm = any(layer.kind == "vm" and layer.present for layer in section.layers)
    for layer in section.layers:
        parts.append(_layer_title(layer, in_vm))
        # A grid keeps wrapped evidence lines indented under their own column.
        grid = Table.grid(padding=(0, 1))
        grid.add_column(width=3)
        grid.add_column(width=7, no_wrap=True)
        grid.add_column(ratio=1, overflow="fold")   # a container id is evidence: never cut
        for e in layer.evidence:
            body = Text(f"{e.source}: {e.value}")
            body.append(f" -> {e.points_to}", style="dim")
            if e.note:
                body.append(f"  ({e.note})", style="italic dim")
            grid.add_row("", Text(e.weight, style=_WEIGHT_STYLE.get(e.weight, "")), body)
        if not layer.evidence:
            grid.add_row("", "", Text("(nothing visible from inside)", style="dim"))
        parts.append(grid)
    return Group(*parts)
