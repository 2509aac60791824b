"""The machine-level facts the VM layers are decided from, gathered once from a root.

An empty file is not evidence: an empty /proc/cpuinfo (some container images ship one) reads as
unknown, not as "no hypervisor flag"."""
from __future__ import annotations

from dataclasses import dataclass, field

from inspector.discover import cpuid as cpuid_mod
from inspector.discover.cpuid import CpuidView
from inspector.discover.virt.firmware import Firmware, read_firmware
from inspector.model import Unknown, known
from inspector.roots.host import HostRoot, Unavailable

# /proc/cpuinfo fields kept (first occurrence): x86 vendor and model, POWER platform and
# model/machine ("IBM pSeries (emulated by qemu)" under KVM or TCG), s390 vendor "IBM/S390"
_CPUINFO_FIELDS = ("vendor_id", "model name", "platform", "model", "machine")


@dataclass
class DeviceTree:
    """What the flattened device tree (/proc/device-tree, arm64, POWER, RISC-V) says."""
    present: bool = False
    hypervisor: str | None = None        # hypervisor/compatible, entries joined by " "
    compatible: list[str] = field(default_factory=list)   # the root node's compatible list
    fw_cfg: list[str] = field(default_factory=list)       # "fw-cfg@9020000 (qemu,fw-cfg-mmio)"
    partition_name: str | None = None    # ibm,partition-name (PowerVM, QEMU pseries with -name)
    hmc_managed: bool = False            # hmc-managed? (PowerVM under an HMC)
    qemu_graphic: bool = False           # chosen/qemu,graphic-width (QEMU pseries)


@dataclass
class Signals:
    arch: str
    cpuid: CpuidView
    cpu_flags: set[str] | Unknown
    cpu_vendor: str | None
    cpu_model: str | None
    dmi: dict[str, str]
    dmi_present: bool
    smbios_vm_bit: bool | None
    firmware: Firmware                # where the DMI strings and the VM bit were read
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
    cpuinfo: dict[str, str] = field(default_factory=dict)  # _CPUINFO_FIELDS seen
    devicetree: DeviceTree = field(default_factory=DeviceTree)
    lparcfg: dict[str, str] | None = None    # /proc/powerpc/lparcfg (POWER LPARs and pseries)
    sysinfo: dict[str, str] | None = None    # /proc/sysinfo (s390x)


def line(root: HostRoot, rel: str) -> str | None:
    value = root.try_line(rel)
    return value if known(value) else None


def _cpuinfo(root: HostRoot) -> tuple[set[str] | Unknown, dict[str, str]]:
    text = root.try_text("proc/cpuinfo")
    if isinstance(text, Unknown):
        return text, {}
    if not text.strip():
        return Unknown("/proc/cpuinfo is empty (not evidence either way)"), {}
    flags: set[str] | None = None
    fields: dict[str, str] = {}
    for entry in text.splitlines():
        name, _, value = entry.partition(":")
        name = name.strip()
        if name in ("flags", "Features", "features") and flags is None:
            flags = set(value.split())
        elif name in _CPUINFO_FIELDS and name not in fields:
            fields[name] = value.strip()
    return (Unknown("/proc/cpuinfo has no flags line") if flags is None else flags), fields


def _acpi_oem(root: HostRoot) -> dict[str, str]:
    """OEM id / table id / creator of the first readable ACPI table header (root-only)."""
    for table in ("FACP", "DSDT", "APIC"):
        try:
            head = root.read_bytes(f"sys/firmware/acpi/tables/{table}", 36)
        except Unavailable:
            continue
        if len(head) >= 32:
            return {"table": table, "oem_id": _acpi_field(head, 10, 16),
                    "oem_table_id": _acpi_field(head, 16, 24),
                    "creator_id": _acpi_field(head, 28, 32)}
    return {}


def _acpi_field(header: bytes, start: int, end: int) -> str:
    return header[start:end].decode("latin-1").strip("\0 ")


def _pci_ids(root: HostRoot) -> set[str]:
    ids = set()
    for dev in root.try_listdir("sys/bus/pci/devices"):
        vendor = line(root, f"sys/bus/pci/devices/{dev}/vendor")
        device = line(root, f"sys/bus/pci/devices/{dev}/device")
        if vendor and device:
            ids.add(f"{vendor.lower().removeprefix('0x')}:{device.lower().removeprefix('0x')}")
    return ids


def _clocksources(root: HostRoot) -> list[str]:
    base = "sys/devices/system/clocksource/clocksource0/"
    current = line(root, base + "current_clocksource")
    available = (line(root, base + "available_clocksource") or "").split()
    return ([current] if current else []) + [c for c in available if c != current]


def _dt_strings(root: HostRoot, rel: str) -> list[str]:
    """A device-tree string-list property: NUL-separated, NUL-terminated."""
    try:
        raw = root.read_bytes(rel, 4096)
    except Unavailable:
        return []
    return [s for s in raw.decode("latin-1").split("\0") if s.strip()]


def _devicetree(root: HostRoot) -> DeviceTree:
    """Nodes and properties per the Linux device-tree bindings and QEMU's generated trees:
    /hypervisor (Documentation/devicetree/bindings/arm/xen.txt: "xen,xen"; QEMU pseries under
    KVM: "linux,kvm"), fw-cfg@... (bindings/firmware/qemu,fw-cfg-mmio.yaml), the root
    compatible ("linux,dummy-virt" of QEMU's and kvmtool's arm virt machines, "qemu,pseries")."""
    base = "proc/device-tree"
    if not root.exists(base):
        return DeviceTree()
    names = root.try_listdir(base)
    fw_cfg = []
    for name in names:
        if "fw-cfg" in name:
            compat = _dt_strings(root, f"{base}/{name}/compatible")
            fw_cfg.append(f"{name} ({', '.join(compat)})" if compat else name)
    hypervisor = _dt_strings(root, f"{base}/hypervisor/compatible")
    partition = _dt_strings(root, f"{base}/ibm,partition-name")
    return DeviceTree(
        present=True, hypervisor=" ".join(hypervisor) or None,
        compatible=_dt_strings(root, f"{base}/compatible"), fw_cfg=fw_cfg,
        partition_name=partition[0] if partition else None,
        hmc_managed="hmc-managed?" in names,         # a boolean property: present means true
        qemu_graphic=root.exists(f"{base}/chosen/qemu,graphic-width"))


def _key_values(root: HostRoot, rel: str, sep: str) -> dict[str, str] | None:
    """"key=value" (lparcfg) or "Key: value" (sysinfo) lines; None when absent or empty."""
    text = root.try_text(rel)
    if not known(text) or not text.strip():
        return None
    out: dict[str, str] = {}
    for entry in text.splitlines():
        name, found, value = entry.partition(sep)
        if found and name.strip() and name.strip() not in out:
            out[name.strip()] = value.strip()
    return out or None


def _arch(root: HostRoot, cpu: dict[str, str]) -> str:
    uname = root.uname()
    if known(uname):
        return uname["machine"]
    vendor = cpu.get("vendor_id", "")
    if vendor in ("GenuineIntel", "AuthenticAMD", "HygonGenuine"):
        return "x86_64"
    if vendor.startswith("IBM/S390"):
        return "s390x"
    if "platform" in cpu:
        return "ppc64le"
    return ""


def gather(root: HostRoot) -> Signals:
    flags, cpu = _cpuinfo(root)
    arch = _arch(root, cpu)
    firmware = read_firmware(root)
    features = line(root, "sys/hypervisor/properties/features")
    try:
        xen_features = int(features, 16) if features else None
    except ValueError:
        xen_features = None
    caps = root.try_text("proc/xen/capabilities")
    devicetree = _devicetree(root)
    lparcfg = None
    if arch.startswith("ppc") or "platform" in cpu:
        # the kernel creates powerpc/lparcfg; /proc/ppc64 is a link to /proc/powerpc
        lparcfg = _key_values(root, "proc/powerpc/lparcfg", "=") or \
            _key_values(root, "proc/ppc64/lparcfg", "=")
    sysinfo = _key_values(root, "proc/sysinfo", ":") if arch.startswith("s390") or \
        cpu.get("vendor_id", "").startswith("IBM/S390") else None
    return Signals(
        arch=arch, cpuid=cpuid_mod.read(root), cpu_flags=flags,
        cpu_vendor=cpu.get("vendor_id"), cpu_model=cpu.get("model name"),
        dmi=firmware.dmi, dmi_present=firmware.present, smbios_vm_bit=firmware.vm_bit,
        firmware=firmware, hv_type=line(root, "sys/hypervisor/type") or None,
        xen_guest_type=line(root, "sys/hypervisor/guest_type") or None, xen_features=xen_features,
        xen_caps=caps.strip() if known(caps) else None, xen_uuid=line(root, "sys/hypervisor/uuid"),
        xen_version_extra=line(root, "sys/hypervisor/version/extra"),
        proc_xen=root.exists("proc/xen"),
        xen_devices=root.try_listdir("sys/bus/xen/devices"), acpi_oem=_acpi_oem(root),
        pci=_pci_ids(root),
        clocksources=_clocksources(root), cmdline=line(root, "proc/cmdline"),
        osrelease=line(root, "proc/sys/kernel/osrelease"),
        dt_hypervisor=devicetree.hypervisor, cpuinfo=cpu, devicetree=devicetree,
        lparcfg=lparcfg, sysinfo=sysinfo)


def is_x86(sig: Signals) -> bool:
    return sig.arch in ("x86_64", "i686", "i386", "i586") or \
        (not sig.arch and known(sig.cpuid.method))
