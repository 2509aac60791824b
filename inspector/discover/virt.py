"""Virtualization as layers: container over VM(s) over hardware, each with its evidence.

Unlike systemd-detect-virt (which names the container and hides the VM) and virt-what, every
layer is always reported, and every signal that was looked at is kept as evidence, including
the ones that were *ignored* and why (a stray /.dockerenv on a host PID namespace, a DMI vendor
string without the CPUID hypervisor bit). Signals and their order: research/virtualization.md.

Layers are listed innermost first: [container, vm (, vm of a nested guest), hardware]. A layer
that is not there has verdict "none" (kept so its evidence stays visible). Host roles (Xen dom0
"xen-host", "kvm-host", Hyper-V root, OpenVZ host) are reported beside the layers.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from inspector.discover import cpuid as cpuid_mod
from inspector.discover.cpuid import CpuidView
from inspector.host import HostRoot, Unavailable
from inspector.model import Unknown, known

INIT_PID_NS_INODE = 0xEFFFFFFC          # PROC_PID_INIT_INO: the host's initial PID namespace
AZURE_ASSET_TAG = "7783-7084-3265-9085-8269-3286-77"

# Evidence weights.
STRONG, MEDIUM, WEAK, SUSPECT, IGNORED, INFO = "strong", "medium", "weak", "suspect", "ignored", "info"


@dataclass
class Evidence:
    """One signal looked at, and how much it counted."""
    source: str          # where: "/sys/hypervisor/type", "cpuid 0x40000000", "/.dockerenv"
    value: str           # what was seen there
    points_to: str       # the verdict it supports ("kvm", "docker", "none", "pv-drivers" ...)
    weight: str          # strong | medium | weak | suspect | ignored | info
    note: str = ""       # why it was weighed so (mandatory for suspect/ignored)


@dataclass
class Layer:
    """One layer of the stack this system runs on: a container, a VM, or the hardware."""
    kind: str                        # container | vm | hardware
    verdict: str                     # "none", "docker", "kvm", "xen", "hardware" ...
    flavor: str | None = None        # firecracker, xenserver, aws, azure, gce, rootless ...
    guest_mode: str | None = None    # Xen: PV, HVM, PVHVM, PVH
    confidence: str = "high"         # high | medium | low
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
    role: str                        # xen-host | kvm-host | hyperv-root | openvz-host
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

    def layer(self, kind: str) -> Layer | None:
        return next((l for l in self.layers if l.kind == kind), None)

    @property
    def vm_layers(self) -> list[Layer]:
        return [l for l in self.layers if l.kind == "vm"]


# =========================================================================== facts gathered once
@dataclass
class _Signals:
    arch: str
    cpuid: CpuidView
    cpu_flags: set[str] | Unknown
    cpu_vendor: str | None
    cpu_model: str | None
    dmi: dict[str, str]
    dmi_present: bool
    smbios_vm_bit: bool | None
    hv_type: str | None
    xen_guest_type: str | None
    xen_features: int | None
    xen_caps: str | None
    xen_uuid: str | None
    xen_version_extra: str | None
    proc_xen: bool
    xen_devices: list[str]
    acpi_oem: dict[str, str]
    pci: set[str]
    clocksources: list[str]           # available, current first
    cmdline: str | None
    osrelease: str | None
    dt_hypervisor: str | None


def _line(root: HostRoot, rel: str) -> str | None:
    value = root.try_line(rel)
    return value if known(value) else None


def _dmi(root: HostRoot) -> tuple[dict[str, str], bool]:
    fields = ("sys_vendor", "product_name", "product_version", "board_vendor", "bios_vendor",
              "bios_version", "chassis_asset_tag", "chassis_vendor")
    present = root.exists("sys/class/dmi/id")
    out = {}
    if present:
        for name in fields:
            value = _line(root, f"sys/class/dmi/id/{name}")
            if value is not None:
                out[name] = value
    return out, present


def _smbios_vm_bit(root: HostRoot) -> bool | None:
    """SMBIOS type 0, byte 0x13 bit 4: "this is a virtual machine" (root-only raw entry)."""
    try:
        raw = root.read_bytes("sys/firmware/dmi/entries/0-0/raw", 64)
    except Unavailable:
        return None
    if len(raw) < 0x14 or raw[0] != 0 or raw[1] < 0x14:
        return None
    return bool(raw[0x13] & 0x10)


def _cpuinfo(root: HostRoot) -> tuple[set[str] | Unknown, str | None, str | None]:
    text = root.try_text("proc/cpuinfo")
    if isinstance(text, Unknown):
        return text, None, None
    flags: set[str] = set()
    vendor = model = None
    for line in text.splitlines():
        name, _, value = line.partition(":")
        name = name.strip()
        if name in ("flags", "Features") and not flags:
            flags = set(value.split())
        elif name == "vendor_id" and vendor is None:
            vendor = value.strip()
        elif name == "model name" and model is None:
            model = value.strip()
    return flags, vendor, model


def _acpi_oem(root: HostRoot) -> dict[str, str]:
    """OEM id / table id / creator of the first readable ACPI table header (root-only)."""
    for table in ("FACP", "DSDT", "APIC"):
        try:
            head = root.read_bytes(f"sys/firmware/acpi/tables/{table}", 36)
        except Unavailable:
            continue
        if len(head) >= 32:
            text = lambda a, b: head[a:b].decode("latin-1").strip("\0 ")
            return {"table": table, "oem_id": text(10, 16), "oem_table_id": text(16, 24),
                    "creator_id": text(28, 32)}
    return {}


def _pci_ids(root: HostRoot) -> set[str]:
    ids = set()
    for dev in root.try_listdir("sys/bus/pci/devices"):
        vendor = _line(root, f"sys/bus/pci/devices/{dev}/vendor")
        device = _line(root, f"sys/bus/pci/devices/{dev}/device")
        if vendor and device:
            ids.add(f"{vendor.lower().removeprefix('0x')}:{device.lower().removeprefix('0x')}")
    return ids


def _clocksources(root: HostRoot) -> list[str]:
    base = "sys/devices/system/clocksource/clocksource0/"
    current = _line(root, base + "current_clocksource")
    available = (_line(root, base + "available_clocksource") or "").split()
    return ([current] if current else []) + [c for c in available if c != current]


def _gather(root: HostRoot) -> _Signals:
    uname = root.uname()
    arch = uname["machine"] if known(uname) else ""
    flags, cpu_vendor, cpu_model = _cpuinfo(root)
    if not arch and cpu_vendor in ("GenuineIntel", "AuthenticAMD", "HygonGenuine"):
        arch = "x86_64"
    dmi, dmi_present = _dmi(root)
    features = _line(root, "sys/hypervisor/properties/features")
    try:
        xen_features = int(features, 16) if features else None
    except ValueError:
        xen_features = None
    caps = root.try_text("proc/xen/capabilities")
    dt = root.try_text("proc/device-tree/hypervisor/compatible")
    return _Signals(
        arch=arch, cpuid=cpuid_mod.read(root), cpu_flags=flags, cpu_vendor=cpu_vendor,
        cpu_model=cpu_model, dmi=dmi, dmi_present=dmi_present, smbios_vm_bit=_smbios_vm_bit(root),
        hv_type=_line(root, "sys/hypervisor/type"),
        xen_guest_type=_line(root, "sys/hypervisor/guest_type"), xen_features=xen_features,
        xen_caps=caps.strip() if known(caps) else None, xen_uuid=_line(root, "sys/hypervisor/uuid"),
        xen_version_extra=_line(root, "sys/hypervisor/version/extra"),
        proc_xen=root.exists("proc/xen"),
        xen_devices=root.try_listdir("sys/bus/xen/devices"), acpi_oem=_acpi_oem(root),
        pci=_pci_ids(root),
        clocksources=_clocksources(root), cmdline=_line(root, "proc/cmdline"),
        osrelease=_line(root, "proc/sys/kernel/osrelease"),
        dt_hypervisor=dt.replace("\0", " ").strip() if known(dt) else None)


def _is_x86(sig: _Signals) -> bool:
    return sig.arch in ("x86_64", "i686", "i386", "i586") or \
        (not sig.arch and known(sig.cpuid.method))


# =========================================================================== VM layer(s)
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


def _dmi_vendor(sig: _Signals) -> tuple[str, str | None, str, str] | None:
    """(verdict, flavor, field, value) of the first DMI field naming a hypervisor vendor."""
    for name in _DMI_FIELDS:
        value = sig.dmi.get(name, "")
        for prefix, verdict, flavor in _DMI_VENDORS:
            if value.startswith(prefix):
                return verdict, flavor, name, value
    return None


def _hv_bit(sig: _Signals) -> tuple[bool | None, Evidence | None]:
    """Hypervisor bit from CPUID, else from the cpuinfo flag (the kernel's view of the same)."""
    if known(sig.cpuid.hypervisor_bit):
        bit = sig.cpuid.hypervisor_bit
        return bit, Evidence(f"cpuid leaf 1 ECX bit 31 (via {sig.cpuid.method})", str(int(bit)),
                             "vm" if bit else "none", STRONG)
    if known(sig.cpu_flags) and _is_x86(sig):     # the flag exists on x86 only
        bit = "hypervisor" in sig.cpu_flags
        return bit, Evidence("/proc/cpuinfo flags", "hypervisor" if bit else "no 'hypervisor' flag",
                             "vm" if bit else "none", MEDIUM,
                             f"CPUID not readable: {sig.cpuid.method.reason}"
                             if isinstance(sig.cpuid.method, Unknown) else "")
    return None, None


def _xen_layer(sig: _Signals, ev: list[Evidence], roles: list[HostRole]) -> Layer | None:
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


def _xen_mode(sig: _Signals) -> tuple[str | None, list[Evidence]]:
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


def _xen_flavor(sig: _Signals, ev: list[Evidence]) -> str:
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


def _cpuid_evidence(sig: _Signals, ev: list[Evidence]) -> str | None:
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


def _vm_layers(root: HostRoot, sig: _Signals, roles: list[HostRole]) -> tuple[list[Layer], Layer]:
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
    x86 = _is_x86(sig)
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


def _decide_vm(sig: _Signals, bit: bool | None, hv: str | None,
               dmi: tuple | None, ev: list[Evidence]) -> tuple[str, str | None, str]:
    x86 = _is_x86(sig)
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


def clock_hint(sig: _Signals) -> str | None:
    return next((_CLOCKSOURCES[c] for c in sig.clocksources if c in _CLOCKSOURCES), None)


def _firecracker(sig: _Signals, ev: list[Evidence]) -> bool:
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


def _hardware_aws(sig: _Signals, hardware: Layer, layers: list[Layer]) -> Layer:
    if not any(l.present for l in layers) and sig.dmi.get("sys_vendor", "").startswith("Amazon"):
        product = sig.dmi.get("product_name", "")
        hardware.flavor = "aws-metal"
        hardware.evidence.append(Evidence("/sys/class/dmi/id/product_name", product, "aws-metal",
                                          STRONG if product.endswith(".metal") else MEDIUM,
                                          "Amazon EC2 bare-metal instance (no hypervisor bit)"))
    return hardware


# =========================================================================== container layer
_CGROUP_PATTERNS = [  # (regex on a cgroup path, verdict, flavor)
    (re.compile(r"/kubepods"), "kubernetes", None),
    (re.compile(r"/docker[/-]([0-9a-f]{12,64})"), "docker", None),
    (re.compile(r"/libpod-([0-9a-f]{12,64})"), "podman", None),
    (re.compile(r"/lxc(\.payload)?[./]"), "lxc", None),
    (re.compile(r"/machine\.slice/machine-.*\.scope"), "systemd-nspawn", None),
    (re.compile(r"/system\.slice/containerd"), "containerd", None),
]
_MOUNT_PATTERNS = [
    (re.compile(r"/var/lib/kubelet/pods/"), "kubernetes"),
    (re.compile(r"/docker/containers/[0-9a-f]{64}/"), "docker"),
    (re.compile(r"/containers/storage/overlay-containers/[0-9a-f]{64}/userdata"), "podman"),
    (re.compile(r"/var/lib/lxc/|/lxc/[^ ]+/rootfs"), "lxc"),
]
_ENV_NAMES = {"docker": "docker", "podman": "podman", "lxc": "lxc", "lxc-libvirt": "lxc",
              "systemd-nspawn": "systemd-nspawn", "oci": "container-other", "wsl": "wsl",
              "proot": "proot", "pouch": "pouch", "rkt": "rkt"}


def _env1_container() -> str | None:
    """Live only: the container= value of PID 1's environment, nothing else leaves the file."""
    try:
        with open("/proc/1/environ", "rb") as f:
            data = f.read(1 << 16)
    except OSError as exc:
        return Unknown(f"/proc/1/environ: {exc.strerror or exc}")
    for item in data.split(b"\0"):
        if item.startswith(b"container="):
            return item[len(b"container="):].decode("utf-8", "replace")
    return None


def _proot_tracer(root: HostRoot) -> str | None:
    """proot runs programs under ptrace: our tracer's name is "proot"."""
    status = root.try_text("proc/self/status")
    match = re.search(r"^TracerPid:\s*(\d+)", status, re.M) if known(status) else None
    if not match or match.group(1) == "0":
        return None
    comm = _line(root, f"proc/{match.group(1)}/comm")
    return f"{match.group(1)} ({comm})" if comm == "proot" else None


def _pid_ns(root: HostRoot) -> int | None:
    try:    # resolve proc/self first so a capture stores the link under the real pid directory
        link = root.readlink(root.resolve("proc/self/ns") + "/pid")
    except Unavailable:
        return None
    match = re.fullmatch(r"pid:\[(\d+)\]", link or "")
    return int(match.group(1)) if match else None


def _container_layer(root: HostRoot, sig: _Signals, roles: list[HostRole]) -> Layer:
    ev: list[Evidence] = []
    claims: list[tuple[str, str, str | None]] = []       # (verdict, strength, flavor)
    isolated: bool | None = None                           # evidence of a separate namespace

    def claim(verdict: str, e: Evidence, flavor: str | None = None) -> None:
        ev.append(e)
        claims.append((verdict, e.weight, flavor))

    # OpenVZ: /proc/vz in guests and host; /proc/bc only on the host.
    if root.exists("proc/vz"):
        if root.exists("proc/bc"):
            roles.append(HostRole("openvz-host", "OpenVZ/Virtuozzo hardware node", [
                Evidence("/proc/vz and /proc/bc", "present", "openvz-host", STRONG)]))
        else:
            claim("openvz", Evidence("/proc/vz without /proc/bc", "present", "openvz", STRONG))
            isolated = True
    release = sig.osrelease or ""
    if "microsoft" in release.lower() or "wsl" in release.lower():
        claim("wsl", Evidence("/proc/sys/kernel/osrelease", release, "wsl", STRONG),
              "wsl2" if "WSL2" in release or "microsoft-standard" in release else "wsl1")
        isolated = True
    tracer = _proot_tracer(root)
    if tracer:
        claim("proot", Evidence("/proc/self/status TracerPid", tracer, "proot", STRONG))
    manager = _line(root, "run/host/container-manager")
    if manager:
        claim(_ENV_NAMES.get(manager, manager), Evidence("/run/host/container-manager", manager,
                                                        manager, STRONG))
        isolated = True
    systemd_container = _line(root, "run/systemd/container")
    if systemd_container:
        claim(_ENV_NAMES.get(systemd_container, systemd_container),
              Evidence("/run/systemd/container", systemd_container, systemd_container, STRONG))
        isolated = True
    env1 = root.fact("env1", "container", _env1_container)
    if isinstance(env1, str) and env1:
        claim(_ENV_NAMES.get(env1, env1), Evidence("/proc/1/environ container=", env1, env1, STRONG))
        isolated = True
    elif isinstance(env1, Unknown) and not env1.reason.startswith("not recorded"):
        ev.append(Evidence("/proc/1/environ container=", str(env1), "unknown", INFO))
    own_env = root.environ("container")
    if own_env:
        claim(_ENV_NAMES.get(own_env, own_env), Evidence("$container", own_env, own_env, MEDIUM))
    if root.environ("KUBERNETES_SERVICE_HOST"):
        claim("kubernetes", Evidence("$KUBERNETES_SERVICE_HOST", "set", "kubernetes", MEDIUM))

    # PID namespace: the host's initial one has a fixed inode.
    ns = _pid_ns(root)
    if ns is not None:
        if ns != INIT_PID_NS_INODE:
            ev.append(Evidence("/proc/self/ns/pid", f"pid:[{ns}]", "container", STRONG,
                               "not the initial PID namespace (4026531836)"))
            isolated = True
        else:
            ev.append(Evidence("/proc/self/ns/pid", f"pid:[{ns}]", "none", STRONG,
                               "the host's initial PID namespace"))
            if isolated is None:
                isolated = False

    # cgroups (v1 paths, or v2 without a cgroup namespace) and mountinfo (v2 with one).
    cgroup_hit = False
    cgroups = root.try_text("proc/self/cgroup")
    if known(cgroups):
        for line in cgroups.splitlines():
            path = line.split(":", 2)[-1]
            for pattern, verdict, flavor in _CGROUP_PATTERNS:
                if pattern.search(path):
                    claim(verdict, Evidence("/proc/self/cgroup", line.strip(), verdict, STRONG), flavor)
                    cgroup_hit = True
                    break
            if cgroup_hit:
                break
        if not cgroup_hit:
            ev.append(Evidence("/proc/self/cgroup", "no docker/libpod/lxc/kubepods/machine path",
                               "none", MEDIUM, "with a cgroup namespace (cgroup v2) this proves "
                               "little: paths then start at /"))
    mountinfo = root.try_text("proc/self/mountinfo")
    overlay_root = False
    if known(mountinfo):
        for line in mountinfo.splitlines():
            fields = line.split()
            if len(fields) > 4 and fields[4] == "/" and " - overlay " in line:
                overlay_root = True
            for pattern, verdict in _MOUNT_PATTERNS:
                if len(fields) > 4 and pattern.search(fields[3]):
                    claim(verdict, Evidence("/proc/self/mountinfo", f"{fields[3]} on {fields[4]}",
                                            verdict, STRONG))
                    cgroup_hit = True
                    break
            else:
                continue
            break
    if cgroup_hit:
        isolated = True
    if overlay_root:
        ev.append(Evidence("/proc/self/mountinfo", "/ is an overlay filesystem", "container", WEAK))
    if root.exists("dev/lxd/sock"):
        claim("lxc", Evidence("/dev/lxd/sock", "present", "lxc", STRONG), "lxd")
        isolated = True

    # Marker files: images carry them, so they only name a runtime that isolation confirms.
    markers = []
    if root.exists("run/.containerenv"):
        text = root.try_text("run/.containerenv")
        rootless = known(text) and re.search(r"^rootless=1", text, re.M) is not None
        markers.append(("podman", Evidence("/run/.containerenv", "present" + (", rootless=1" if rootless else ""),
                                           "podman", MEDIUM), "rootless" if rootless else None))
    if root.exists(".dockerenv"):
        markers.append(("docker", Evidence("/.dockerenv", "present", "docker", WEAK), None))
    for verdict, e, flavor in markers:
        if isolated is False:
            e.weight = SUSPECT
            e.note = ("ignored: the PID namespace is the host's initial one and no cgroup or mount "
                      "shows a container (a file left in the image or root filesystem)")
            ev.append(e)
        else:
            if isolated is None:
                e.note = "PID namespace and cgroups could not confirm it"
            claim(verdict, e, flavor)

    return _decide_container(claims, ev, isolated)


def _decide_container(claims: list[tuple[str, str, str | None]], ev: list[Evidence],
                      isolated: bool | None) -> Layer:
    if not claims:
        if isolated:
            return Layer("container", "container-other", confidence="medium", evidence=ev)
        return Layer("container", "none", confidence="high" if isolated is False else "medium",
                     evidence=ev)
    rank = {STRONG: 0, MEDIUM: 1, WEAK: 2}
    # Kubernetes is the orchestrator over a runtime: report it with the runtime as flavor.
    verdicts = [c[0] for c in claims]
    flavor = next((c[2] for c in claims if c[2]), None)
    if "kubernetes" in verdicts:
        runtime = next((v for v in verdicts if v in ("docker", "containerd", "podman", "cri-o")), None)
        verdict, flavor = "kubernetes", runtime or flavor
    else:
        best = min(claims, key=lambda c: rank.get(c[1], 3))
        verdict = best[0]
        if verdict == "containerd":
            verdict = "container-other"
            flavor = "containerd"
    strengths = {c[1] for c in claims}
    confidence = "high" if STRONG in strengths and isolated else (
        "medium" if isolated or STRONG in strengths else "low")
    distinct = {v for v in verdicts if v not in ("kubernetes", "containerd")}
    conflict = len(distinct) > 1 and not (distinct <= {"docker", "podman"} and "kubernetes" in verdicts)
    layer = Layer("container", verdict, flavor=flavor, confidence=confidence, evidence=ev)
    if conflict:
        layer.confidence = "medium" if confidence == "high" else confidence
        ev.append(Evidence("container signals", ", ".join(sorted(distinct)), verdict, INFO,
                           "signals name different container managers"))
    return layer


# =========================================================================== roles, assembly
def _kvm_host(root: HostRoot, sig: _Signals, in_vm: bool, roles: list[HostRole]) -> None:
    if not (root.exists("sys/devices/virtual/misc/kvm") or root.exists("dev/kvm")):
        return
    flags = sig.cpu_flags if known(sig.cpu_flags) else set()
    virt_ext = sorted(flags & {"vmx", "svm"})
    if not virt_ext:
        return          # /dev/kvm without VT-x/AMD-V cannot run guests (common in microVMs)
    roles.append(HostRole("kvm-host", "nested: KVM inside a guest" if in_vm else "KVM hypervisor",
                          [Evidence("/sys/devices/virtual/misc/kvm", "present", "kvm-host", STRONG),
                           Evidence("/proc/cpuinfo flags", " ".join(virt_ext), "kvm-host", STRONG)]))


def _hyperv_root(sig: _Signals, roles: list[HostRole]) -> bool:
    block = sig.cpuid.block("microsoft")
    if block is None:
        return False
    privileges = block.leaves.get(block.base + 3)
    if privileges and privileges[1] & (1 << 12):
        roles.append(HostRole("hyperv-root", "Hyper-V root partition (the host)", [Evidence(
            f"cpuid 0x{block.base + 3:08x} EBX bit 12", "CpuManagement", "hyperv-root", STRONG)]))
        return True
    return False


_CC_FLAGS = (("tdx_guest", "Intel TDX"), ("sev_snp", "AMD SEV-SNP"), ("sev_es", "AMD SEV-ES"),
             ("sev", "AMD SEV"))
_HV_ISOLATION = {1: "Hyper-V VBS", 2: "AMD SEV-SNP", 3: "Intel TDX"}


def _confidential(sig: _Signals, layer: Layer) -> None:
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


def _summary(layers: list[Layer]) -> str:
    return " > ".join(l.label() for l in layers if l.present)


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


def collect(root: HostRoot) -> VirtSection:
    sig = _gather(root)
    roles: list[HostRole] = []
    vm_layers, hardware = _vm_layers(root, sig, roles)
    if _hyperv_root(sig, roles):
        for layer in vm_layers:
            if layer.verdict == "hyperv":
                layer.verdict = "none"
                layer.flavor = None
                layer.evidence.append(Evidence("Hyper-V root partition", "yes", "none", INFO,
                                               "the root partition is the Hyper-V host"))
    innermost_vm = next((l for l in vm_layers if l.present and l.verdict != "uml"), None)
    if innermost_vm is not None:
        _confidential(sig, innermost_vm)
    container = _container_layer(root, sig, roles)
    in_vm = any(l.present for l in vm_layers)
    _kvm_host(root, sig, in_vm, roles)
    if not in_vm and (sig.dmi.get("sys_vendor") or sig.dmi.get("product_name")):
        # Inside a guest DMI describes the virtual machine, not the hardware below.
        hardware.evidence.insert(0, Evidence(
            "/sys/class/dmi/id", f"{sig.dmi.get('sys_vendor', '?')} "
            f"{sig.dmi.get('product_name', '')}".strip(), "hardware", INFO))
    if not in_vm:
        # Bare metal is only as certain as the "no VM" verdict it rests on: a root with nothing
        # to read must not claim hardware with high confidence.
        hardware.confidence = next((l.confidence for l in vm_layers if l.kind == "vm"),
                                   hardware.confidence)
    layers = [container, *vm_layers, hardware]
    blocks = sig.cpuid.blocks
    cpuid = CpuidSummary(
        method=sig.cpuid.method, vendor=sig.cpuid.vendor, hypervisor_bit=sig.cpuid.hypervisor_bit,
        blocks=[f"{b.label} {b.signature or '(empty)'} ({b.hypervisor or 'unknown'})"
                for b in blocks] if known(blocks) else blocks)
    return VirtSection(layers=layers, roles=roles, cpuid=cpuid, summary=_summary(layers),
                       conflicts=_conflicts(layers))
