"""The machine-level facts the VM layers are decided from, gathered once from a root."""
from __future__ import annotations

from dataclasses import dataclass

from inspector.discover import cpuid as cpuid_mod
from inspector.discover.cpuid import CpuidView
from inspector.host import HostRoot, Unavailable
from inspector.model import Unknown, known


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


def line(root: HostRoot, rel: str) -> str | None:
    value = root.try_line(rel)
    return value if known(value) else None


def _dmi(root: HostRoot) -> tuple[dict[str, str], bool]:
    fields = ("sys_vendor", "product_name", "product_version", "board_vendor", "bios_vendor",
              "bios_version", "chassis_asset_tag", "chassis_vendor")
    present = root.exists("sys/class/dmi/id")
    out = {}
    if present:
        for name in fields:
            value = line(root, f"sys/class/dmi/id/{name}")
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
    for entry in text.splitlines():
        name, _, value = entry.partition(":")
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
            text = lambda a, b: head[a:b].decode("latin-1").strip("\0 ")  # noqa: E731
            return {"table": table, "oem_id": text(10, 16), "oem_table_id": text(16, 24),
                    "creator_id": text(28, 32)}
    return {}


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


def gather(root: HostRoot) -> Signals:
    uname = root.uname()
    arch = uname["machine"] if known(uname) else ""
    flags, cpu_vendor, cpu_model = _cpuinfo(root)
    if not arch and cpu_vendor in ("GenuineIntel", "AuthenticAMD", "HygonGenuine"):
        arch = "x86_64"
    dmi, dmi_present = _dmi(root)
    features = line(root, "sys/hypervisor/properties/features")
    try:
        xen_features = int(features, 16) if features else None
    except ValueError:
        xen_features = None
    caps = root.try_text("proc/xen/capabilities")
    dt = root.try_text("proc/device-tree/hypervisor/compatible")
    return Signals(
        arch=arch, cpuid=cpuid_mod.read(root), cpu_flags=flags, cpu_vendor=cpu_vendor,
        cpu_model=cpu_model, dmi=dmi, dmi_present=dmi_present, smbios_vm_bit=_smbios_vm_bit(root),
        hv_type=line(root, "sys/hypervisor/type"),
        xen_guest_type=line(root, "sys/hypervisor/guest_type"), xen_features=xen_features,
        xen_caps=caps.strip() if known(caps) else None, xen_uuid=line(root, "sys/hypervisor/uuid"),
        xen_version_extra=line(root, "sys/hypervisor/version/extra"),
        proc_xen=root.exists("proc/xen"),
        xen_devices=root.try_listdir("sys/bus/xen/devices"), acpi_oem=_acpi_oem(root),
        pci=_pci_ids(root),
        clocksources=_clocksources(root), cmdline=line(root, "proc/cmdline"),
        osrelease=line(root, "proc/sys/kernel/osrelease"),
        dt_hypervisor=dt.replace("\0", " ").strip() if known(dt) else None)


def is_x86(sig: Signals) -> bool:
    return sig.arch in ("x86_64", "i686", "i386", "i586") or \
        (not sig.arch and known(sig.cpuid.method))
