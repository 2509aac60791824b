"""The Xen layer: guest or control domain (dom0), guest mode and flavor.

Xen is recognised from /sys/hypervisor/type and /proc/xen (kernels with Xen support), the device
tree's hypervisor node (Xen on Arm, Documentation/devicetree/bindings/arm/xen.txt), and, where a
kernel without Xen support shows neither, from Xen's CPUID leaves ("XenVMMXenVMM", read whatever
the hypervisor bit says: Xen 3.x leaves it clear) or the SMBIOS tables of Xen's HVM firmware
(sys_vendor "Xen", product_name "HVM domU"). The mode comes from /sys/hypervisor/guest_type, else
the feature bits (xen/include/public/features.h), else what only an HVM guest has: CPUID leaves
served by Xen and firmware tables. Xen on Arm has no PV guests."""
from __future__ import annotations

import re

from inspector.discover.virt.cpu import cpuid_evidence
from inspector.discover.virt.model import INFO, MEDIUM, STRONG, WEAK, Evidence, HostRole, Layer
from inspector.discover.virt.signals import Signals, is_x86

XENFEAT_DOM0 = 11
XENFEAT_SUPERVISOR_MODE_KERNEL, XENFEAT_HVM_CALLBACK_VECTOR = 3, 8
XENFEAT_MMU_PT_UPDATE_PRESERVE_AD = 5


def is_arm(sig: Signals) -> bool:
    return sig.arch.startswith(("aarch64", "arm")) or \
        (not sig.arch and (sig.dt_hypervisor or "").startswith("xen"))


def _dmi_xen(sig: Signals) -> list[tuple[str, str]]:
    """(source, value) of the DMI strings Xen's HVM firmware (hvmloader) writes."""
    out = []
    if sig.dmi.get("sys_vendor", "").startswith("Xen"):
        out.append((sig.firmware.sources.get("sys_vendor", "sys_vendor"), sig.dmi["sys_vendor"]))
    if sig.dmi.get("product_name") == "HVM domU":
        out.append((sig.firmware.sources.get("product_name", "product_name"), "HVM domU"))
    return out


def xen_layer(sig: Signals, bit: bool | None, ev: list[Evidence],
              roles: list[HostRole]) -> Layer | None:
    """Xen guest (or dom0 role); None when nothing shows Xen. `bit`: the hypervisor bit."""
    sysfs = sig.hv_type == "xen" or sig.proc_xen or (sig.dt_hypervisor or "").startswith("xen")
    cpuid_xen = sig.cpuid.block("xen")
    dmi_xen = _dmi_xen(sig) if (bit or not is_x86(sig)) else []
    if not (sysfs or cpuid_xen or dmi_xen):
        return None
    if sig.hv_type:
        ev.append(Evidence("/sys/hypervisor/type", sig.hv_type, "xen", STRONG))
    if sig.proc_xen:
        ev.append(Evidence("/proc/xen", "present", "xen", STRONG))
    if sig.dt_hypervisor:
        ev.append(Evidence("/proc/device-tree/hypervisor/compatible", sig.dt_hypervisor, "xen", STRONG))
    if not sysfs:
        ev += [Evidence(src, value, "xen", MEDIUM) for src, value in dmi_xen]
        ev.append(Evidence("/sys/hypervisor/type and /proc/xen", "not present", "xen", INFO,
                           "a kernel without Xen support shows neither; Xen's CPUID leaves and the "
                           "tables of its HVM firmware still name it"))
    dom0 = bool(sig.xen_caps and "control_d" in sig.xen_caps) or \
        bool(sig.xen_features is not None and sig.xen_features & (1 << XENFEAT_DOM0))
    if dom0:
        role_ev = []
        if sig.xen_caps and "control_d" in sig.xen_caps:
            role_ev.append(Evidence("/proc/xen/capabilities", sig.xen_caps, "xen-host", STRONG))
        if sig.xen_features is not None and sig.xen_features & (1 << XENFEAT_DOM0):
            role_ev.append(Evidence("/sys/hypervisor/properties/features",
                                    f"{sig.xen_features:08x} (bit 11 XENFEAT_dom0)", "xen-host", STRONG))
        roles.append(HostRole("xen-host", "Xen dom0 (control domain): guests run beside it",
                              role_ev))
        ev.append(Evidence("Xen control domain", "dom0", "none", INFO,
                           "dom0 is the Xen host's control domain, not a guest"))
        return Layer("vm", "none", confidence="high", evidence=ev)

    mode, mode_ev = _xen_mode(sig, bool(cpuid_xen), bool(_dmi_xen(sig)))
    ev.extend(mode_ev)
    if mode != "PV":        # a PV guest runs CPUID natively: its blocks describe the layer below
        cpuid_evidence(sig, ev)
    pv_drivers = [d for d in sig.xen_devices if re.match(r"(vbd|vif)-", d)]
    if mode == "HVM" and pv_drivers:
        mode = "PVHVM"
        ev.append(Evidence("/sys/bus/xen/devices", " ".join(pv_drivers[:6]), "pv-drivers", STRONG,
                           "HVM guest with PV block/net drivers = PVHVM"))
    elif mode == "HVM":
        ev.append(Evidence("/sys/bus/xen/devices", "no vbd-/vif- devices", "no-pv-drivers", MEDIUM,
                           "HVM guest using emulated disk and NIC"))
    flavor = _xen_flavor(sig, ev)
    return Layer("vm", "xen", flavor=flavor, guest_mode=mode,
                 confidence="high" if sysfs or cpuid_xen else "medium", evidence=ev)


def _xen_mode(sig: Signals, cpuid_xen: bool, dmi_xen: bool) -> tuple[str | None, list[Evidence]]:
    if is_arm(sig):
        seen = f" (guest_type says {sig.xen_guest_type})" if sig.xen_guest_type else ""
        return "PVH", [Evidence("guest mode", f"Xen on Arm{seen}", "PVH", MEDIUM,
                                "Xen on Arm has one kind of guest: hardware virtualisation with PV "
                                "drivers and no emulated devices, what x86 calls PVH; never PV")]
    if sig.xen_guest_type:
        return sig.xen_guest_type.upper(), [Evidence("/sys/hypervisor/guest_type",
                                                     sig.xen_guest_type, "xen", STRONG)]
    if sig.xen_features is not None:
        f = sig.xen_features
        src = "/sys/hypervisor/properties/features"
        if f & (1 << XENFEAT_SUPERVISOR_MODE_KERNEL) and f & (1 << XENFEAT_HVM_CALLBACK_VECTOR):
            return "PVH", [Evidence(src, f"{f:08x} (bits 3+8)", "PVH", MEDIUM)]
        if f & (1 << XENFEAT_MMU_PT_UPDATE_PRESERVE_AD):
            return "PV", [Evidence(src, f"{f:08x} (bit 5)", "PV", MEDIUM)]
    if cpuid_xen or dmi_xen:
        shown = " and ".join(x for x in ("Xen's CPUID leaves" if cpuid_xen else "",
                                         "Xen's HVM firmware tables" if dmi_xen else "") if x)
        return "HVM", [Evidence("guest mode", f"{shown}, no /sys/hypervisor/guest_type", "HVM",
                                MEDIUM if cpuid_xen and dmi_xen else WEAK,
                                "only an HVM guest has them: a PV guest runs CPUID natively and "
                                "boots without firmware (older kernels lack guest_type)")]
    if sig.cpuid.hypervisor_bit is False or not sig.dmi_present:
        return "PV", [Evidence("guest mode", "/proc/xen without DMI or Xen CPUID leaves",
                               "PV", WEAK, "PV guests have no firmware tables")]
    return None, []


def _xen_flavor(sig: Signals, ev: list[Evidence]) -> str:
    if "5853:0002" in sig.pci:
        ev.append(Evidence("PCI 5853:0002", "XenServer platform device", "xenserver", STRONG))
        return "xenserver"
    extra = (sig.xen_version_extra or "").lower()
    if "xs" in extra or "citrix" in extra or "xenserver" in extra:
        ev.append(Evidence("/sys/hypervisor/version/extra", sig.xen_version_extra or "",
                           "xenserver", MEDIUM))
        return "xenserver"
    bios_version = sig.dmi.get("bios_version", "")
    if bios_version.endswith(".amazon") or (sig.xen_uuid or "").lower().startswith("ec2"):
        ev.append(Evidence(sig.firmware.sources.get("bios_version", "bios_version")
                           if bios_version.endswith(".amazon") else "/sys/hypervisor/uuid",
                           bios_version or sig.xen_uuid or "", "aws", STRONG,
                           "Amazon's build of Xen's HVM firmware (virt-what: aws)"
                           if bios_version.endswith(".amazon") else "EC2 instance ids start ec2"))
        return "aws"
    if sig.dmi.get("sys_vendor") == "Xen" and "bios_version" in sig.dmi and not bios_version:
        ev.append(Evidence("/sys/class/dmi/id/bios_version", "(empty) with sys_vendor Xen",
                           "xenserver", MEDIUM, "XenServer leaves the BIOS version empty"))
        return "xenserver"
    return "plain"
