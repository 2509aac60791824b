"""What the CPU says about a hypervisor, as evidence: the hypervisor bit (CPUID leaf 1 ECX bit
31, else the kernel's "hypervisor" flag in /proc/cpuinfo) and the hypervisor leaf blocks."""
from __future__ import annotations

from inspector.discover.virt.model import IGNORED, INFO, MEDIUM, STRONG, Evidence
from inspector.discover.virt.signals import Signals, is_x86
from inspector.model import Unknown, known


def hv_bit(sig: Signals) -> tuple[bool | None, Evidence | None]:
    """Hypervisor bit from CPUID, else from the cpuinfo flag (the kernel's view of the same)."""
    if known(sig.cpuid.hypervisor_bit):
        bit = sig.cpuid.hypervisor_bit
        return bit, Evidence(f"cpuid leaf 1 ECX bit 31 (via {sig.cpuid.method})", str(int(bit)),
                             "vm" if bit else "none", STRONG)
    if known(sig.cpu_flags) and is_x86(sig):     # the flag exists on x86 only
        bit = "hypervisor" in sig.cpu_flags
        return bit, Evidence("/proc/cpuinfo flags", "hypervisor" if bit else "no 'hypervisor' flag",
                             "vm" if bit else "none", MEDIUM,
                             f"CPUID not readable: {sig.cpuid.method.reason}"
                             if isinstance(sig.cpuid.method, Unknown) else "")
    if isinstance(sig.cpu_flags, Unknown) and sig.cpu_flags.reason.startswith("/proc/cpuinfo"):
        # an empty or flag-less cpuinfo is a gap, not a "no": say so rather than guess
        return None, Evidence("/proc/cpuinfo", sig.cpu_flags.reason, "unknown", INFO)
    return None, None


def cpuid_evidence(sig: Signals, ev: list[Evidence]) -> str | None:
    """Evidence for every hypervisor block; returns the technology the blocks point to.

    With the hypervisor bit clear a block still counts when its signature is a known
    hypervisor's (Xen 3.x answered at 0x40000000 without setting the bit); an unknown one is
    then ignored: real CPUs return other leaves' data there."""
    blocks = sig.cpuid.blocks
    if not known(blocks):
        return None
    bit_clear = sig.cpuid.hypervisor_bit is False
    for block in blocks:
        if bit_clear and block.hypervisor is None:
            ev.append(Evidence(f"cpuid {block.label}", block.signature or "(empty signature)",
                               "vm-other", IGNORED, "hypervisor bit clear and not a known "
                               "hypervisor's signature: a real CPU may answer this leaf"))
            continue
        deferred = block.hypervisor == "microsoft" and len(blocks) > 1
        note = "Hyper-V interface; a later block names the hypervisor" if deferred else ""
        if bit_clear:
            note = ("answers although the hypervisor bit is clear: hypervisors older than that "
                    "2008 convention (Xen 3.x) leave leaf 1 ECX bit 31 at 0")
        ev.append(Evidence(f"cpuid {block.label}", block.signature or "(empty signature)",
                           block.hypervisor or "vm-other", INFO if deferred else STRONG, note))
    known_blocks = [b for b in blocks if b.hypervisor] if bit_clear else blocks
    if not known_blocks:
        return None
    first = next((b.hypervisor for b in known_blocks if b.hypervisor != "microsoft"),
                 known_blocks[0].hypervisor)
    if len(blocks) > 1 and blocks[0].hypervisor == "microsoft" and first not in ("microsoft", None):
        ev.append(Evidence("cpuid hypervisor blocks", "Microsoft Hv first, then " + first, first, INFO,
                           f"Hyper-V enlightenments offered by {first}; the later block names the "
                           "real hypervisor (systemd-detect-virt reads only the first)"))
    return first
