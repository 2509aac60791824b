"""Health rules for the virt section.

The layer summary itself is information, not a finding. Findings are what an SRE should act on
or know before trusting other numbers: a Xen HVM guest on emulated devices, container signals
that contradict each other, a VM layer that could only be guessed. (TSO on a Xen netfront NIC
belongs to the network rules.)"""
from __future__ import annotations

from collections.abc import Iterable

from inspector.discover.virt import SUSPECT, VirtSection
from inspector.model import Finding, Level, Report


def rules(report: Report) -> Iterable[Finding]:
    section = report.section("virt")
    if not isinstance(section, VirtSection):
        return []
    out: list[Finding] = []
    for layer in section.vm_layers:
        if layer.verdict == "xen" and layer.guest_mode == "HVM":
            out.append(Finding(
                Level.WARN, "virt", "Xen HVM guest without PV drivers: disk and network are emulated",
                [f"{e.source}: {e.value}" for e in layer.evidence if e.points_to in
                 ("HVM", "no-pv-drivers", "xen")],
                "Install or enable the Xen PV drivers (xen-blkfront, xen-netfront; Citrix/XenServer "
                "VM tools) so the guest runs as PVHVM; emulated IDE/e1000 cost latency and CPU.",
                code="virt.xen_hvm_no_pv_drivers"))
        if layer.present and layer.confidence == "low":
            out.append(Finding(
                Level.WARN, "virt", f"virtualization guessed with low confidence: {layer.label()}",
                [f"{e.source}: {e.value}" for e in layer.evidence][:5],
                "Run as root (CPUID via /dev/cpu, DMI raw entries) for a firmer answer.",
                code="virt.low_confidence"))
    container = section.layer("container")
    if container is not None:
        disagree = [e for e in container.evidence if e.source == "container signals"]
        if disagree:
            out.append(Finding(
                Level.WARN, "virt", f"container signals disagree ({disagree[0].value}); "
                f"reported as {container.label()}",
                [f"{e.source}: {e.value}" for e in container.evidence if e.points_to != "none"][:6],
                "Tools that read one signal (systemd-detect-virt, virt-what) may name another "
                "runtime; trust the namespace and cgroup evidence.", code="virt.container_conflict"))
        suspects = [e for e in container.evidence if e.weight == SUSPECT]
        if suspects and not container.present:
            out.append(Finding(
                Level.OK, "virt", "stray container marker ignored: " +
                ", ".join(e.source for e in suspects) + " on the host's PID namespace",
                [f"{e.source}: {e.note}" for e in suspects],
                "systemd-detect-virt and virt-what report a container here; they are wrong.",
                code="virt.stray_container_marker"))
    return out
