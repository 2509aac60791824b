"""Host roles: this machine runs guests (KVM, the Hyper-V root partition) beside its layers.
The Xen dom0 role is decided with the Xen layer and the OpenVZ host role with the container
layer, from the same signals."""
from __future__ import annotations

from inspector.discover.virt.model import STRONG, Evidence, HostRole
from inspector.discover.virt.signals import Signals
from inspector.model import known
from inspector.roots.host import HostRoot


def kvm_host(root: HostRoot, sig: Signals, in_vm: bool) -> HostRole | None:
    if not (root.exists("sys/devices/virtual/misc/kvm") or root.exists("dev/kvm")):
        return None
    flags = sig.cpu_flags if known(sig.cpu_flags) else set()
    virt_ext = sorted(flags & {"vmx", "svm"})
    if not virt_ext:
        return None     # /dev/kvm without VT-x/AMD-V cannot run guests (common in microVMs)
    return HostRole("kvm-host", "nested: KVM inside a guest" if in_vm else "KVM hypervisor",
                    [Evidence("/sys/devices/virtual/misc/kvm", "present", "kvm-host", STRONG),
                     Evidence("/proc/cpuinfo flags", " ".join(virt_ext), "kvm-host", STRONG)])


def hyperv_root(sig: Signals) -> HostRole | None:
    """The Hyper-V root partition: CpuManagement privilege (leaf 0x40000003 EBX bit 12)."""
    block = sig.cpuid.block("microsoft")
    if block is None:
        return None
    privileges = block.leaves.get(block.base + 3)
    if privileges and privileges[1] & (1 << 12):
        return HostRole("hyperv-root", "Hyper-V root partition (the host)", [Evidence(
            f"cpuid 0x{block.base + 3:08x} EBX bit 12", "CpuManagement", "hyperv-root", STRONG)])
    return None
