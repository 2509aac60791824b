"""Virtualization as layers: container over VM(s) over hardware, each with its evidence.

Unlike systemd-detect-virt (which names the container and hides the VM) and virt-what, every
layer is always reported, and every signal that was looked at is kept as evidence, including
the ones that were *ignored* and why (a stray /.dockerenv on a host PID namespace, a DMI vendor
string without the CPUID hypervisor bit).

Layers are listed innermost first: [container, vm (, vm of a nested guest), hardware]. A layer
that is not there has verdict "none" (kept so its evidence stays visible). Host roles (Xen dom0
"xen-host", "kvm-host", Hyper-V root, OpenVZ host) are reported beside the layers.

Modules: model (the types), signals (machine facts gathered once), vm (VM layers and hardware),
container (container signals gathered, then a pure decision), roles (host roles).
"""
from __future__ import annotations

from inspector.discover.virt.container import decide_container, gather_container
from inspector.discover.virt.model import (
    AZURE_ASSET_TAG,
    IGNORED,
    INFO,
    INIT_PID_NS_INODE,
    MEDIUM,
    STRONG,
    SUSPECT,
    WEAK,
    Confidence,
    CpuidSummary,
    Evidence,
    HostRole,
    Layer,
    LayerKind,
    RoleName,
    VirtSection,
    Weight,
)
from inspector.discover.virt.reported import Reported, gather_reported
from inspector.discover.virt.roles import hyperv_root, kvm_host
from inspector.discover.virt.signals import gather
from inspector.discover.virt.vm import confidential, vm_layers
from inspector.model import known
from inspector.roots.host import HostRoot

__all__ = ["AZURE_ASSET_TAG", "IGNORED", "INFO", "INIT_PID_NS_INODE", "MEDIUM", "STRONG",
           "SUSPECT", "WEAK", "Confidence", "CpuidSummary", "Evidence", "HostRole", "Layer",
           "LayerKind", "RoleName", "VirtSection", "Weight", "collect"]


def _summary(layers: list[Layer]) -> str:
    return " > ".join(layer.label() for layer in layers if layer.present)


def _conflicts(layers: list[Layer]) -> list[str]:
    out = []
    for layer in layers:
        ignored = [e for e in layer.evidence if e.weight in (SUSPECT, IGNORED)]
        for e in ignored:
            out.append(f"{e.source} ({e.value}) points to {e.points_to} but was {e.weight}: {e.note}")
        if any(e.source == "container signals" for e in layer.evidence):
            out.append(next(f"container signals disagree: {e.value}" for e in layer.evidence
                            if e.source == "container signals"))
    return out


def _apply_reported_vm(vms: list[Layer], reported: Reported) -> None:
    """A VM the host's tools named (a sosreport's hostnamectl, lscpu, dmesg): it fills a VM
    layer that nothing in the tree could decide, and backs one that was decided."""
    if not reported.vms:
        return
    layer = next((v for v in vms if v.kind == "vm"), None)
    if layer is None:
        return
    verdicts = {verdict for verdict, _, _ in reported.vms}
    if not layer.present and layer.confidence != "high":
        verdict, flavor, _ = reported.vms[0]
        layer.verdict, layer.flavor = verdict, flavor or layer.flavor
        layer.confidence = "high" if len(reported.vms) > 1 and len(verdicts) == 1 else "medium"
    for verdict, _, evidence in reported.vms:
        if verdict != layer.verdict:
            evidence.weight, evidence.note = INFO, (
                f"the layer rests on stronger signals ({layer.verdict}); " + evidence.note)
        layer.evidence.append(evidence)


def _apply_reported_container(container: Layer, reported: Reported) -> None:
    if reported.container is not None:
        verdict, evidence = reported.container
        if container.verdict in ("none", "container-other") and container.confidence != "high":
            container.verdict, container.confidence = verdict, "medium"
        elif container.verdict != verdict:
            evidence.weight, evidence.note = INFO, (
                f"the layer rests on stronger signals ({container.verdict}); " + evidence.note)
        elif container.confidence == "low":
            container.confidence = "medium"
        container.evidence.append(evidence)
    elif reported.vms and any(e.source.startswith("hostnamectl") for _, _, e in reported.vms):
        container.evidence.append(Evidence(
            "hostnamectl status Virtualization", "a VM, no container", "none", INFO,
            "systemd-detect-virt names a container before a VM"))
    elif reported.no_virt is not None:
        container.evidence.append(reported.no_virt)


def collect(root: HostRoot) -> VirtSection:
    sig = gather(root)
    roles: list[HostRole] = []
    vms, hardware = vm_layers(sig, roles)
    hv_root = hyperv_root(sig)
    if hv_root is not None:
        roles.append(hv_root)
        for layer in vms:
            if layer.verdict == "hyperv":
                layer.verdict = "none"
                layer.flavor = None
                layer.evidence.append(Evidence("Hyper-V root partition", "yes", "none", INFO,
                                               "the root partition is the Hyper-V host"))
    reported = gather_reported(root)
    _apply_reported_vm(vms, reported)
    innermost_vm = next((layer for layer in vms if layer.present and layer.verdict != "uml"), None)
    if innermost_vm is not None:
        confidential(sig, innermost_vm)
    container, container_roles = decide_container(gather_container(root, sig.osrelease))
    _apply_reported_container(container, reported)
    roles.extend(container_roles)
    in_vm = any(layer.present for layer in vms)
    kvm = kvm_host(root, sig, in_vm)
    if kvm is not None:
        roles.append(kvm)
    if not in_vm and (sig.dmi.get("sys_vendor") or sig.dmi.get("product_name")):
        # Inside a guest DMI describes the virtual machine, not the hardware below.
        hardware.evidence.insert(0, Evidence(
            "/sys/class/dmi/id", f"{sig.dmi.get('sys_vendor', '?')} "
            f"{sig.dmi.get('product_name', '')}".strip(), "hardware", INFO))
    if not in_vm:
        # Bare metal is only as certain as the "no VM" verdict it rests on: a root with nothing
        # to read must not claim hardware with high confidence.
        hardware.confidence = next((layer.confidence for layer in vms if layer.kind == "vm"),
                                   hardware.confidence)
    layers = [container, *vms, hardware]
    blocks = sig.cpuid.blocks
    cpuid = CpuidSummary(
        method=sig.cpuid.method, vendor=sig.cpuid.vendor, hypervisor_bit=sig.cpuid.hypervisor_bit,
        blocks=[f"{b.label} {b.signature or '(empty)'} ({b.hypervisor or 'unknown'})"
                for b in blocks] if known(blocks) else blocks)
    return VirtSection(layers=layers, roles=roles, cpuid=cpuid, summary=_summary(layers),
                       conflicts=_conflicts(layers))
