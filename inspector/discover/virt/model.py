"""The virt section's types: evidence, layers, host roles, and the section itself."""
from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Literal

from inspector.model import Unknown

INIT_PID_NS_INODE = 0xEFFFFFFC          # PROC_PID_INIT_INO: the host's initial PID namespace
AZURE_ASSET_TAG = "7783-7084-3265-9085-8269-3286-77"


class Weight(StrEnum):
    """How much one signal counted toward its layer's verdict."""
    STRONG = "strong"
    MEDIUM = "medium"
    WEAK = "weak"
    SUSPECT = "suspect"     # seen but doubted (a note says why): kept, not counted
    IGNORED = "ignored"     # seen and overruled (a note says why)
    INFO = "info"           # context, not a claim


STRONG, MEDIUM, WEAK = Weight.STRONG, Weight.MEDIUM, Weight.WEAK
SUSPECT, IGNORED, INFO = Weight.SUSPECT, Weight.IGNORED, Weight.INFO
LayerKind = Literal["container", "vm", "hardware"]
Confidence = Literal["high", "medium", "low"]
RoleName = Literal["xen-host", "kvm-host", "hyperv-root", "openvz-host", "vserver-host"]


@dataclass
class Evidence:
    """One signal looked at, and how much it counted."""
    source: str          # where: "/sys/hypervisor/type", "cpuid 0x40000000", "/.dockerenv"
    value: str           # what was seen there
    points_to: str       # the verdict it supports ("kvm", "docker", "none", "pv-drivers" ...)
    weight: Weight       # strong | medium | weak | suspect | ignored | info
    note: str = ""       # why it was weighed so (mandatory for suspect/ignored)


@dataclass
class Layer:
    """One layer of the stack this system runs on: a container, a VM, or the hardware."""
    kind: LayerKind                  # container | vm | hardware
    verdict: str                     # "none", "docker", "kvm", "xen", "hardware" ...
    flavor: str | None = None        # firecracker, xenserver, aws, azure, gce, rootless ...
    guest_mode: str | None = None    # Xen: PV, HVM, PVHVM, PVH
    confidence: Confidence = "high"  # high | medium | low
    evidence: list[Evidence] = field(default_factory=list)  # every signal looked at
    confidential: str | None = None  # VM memory encryption: "AMD SEV-SNP", "Intel TDX" ...

    @property
    def present(self) -> bool:
        return self.verdict != "none"

    def label(self) -> str:
        extra = [x for x in (self.guest_mode, self.flavor, self.confidential) if x]
        return f"{self.verdict} ({', '.join(extra)})" if extra else self.verdict


@dataclass
class HostRole:
    """This machine hosts guests or containers (beside the layers it runs in)."""
    role: RoleName                   # the kind of guests or containers it hosts
    detail: str = ""                 # one line for people: "KVM hypervisor", "Xen dom0 ..."
    evidence: list[Evidence] = field(default_factory=list)  # the signals that show the role


@dataclass
class CpuidSummary:
    """What CPUID said, and how it was read."""
    # dev-cpu (/dev/cpu/0/cpuid, root) | probe (unprivileged child process); Unknown: no CPUID
    method: str | Unknown
    vendor: str | Unknown            # CPU vendor of leaf 0: GenuineIntel, AuthenticAMD ...
    hypervisor_bit: bool | Unknown   # leaf 1 ECX bit 31: running under a hypervisor
    # hypervisor leaf blocks found from 0x40000000 up: "0x40000000 KVMKVMKVM (kvm)"
    blocks: list[str] | Unknown


@dataclass
class VirtSection:
    """Virtualization as layers (container, VMs, hardware), host roles, and the CPUID view."""
    layers: list[Layer]              # container, VM(s), hardware: innermost first
    roles: list[HostRole]            # hypervisor/container host roles; [] on a plain machine
    cpuid: CpuidSummary              # the CPUID facts the verdicts used
    summary: str                     # "docker > kvm (firecracker) > hardware"
    # signals that were overruled (suspect/ignored evidence) or that disagree, one line each
    conflicts: list[str] = field(default_factory=list)

    def layer(self, kind: LayerKind) -> Layer | None:
        return next((layer for layer in self.layers if layer.kind == kind), None)

    @property
    def vm_layers(self) -> list[Layer]:
        return [layer for layer in self.layers if layer.kind == "vm"]
