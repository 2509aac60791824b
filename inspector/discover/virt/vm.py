"""The VM layer(s) and the hardware below them, decided from the gathered Signals.

Xen is recognised first (it decides guest mode and flavor); otherwise the CPUID hypervisor bit
and blocks, DMI vendor strings, the SMBIOS VM bit, clocksources and PCI ids are weighed in
decide_vm. On x86 a DMI vendor without the hypervisor bit is not trusted."""
from __future__ import annotations

import re

from inspector.discover.virt.model import (
    AZURE_ASSET_TAG, IGNORED, INFO, MEDIUM, STRONG, WEAK, Evidence, HostRole, Layer)
from inspector.discover.virt.signals import Signals, is_x86
from inspector.model import Unknown, known

_DMI_VENDORS = [  # (prefix, verdict, flavor)
    ("KVM", "kvm", None), ("OpenStack", "kvm", "openstack"), ("KubeVirt", "kvm", "kubevirt"),
    ("Amazon EC2", "amazon", "aws"), ("QEMU", "qemu", None), ("VMware", "vmware", None),
    ("VMW", "vmware", None), ("innotek GmbH", "oracle", None), ("VirtualBox", "oracle", None),
    ("Oracle Corporation", "oracle", None), ("Xen", "xen", None), ("Bochs", "bochs", None),
    ("Parallels", "parallels", None), ("BHYVE", "bhyve", None), ("Hyper-V", "microsoft", None),
    ("Microsoft Corporation", "microsoft", None), ("Apple Virtualization", "apple", None),
    ("Google Compute Engine", "google", "gce"), ("Google", "google", "gce"),
]
_DMI_FIELDS = ("product_name", "sys_vendor", "board_vendor", "bios_vendor", "product_version")
_DMI_WINS = {"oracle", "xen", "amazon", "parallels", "google"}
_VERDICT_NAMES = {"oracle": "virtualbox", "microsoft": "hyperv", "google": "kvm", "amazon": "kvm"}
_PCI_HINTS = {"5853:0001": ("xen", "Xen platform device"), "5853:0002": ("xen", "XenServer platform device"),
              "1414:5353": ("microsoft", "Hyper-V video"), "15ad:0405": ("vmware", "VMware SVGA"),
              "15ad:0740": ("vmware", "VMware VMCI"), "80ee:beef": ("oracle", "VirtualBox graphics"),
              "80ee:cafe": ("oracle", "VirtualBox guest service"),
              "1d0f:ec20": ("amazon", "Amazon ENA"), "1d0f:8061": ("amazon", "Amazon EBS NVMe")}
_CLOCKSOURCES = {"kvm-clock": "kvm", "xen": "xen", "hyperv_clocksource_tsc_page": "microsoft",
                 "hyperv_clocksource_msr": "microsoft"}


def _dmi_vendor(sig: Signals) -> tuple[str, str | None, str, str] | None:
    """(verdict, flavor, field, value) of the first DMI field naming a hypervisor vendor."""
    for name in _DMI_FIELDS:
        value = sig.dmi.get(name, "")
        for prefix, verdict, flavor in _DMI_VENDORS:
            if value.startswith(prefix):
                return verdict, flavor, name, value
    return None


def _hv_bit(sig: Signals) -> tuple[bool | None, Evidence | None]:
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
    return None, None


def _xen_layer(sig: Signals, ev: list[Evidence], roles: list[HostRole]) -> Layer | None:
    """Xen guest (or dom0 role) from /sys/hypervisor and /proc/xen; None when not Xen."""
    is_xen = sig.hv_type == "xen" or sig.proc_xen or (sig.dt_hypervisor or "").startswith("xen")
    if not is_xen:
        return None
    if sig.hv_type:
        ev.append(Evidence("/sys/hypervisor/type", sig.hv_type, "xen", STRONG))
    if sig.proc_xen:
        ev.append(Evidence("/proc/xen", "present", "xen", STRONG))
    if sig.dt_hypervisor:
        ev.append(Evidence("/proc/device-tree/hypervisor/compatible", sig.dt_hypervisor, "xen", STRONG))
    dom0 = bool(sig.xen_caps and "control_d" in sig.xen_caps) or \
        bool(sig.xen_features is not None and sig.xen_features & (1 << 11))
    if dom0:
        role_ev = []
        if sig.xen_caps and "control_d" in sig.xen_caps:
            role_ev.append(Evidence("/proc/xen/capabilities", sig.xen_caps, "xen-host", STRONG))
        if sig.xen_features is not None and sig.xen_features & (1 << 11):
            role_ev.append(Evidence("/sys/hypervisor/properties/features",
                                    f"{sig.xen_features:08x} (bit 11 XENFEAT_dom0)", "xen-host", STRONG))
        roles.append(HostRole("xen-host", "Xen dom0 (control domain): guests run beside it",
                              role_ev))
        ev.append(Evidence("Xen control domain", "dom0", "none", INFO,
                           "dom0 is the Xen host's control domain, not a guest"))
        return Layer("vm", "none", confidence="high", evidence=ev)

    mode, mode_ev = _xen_mode(sig)
    ev.extend(mode_ev)
    if mode != "PV":        # a PV guest runs CPUID natively: its blocks describe the layer below
        _cpuid_evidence(sig, ev)
    pv_drivers = [d for d in sig.xen_devices if re.match(r"(vbd|vif)-", d)]
    if mode == "HVM" and pv_drivers:
        mode = "PVHVM"
        ev.append(Evidence("/sys/bus/xen/devices", " ".join(pv_drivers[:6]), "pv-drivers", STRONG,
                           "HVM guest with PV block/net drivers = PVHVM"))
    elif mode == "HVM":
        ev.append(Evidence("/sys/bus/xen/devices", "no vbd-/vif- devices", "no-pv-drivers", MEDIUM,
                           "HVM guest using emulated disk and NIC"))
    flavor = _xen_flavor(sig, ev)
    return Layer("vm", "xen", flavor=flavor, guest_mode=mode, confidence="high", evidence=ev)


def _xen_mode(sig: Signals) -> tuple[str | None, list[Evidence]]:
    if sig.xen_guest_type:
        return sig.xen_guest_type.upper(), [Evidence("/sys/hypervisor/guest_type",
                                                     sig.xen_guest_type, "xen", STRONG)]
    if sig.xen_features is not None:
        f = sig.xen_features
        src = "/sys/hypervisor/properties/features"
        if f & (1 << 3) and f & (1 << 8):
            return "PVH", [Evidence(src, f"{f:08x} (bits 3+8)", "PVH", MEDIUM)]
        if f & (1 << 5):
            return "PV", [Evidence(src, f"{f:08x} (bit 5)", "PV", MEDIUM)]
    xen_block = sig.cpuid.block("xen")
    if xen_block or sig.dmi.get("sys_vendor", "").startswith("Xen") or sig.dmi.get(
            "product_name") == "HVM domU":
        return "HVM", [Evidence("guest mode", "Xen CPUID leaves or Xen DMI without guest_type",
                                "HVM", WEAK, "older kernels lack /sys/hypervisor/guest_type")]
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
        ev.append(Evidence("/sys/hypervisor/version/extra", sig.xen_version_extra, "xenserver", MEDIUM))
        return "xenserver"
    bios_version = sig.dmi.get("bios_version", "")
    if bios_version.endswith(".amazon") or (sig.xen_uuid or "").lower().startswith("ec2"):
        ev.append(Evidence("/sys/class/dmi/id/bios_version" if bios_version.endswith(".amazon")
                           else "/sys/hypervisor/uuid", bios_version or sig.xen_uuid, "aws", STRONG))
        return "aws"
    if sig.dmi.get("sys_vendor") == "Xen" and "bios_version" in sig.dmi and not bios_version:
        ev.append(Evidence("/sys/class/dmi/id/bios_version", "(empty) with sys_vendor Xen",
                           "xenserver", MEDIUM, "XenServer leaves the BIOS version empty"))
        return "xenserver"
    return "plain"


def _cpuid_evidence(sig: Signals, ev: list[Evidence]) -> str | None:
    """Evidence for every hypervisor block; returns the technology the blocks point to."""
    blocks = sig.cpuid.blocks
    if not known(blocks):
        return None
    for block in blocks:
        deferred = block.hypervisor == "microsoft" and len(blocks) > 1
        ev.append(Evidence(f"cpuid {block.label}", block.signature or "(empty signature)",
                           block.hypervisor or "vm-other", INFO if deferred else STRONG,
                           "Hyper-V interface; a later block names the hypervisor" if deferred else ""))
    first = sig.cpuid.first_hypervisor()
    if len(blocks) > 1 and blocks[0].hypervisor == "microsoft" and first != "microsoft":
        ev.append(Evidence("cpuid hypervisor blocks", "Microsoft Hv first, then " + first, first, INFO,
                           f"Hyper-V enlightenments offered by {first}; the later block names the "
                           "real hypervisor (systemd-detect-virt reads only the first)"))
    return first


def vm_layers(sig: Signals, roles: list[HostRole]) -> tuple[list[Layer], Layer]:
    """VM layers (innermost first) and the hardware layer."""
    ev: list[Evidence] = []
    hardware = Layer("hardware", "hardware", confidence="high")
    layers: list[Layer] = []
    inner: Layer | None = None

    # User Mode Linux runs as a process on whatever is below; CPUID then shows that.
    if sig.cpu_vendor == "User Mode Linux":
        inner = Layer("vm", "uml", confidence="high", evidence=[
            Evidence("/proc/cpuinfo vendor_id", sig.cpu_vendor, "uml", STRONG)])

    xen = _xen_layer(sig, ev, roles)
    if xen is not None and xen.present:
        if inner:
            layers.append(inner)
        layers.append(xen)
        # A PV guest executes CPUID natively: a non-Xen hypervisor there is the layer below.
        blocks = sig.cpuid.blocks if known(sig.cpuid.blocks) else []
        below = next((b for b in blocks if b.hypervisor not in (None, "xen", "microsoft")), None)
        if below and xen.guest_mode == "PV":
            name = _VERDICT_NAMES.get(below.hypervisor, below.hypervisor)
            layers.append(Layer("vm", name, confidence="medium", evidence=[Evidence(
                f"cpuid {below.label}", below.signature, below.hypervisor, MEDIUM,
                "CPUID runs natively in a PV guest: this is the hypervisor Xen itself runs on")]))
        return layers, _hardware_aws(sig, hardware, layers)
    if xen is not None:            # dom0: Xen host role, no VM layer (unless nested below)
        ev = xen.evidence

    bit, bit_ev = _hv_bit(sig)
    if bit_ev:
        ev.append(bit_ev)
    hv = _cpuid_evidence(sig, ev)
    dmi = _dmi_vendor(sig)
    x86 = is_x86(sig)
    if dmi:
        verdict, flavor, name, value = dmi
        trusted = not x86 or bit is not False
        ev.append(Evidence(f"/sys/class/dmi/id/{name}", value, verdict,
                           MEDIUM if trusted else IGNORED,
                           "" if trusted else "no CPUID hypervisor bit: DMI strings alone are not "
                           "trusted on x86 (systemd #21468, #21100)"))
    if sig.smbios_vm_bit is not None:
        ev.append(Evidence("/sys/firmware/dmi/entries/0-0/raw byte 0x13 bit 4",
                           str(int(sig.smbios_vm_bit)), "vm" if sig.smbios_vm_bit else "none", STRONG))
    clock_hint = next((c for c in sig.clocksources if c in _CLOCKSOURCES), None)
    if clock_hint:
        current = sig.clocksources[0] == clock_hint
        ev.append(Evidence("clocksource" if current else "available clocksources", clock_hint,
                           _CLOCKSOURCES[clock_hint], WEAK,
                           "" if current else "registered only by that hypervisor's guest support"))
    for pci_id in sorted(sig.pci):
        if pci_id in _PCI_HINTS:
            ev.append(Evidence(f"PCI {pci_id}", _PCI_HINTS[pci_id][1], _PCI_HINTS[pci_id][0], WEAK))
    if sig.cpu_model and "QEMU Virtual CPU" in sig.cpu_model:
        ev.append(Evidence("/proc/cpuinfo model name", sig.cpu_model, "qemu", WEAK))

    verdict, flavor, confidence = _decide_vm(sig, bit, hv, dmi, ev)
    if xen is not None and verdict in ("xen", "none"):      # dom0: the Xen evidence is the host's
        verdict = "none"
    layer = Layer("vm", verdict, flavor=flavor, confidence=confidence, evidence=ev)
    if inner:
        layers.append(inner)
    layers.append(layer)
    if verdict == "none":
        hardware = _hardware_aws(sig, hardware, layers)
    return layers, hardware


def _decide_vm(sig: Signals, bit: bool | None, hv: str | None,
               dmi: tuple | None, ev: list[Evidence]) -> tuple[str, str | None, str]:
    x86 = is_x86(sig)
    dmi_verdict, dmi_flavor = (dmi[0], dmi[1]) if dmi else (None, None)
    if x86 and bit is False:
        return "none", None, "high" if known(sig.cpuid.method) else "medium"
    if x86 and bit is None and not dmi:
        return "none", None, "low"
    # Which technology: DMI wins for the vendors whose hypervisors borrow others' CPUID.
    if hv and dmi_verdict in _DMI_WINS and dmi_verdict != hv:
        ev.append(Evidence("DMI vs CPUID", f"DMI {dmi_verdict}, CPUID {hv}", dmi_verdict, INFO,
                           f"{dmi_verdict} presents the {hv} CPUID interface; DMI names the product"))
        technology = dmi_verdict
    elif hv:
        technology = hv
    elif dmi_verdict == "qemu" and "kvm-clock" in sig.clocksources:
        ev.append(Evidence("DMI vs clocksource", "QEMU firmware with kvm-clock", "kvm", MEDIUM,
                           "kvm-clock exists only under KVM acceleration (no CPUID to confirm)"))
        technology = "kvm"
    elif dmi_verdict:
        technology = dmi_verdict
    elif bit and clock_hint(sig):
        technology = clock_hint(sig)
    elif sig.smbios_vm_bit:
        technology = "vm-other"
    elif bit:
        technology = "vm-other"
    else:
        return "none", None, "low"
    # Off x86 there is no hypervisor bit: firmware tables are the primary signal there.
    confidence = "high" if hv else ("medium" if bit or (not x86 and dmi_verdict) else "low")

    # Technology -> (verdict, flavor).
    flavor = dmi_flavor if dmi_verdict == technology or dmi_verdict in ("google", "amazon") \
        else None
    if technology == "amazon":
        metal = sig.dmi.get("product_name", "").endswith(".metal") or sig.smbios_vm_bit is False
        if metal and not hv:
            return "none", None, "high"
        return (hv if hv in ("kvm", "xen") else "kvm"), "aws", confidence
    if technology == "google":
        return "kvm", "gce", confidence
    if technology == "microsoft":
        if sig.dmi.get("chassis_asset_tag") == AZURE_ASSET_TAG:
            ev.append(Evidence("/sys/class/dmi/id/chassis_asset_tag", AZURE_ASSET_TAG, "azure", STRONG))
            return "hyperv", "azure", confidence
        return "hyperv", None, confidence
    if technology == "kvm":
        if dmi_verdict == "amazon":
            return "kvm", "aws", confidence
        if _firecracker(sig, ev):
            return "kvm", "firecracker", confidence
        return "kvm", flavor, confidence
    if technology == "qemu" and hv == "qemu":
        return "qemu", "tcg", confidence
    if technology == "qemu":
        return "qemu", None, confidence
    return _VERDICT_NAMES.get(technology, technology), flavor, confidence


def clock_hint(sig: Signals) -> str | None:
    return next((_CLOCKSOURCES[c] for c in sig.clocksources if c in _CLOCKSOURCES), None)


def _firecracker(sig: Signals, ev: list[Evidence]) -> bool:
    oem = sig.acpi_oem
    if oem.get("oem_id") == "FIRECK" or oem.get("creator_id") == "FCAT":
        ev.append(Evidence(f"/sys/firmware/acpi/tables/{oem['table']} header",
                           f"OEM {oem.get('oem_id')} {oem.get('oem_table_id')} creator "
                           f"{oem.get('creator_id')}", "firecracker", STRONG))
        if not sig.dmi_present:
            ev.append(Evidence("/sys/class/dmi/id", "not present", "firecracker", WEAK,
                               "Firecracker provides no SMBIOS"))
        return True
    if sig.dmi_present or oem:
        return False
    # Not root (ACPI tables unreadable) and no SMBIOS: Firecracker's boot arguments.
    cmdline = sig.cmdline or ""
    hints = [h for h in ("virtio_mmio.device=", "reboot=k", "panic=1", "pci=off")
             if re.search(r"(^|\s)" + re.escape(h), cmdline)]
    if "virtio_mmio.device=" in hints or {"reboot=k", "panic=1"} <= set(hints):
        ev.append(Evidence("/sys/class/dmi/id", "not present (ACPI tables unreadable)",
                           "firecracker", WEAK, "Firecracker provides no SMBIOS"))
        ev.append(Evidence("/proc/cmdline", " ".join(hints), "firecracker", MEDIUM,
                           "Firecracker's default boot arguments"))
        return True
    ev.append(Evidence("/sys/class/dmi/id", "not present (ACPI tables unreadable)",
                       "microvm", WEAK, "KVM without SMBIOS: a microVM (Firecracker, kvmtool ...)"))
    return False


def _hardware_aws(sig: Signals, hardware: Layer, layers: list[Layer]) -> Layer:
    if not any(l.present for l in layers) and sig.dmi.get("sys_vendor", "").startswith("Amazon"):
        product = sig.dmi.get("product_name", "")
        hardware.flavor = "aws-metal"
        hardware.evidence.append(Evidence("/sys/class/dmi/id/product_name", product, "aws-metal",
                                          STRONG if product.endswith(".metal") else MEDIUM,
                                          "Amazon EC2 bare-metal instance (no hypervisor bit)"))
    return hardware


_CC_FLAGS = (("tdx_guest", "Intel TDX"), ("sev_snp", "AMD SEV-SNP"), ("sev_es", "AMD SEV-ES"),
             ("sev", "AMD SEV"))
_HV_ISOLATION = {1: "Hyper-V VBS", 2: "AMD SEV-SNP", 3: "Intel TDX"}


def confidential(sig: Signals, layer: Layer) -> None:
    """Confidential guest: the kernel's flags, or Hyper-V's isolation type (leaf 0x4000000C)."""
    flags = sig.cpu_flags if known(sig.cpu_flags) else set()
    for flag, name in _CC_FLAGS:
        if flag in flags:
            layer.confidential = name
            layer.evidence.append(Evidence("/proc/cpuinfo flags", flag, "confidential", STRONG))
            return
    block = sig.cpuid.block("microsoft")
    isolation = block.leaves.get(block.base + 0x0C) if block else None
    if isolation and isolation[1] & 0xF in _HV_ISOLATION:
        layer.confidential = _HV_ISOLATION[isolation[1] & 0xF]
        layer.evidence.append(Evidence(f"cpuid 0x{block.base + 0x0C:08x} EBX[3:0]",
                                       str(isolation[1] & 0xF), "confidential", STRONG))

