"""The VM layer(s) and the hardware below them, decided from the gathered Signals.

Order: User Mode Linux (a process on whatever is below), Xen (xen.py: it decides guest mode and
flavor), s390x and POWER (platforms.py), then the general case: the CPUID hypervisor bit and
blocks, DMI vendor strings, the SMBIOS VM bit, a device tree, clocksources, PCI ids and the CPU
model are weighed in _decide_vm. On x86 a DMI vendor without the hypervisor bit is not trusted;
off x86 there is no such bit and the firmware tables and device tree are the primary signals."""
from __future__ import annotations

import re

from inspector.discover.virt.cpu import cpuid_evidence, hv_bit
from inspector.discover.virt.model import (
    AZURE_ASSET_TAG,
    IGNORED,
    INFO,
    MEDIUM,
    STRONG,
    WEAK,
    Confidence,
    Evidence,
    HostRole,
    Layer,
)
from inspector.discover.virt.platforms import TreeHint, devicetree_hint, power_layer, s390_layers
from inspector.discover.virt.signals import Signals, is_x86
from inspector.discover.virt.xen import xen_layer
from inspector.model import known

_DMI_VENDORS = [  # (prefix, verdict, flavor): systemd's dmi_vendor_table, same order
    ("KVM", "kvm", None), ("OpenStack", "kvm", "openstack"), ("KubeVirt", "kvm", "kubevirt"),
    ("Amazon EC2", "amazon", "aws"), ("QEMU", "qemu", None), ("VMware", "vmware", None),
    ("VMW", "vmware", None), ("innotek GmbH", "oracle", None), ("VirtualBox", "oracle", None),
    ("Oracle Corporation", "oracle", None), ("Xen", "xen", None), ("Bochs", "bochs", None),
    ("Parallels", "parallels", None), ("BHYVE", "bhyve", None), ("Hyper-V", "microsoft", None),
    ("Microsoft Corporation", "microsoft", None), ("Apple Virtualization", "apple", None),
    ("Google Compute Engine", "google", "gce"), ("Google", "google", "gce"),
]
_DMI_FIELDS = ("product_name", "sys_vendor", "board_vendor", "bios_vendor", "product_version")
# Off x86 nothing vouches for a DMI vendor, and these make physical machines too (Surface and
# Windows Dev Kit arm64 laptops, Oracle's Ampere servers): only their VM products count there.
_PHYSICAL_TOO = {"microsoft": ("product_name", "Virtual Machine"),
                 "oracle": ("product_name", "VirtualBox")}
_DMI_WINS = {"oracle", "xen", "amazon", "parallels", "google"}
_VERDICT_NAMES = {"oracle": "virtualbox", "microsoft": "hyperv", "google": "kvm", "amazon": "kvm"}
# Clouds that run KVM guests, by the DMI strings cloud-init's ds-identify identifies them with
# (and virt-what's alibaba_cloud, redhat, ovirt, nutanix_ahv): the VM's flavor.
_CLOUDS = [  # (field, value prefix, flavor)
    ("product_name", "Alibaba Cloud ECS", "alibaba"), ("sys_vendor", "Alibaba Cloud", "alibaba"),
    ("chassis_asset_tag", "OracleCloud.com", "oci"), ("chassis_asset_tag", "HUAWEICLOUD", "huawei"),
    ("chassis_asset_tag", "OpenTelekomCloud", "otc"), ("sys_vendor", "DigitalOcean", "digitalocean"),
    ("sys_vendor", "Hetzner", "hetzner"), ("sys_vendor", "Linode", "linode"),
    ("sys_vendor", "Akamai", "linode"), ("sys_vendor", "Vultr", "vultr"),
    ("sys_vendor", "Scaleway", "scaleway"), ("sys_vendor", "UpCloud", "upcloud"),
    ("product_name", "RHEV Hypervisor", "rhev"), ("sys_vendor", "Red Hat", "redhat"),
    ("sys_vendor", "oVirt", "ovirt"), ("sys_vendor", "Nutanix", "nutanix"),
]
_PCI_HINTS = {"5853:0001": ("xen", "Xen platform device"), "5853:0002": ("xen", "XenServer platform device"),
              "1414:5353": ("microsoft", "Hyper-V video"), "15ad:0405": ("vmware", "VMware SVGA"),
              "15ad:0740": ("vmware", "VMware VMCI"), "80ee:beef": ("oracle", "VirtualBox graphics"),
              "80ee:cafe": ("oracle", "VirtualBox guest service"),
              "1d0f:ec20": ("amazon", "Amazon ENA"), "1d0f:8061": ("amazon", "Amazon EBS NVMe")}
_CLOCKSOURCES = {"kvm-clock": "kvm", "xen": "xen", "hyperv_clocksource_tsc_page": "microsoft",
                 "hyperv_clocksource_msr": "microsoft"}
QEMU_CPU = "QEMU Virtual CPU"      # the model name of QEMU's own CPU models (qemu64, qemu32)


def _dmi_vendor(sig: Signals) -> tuple[str, str | None, str, str] | None:
    """(verdict, flavor, field, value) of the first DMI field naming a hypervisor vendor."""
    x86 = is_x86(sig)
    for name in _DMI_FIELDS:
        value = sig.dmi.get(name, "")
        for prefix, verdict, flavor in _DMI_VENDORS:
            if value.startswith(prefix):
                need = _PHYSICAL_TOO.get(verdict)
                if not x86 and need and not sig.dmi.get(need[0], "").startswith(need[1]):
                    continue
                return verdict, flavor, name, value
    return None


def _cloud(sig: Signals) -> tuple[str, str, str] | None:
    """(flavor, field, value) of a cloud's DMI identity."""
    for name, prefix, flavor in _CLOUDS:
        value = sig.dmi.get(name, "")
        if value.startswith(prefix):
            return flavor, name, value
    return None


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

    bit, bit_ev = hv_bit(sig)
    xen = xen_layer(sig, bit, ev, roles)
    if xen is not None and xen.present:
        if inner:
            layers.append(inner)
        layers.append(xen)
        # A PV guest executes CPUID natively: a non-Xen hypervisor there is the layer below.
        blocks = sig.cpuid.blocks if known(sig.cpuid.blocks) else []
        below = next((b for b in blocks if b.hypervisor not in (None, "xen", "microsoft")), None)
        if below and below.hypervisor and xen.guest_mode == "PV":
            name = _VERDICT_NAMES.get(below.hypervisor, below.hypervisor)
            layers.append(Layer("vm", name, confidence="medium", evidence=[Evidence(
                f"cpuid {below.label}", below.signature, below.hypervisor, MEDIUM,
                "CPUID runs natively in a PV guest: this is the hypervisor Xen itself runs on")]))
        return layers, _hardware_aws(sig, hardware, layers)
    if xen is not None:            # dom0: Xen host role, no VM layer (unless nested below)
        ev = xen.evidence

    platform = s390_layers(sig)
    if platform is not None:
        return ([inner] if inner else []) + platform[0], platform[1]
    power = power_layer(sig)
    if power is not None:
        return ([inner] if inner else []) + [power], hardware

    if bit_ev:
        ev.append(bit_ev)
    hv = cpuid_evidence(sig, ev)
    dmi = _dmi_vendor(sig)
    x86 = is_x86(sig)
    if dmi:
        verdict, flavor, name, value = dmi
        # QEMU's firmware strings beside QEMU's own CPU model confirm each other
        trusted = not x86 or bit is not False or \
            (verdict in ("qemu", "bochs") and QEMU_CPU in (sig.cpu_model or ""))
        ev.append(Evidence(sig.firmware.sources.get(name, f"/sys/class/dmi/id/{name}"), value,
                           verdict, MEDIUM if trusted else IGNORED,
                           "" if trusted else "no CPUID hypervisor bit: DMI strings alone are not "
                           "trusted on x86 (systemd #21468, #21100)"))
    elif not sig.dmi_present and sig.firmware.absent_reason:
        ev.append(Evidence("SMBIOS", sig.firmware.absent_reason, "unknown", INFO))
    if sig.smbios_vm_bit is not None:
        ev.append(Evidence(sig.firmware.vm_bit_source, str(int(sig.smbios_vm_bit)),
                           "vm" if sig.smbios_vm_bit else "none",
                           STRONG if sig.smbios_vm_bit else WEAK,
                           "" if sig.smbios_vm_bit else "old virtual firmware (SeaBIOS, Xen's "
                           "hvmloader, VMware's Phoenix BIOS) never sets it"))
    tree = devicetree_hint(sig)
    if tree is not None:
        ev.extend(tree.evidence)
    clock_source = next((c for c in sig.clocksources if c in _CLOCKSOURCES), None)
    if clock_source:
        current = sig.clocksources[0] == clock_source
        ev.append(Evidence("clocksource" if current else "available clocksources", clock_source,
                           _CLOCKSOURCES[clock_source], WEAK,
                           "" if current else "registered only by that hypervisor's guest support"))
    for pci_id in sorted(sig.pci):
        if pci_id in _PCI_HINTS:
            ev.append(Evidence(f"PCI {pci_id}", _PCI_HINTS[pci_id][1], _PCI_HINTS[pci_id][0], WEAK))
    if sig.cpu_model and QEMU_CPU in sig.cpu_model:
        ev.append(Evidence("/proc/cpuinfo model name", sig.cpu_model, "qemu", MEDIUM,
                           "QEMU's own CPU model: no physical CPU has this name"))

    verdict, flavor, confidence = _decide_vm(sig, bit, hv, dmi, tree, ev)
    if xen is not None and verdict in ("xen", "none"):      # dom0: the Xen evidence is the host's
        verdict = "none"
    layer = Layer("vm", verdict, flavor=flavor, confidence=confidence, evidence=ev)
    if inner:
        layers.append(inner)
    layers.append(layer)
    if verdict == "none":
        hardware = _hardware_aws(sig, hardware, layers)
    return layers, hardware


def _kvm_signs(sig: Signals, hv: str | None) -> bool:
    return hv == "kvm" or "kvm-clock" in sig.clocksources


def _bochs_is_qemu(value: str) -> Evidence:
    return Evidence("DMI vs CPU model", f"{value} firmware, QEMU Virtual CPU", "qemu", MEDIUM,
                    "Bochs is the SMBIOS vendor SeaBIOS wrote for older QEMU; the Bochs emulator "
                    "itself never names its CPU so (systemd-detect-virt says bochs, virt-what qemu)")


def _technology(sig: Signals, bit: bool | None, hv: str | None, dmi: tuple | None,
                tree: TreeHint | None, ev: list[Evidence]) -> str | None:
    """Which hypervisor, from the strongest source that names one; None: no VM shown."""
    x86 = is_x86(sig)
    dmi_verdict = dmi[0] if dmi else None
    qemu_cpu = QEMU_CPU in (sig.cpu_model or "")
    if x86 and bit is False:
        if hv:                    # a known signature answered with the bit clear (Xen 3.x)
            return hv
        if qemu_cpu:
            ev.append(Evidence("CPU model vs hypervisor bit", "QEMU Virtual CPU, bit 0", "qemu",
                               INFO, "QEMU without KVM did not set the hypervisor bit before "
                               "QEMU 2.x; the CPU model name still gives it away"))
            if dmi and dmi_verdict == "bochs":
                ev.append(_bochs_is_qemu(dmi[3]))
            return "qemu"
        return None
    if x86 and bit is None and not dmi and not qemu_cpu:
        return None
    # DMI wins for the vendors whose hypervisors borrow others' CPUID.
    if hv and dmi_verdict in _DMI_WINS and dmi_verdict != hv:
        ev.append(Evidence("DMI vs CPUID", f"DMI {dmi_verdict}, CPUID {hv}", dmi_verdict, INFO,
                           f"{dmi_verdict} presents the {hv} CPUID interface; DMI names the product"))
        return dmi_verdict
    if hv:
        return hv
    if tree is not None and tree.strong and dmi_verdict != "kvm":
        return tree.technology    # a hypervisor node or QEMU's fw-cfg; DMI "KVM" is more exact
    if dmi_verdict == "qemu" and "kvm-clock" in sig.clocksources:
        ev.append(Evidence("DMI vs clocksource", "QEMU firmware with kvm-clock", "kvm", MEDIUM,
                           "kvm-clock exists only under KVM acceleration (no CPUID to confirm)"))
        return "kvm"
    if dmi and dmi_verdict == "bochs" and qemu_cpu:
        ev.append(_bochs_is_qemu(dmi[3]))
        return "qemu"
    if dmi_verdict:
        return dmi_verdict
    if tree is not None:
        return tree.technology
    if _cloud(sig) and (not x86 or bit):
        return "kvm"
    if bit and clock_hint(sig):
        return clock_hint(sig)
    if qemu_cpu:
        return "qemu"
    if sig.smbios_vm_bit or bit:
        return "vm-other"
    return None


def _decide_vm(sig: Signals, bit: bool | None, hv: str | None, dmi: tuple | None,
               tree: TreeHint | None, ev: list[Evidence]) -> tuple[str, str | None, Confidence]:
    x86 = is_x86(sig)
    dmi_verdict, dmi_flavor = (dmi[0], dmi[1]) if dmi else (None, None)
    technology = _technology(sig, bit, hv, dmi, tree, ev)
    if technology is None:
        if x86 and bit is False:
            return "none", None, "high" if known(sig.cpuid.method) else "medium"
        return "none", None, "low"
    # Off x86 there is no hypervisor bit: firmware tables and the device tree are the primary
    # signals there, and the SMBIOS VM bit confirms them.
    confidence: Confidence
    if (hv or (tree is not None and tree.strong and technology == tree.technology)
            or not x86 and sig.smbios_vm_bit and (dmi_verdict or _cloud(sig))):
        confidence = "high"
    elif bit or (not x86 and (dmi_verdict or tree or _cloud(sig))) or \
            (x86 and QEMU_CPU in (sig.cpu_model or "")):
        confidence = "medium"
    else:
        confidence = "low"

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
    if technology == "kvmtool":
        return "kvm", "kvmtool", confidence
    if technology == "kvm":
        if dmi_verdict == "amazon":
            return "kvm", "aws", confidence
        cloud = _cloud(sig)
        if cloud and not flavor:
            ev.append(Evidence(sig.firmware.sources.get(cloud[1], cloud[1]), cloud[2], cloud[0],
                               MEDIUM, "the cloud's own DMI string (cloud-init identifies it so); "
                               "its VMs run on KVM" + ("" if hv or sig.smbios_vm_bit else
                                                       ", and its bare-metal instances may carry "
                                                       "the same string: nothing here tells them "
                                                       "apart")))
            return "kvm", cloud[0], confidence
        if tree is not None and tree.technology == "kvm" and tree.flavor:
            return "kvm", tree.flavor, confidence
        if _firecracker(sig, ev):
            return "kvm", "firecracker", confidence
        return "kvm", flavor, confidence
    if technology == "qemu" and (hv == "qemu" or (QEMU_CPU in (sig.cpu_model or "")
                                                  and not _kvm_signs(sig, hv) and x86)):
        if hv != "qemu":
            ev.append(Evidence("QEMU accelerator", "no KVM CPUID leaves, no kvm-clock", "tcg",
                               MEDIUM, "QEMU's own CPU model without KVM's signature or clock: "
                               "QEMU emulates the CPU itself (TCG)"))
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
    if (not any(layer.present for layer in layers)
            and sig.dmi.get("sys_vendor", "").startswith("Amazon")):
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
    if block and isolation and isolation[1] & 0xF in _HV_ISOLATION:
        layer.confidential = _HV_ISOLATION[isolation[1] & 0xF]
        layer.evidence.append(Evidence(f"cpuid 0x{block.base + 0x0C:08x} EBX[3:0]",
                                       str(isolation[1] & 0xF), "confidential", STRONG))

