"""Firmware identity: the SMBIOS (DMI) strings and the SMBIOS "virtual machine" bit.

Strings come from /sys/class/dmi/id (the kernel's dmi-id class, CONFIG_DMIID). Where that is
absent (kernels before 2.6.22 or built without it, containers that mask it) they come from
`dmidecode`, bounded and recorded like every command: `dmidecode -t 0` (BIOS information, which
holds no serial number) and `dmidecode -s KEYWORD` for the other strings, so that no serial
number or UUID ends up in a capture.

The VM bit is bit 4 of BIOS Characteristics Extension Byte 2, byte 0x13 of the type 0 structure
(DMTF DSP0134 section 7.1.2.2). The kernel exposes that structure alone as
/sys/firmware/dmi/entries/0-0/raw (the dmi-sysfs module, root only: what systemd reads) and the
whole table as /sys/firmware/dmi/tables/DMI (root only, Linux 4.2 and later), of which only the
first 0x14 bytes are read: firmware puts type 0 first, and nothing beyond it is read or captured.
dmidecode prints "System is a virtual machine" when the bit is set (virt-what's Graviton test).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from inspector.model import known
from inspector.roots.host import HostRoot, Unavailable

DMI_FIELDS = ("sys_vendor", "product_name", "product_version", "board_vendor", "bios_vendor",
              "bios_version", "chassis_asset_tag", "chassis_vendor")
DMIDECODE_TIMEOUT = 5.0
# dmidecode -s keyword for each field that type 0 (read whole with -t 0) does not hold
_DMIDECODE_KEYWORDS = {"sys_vendor": "system-manufacturer", "product_name": "system-product-name",
                       "product_version": "system-version", "board_vendor": "baseboard-manufacturer",
                       "chassis_vendor": "chassis-manufacturer", "chassis_asset_tag": "chassis-asset-tag"}
_NOT_SET = ("Not Specified", "Not Present", "Default string", "To Be Filled By O.E.M.")
VM_BIT_OFFSET = 0x13                # BIOS Characteristics Extension Byte 2 in a type 0 structure
VM_BIT = 0x10


@dataclass
class Firmware:
    dmi: dict[str, str] = field(default_factory=dict)     # field -> string ("" when unset)
    sources: dict[str, str] = field(default_factory=dict)  # field -> where it was read
    present: bool = False            # SMBIOS strings could be read at all
    absent_reason: str = ""          # why not: "no /sys/class/dmi/id; dmidecode: ..."
    vm_bit: bool | None = None       # None: not readable
    vm_bit_source: str = ""


def _line(root: HostRoot, rel: str) -> str | None:
    value = root.try_line(rel)
    return value if known(value) else None


def _type0_vm_bit(raw: bytes) -> bool | None:
    """The VM bit of a type 0 structure's first bytes; None when it is not one or too short
    (the length byte below 0x14: firmware older than SMBIOS 2.4 has no extension byte 2)."""
    if len(raw) <= VM_BIT_OFFSET or raw[0] != 0 or raw[1] <= VM_BIT_OFFSET:
        return None
    return bool(raw[VM_BIT_OFFSET] & VM_BIT)


def _vm_bit(root: HostRoot) -> tuple[bool | None, str]:
    for rel, label in (("sys/firmware/dmi/entries/0-0/raw", "/sys/firmware/dmi/entries/0-0/raw"),
                       ("sys/firmware/dmi/tables/DMI", "/sys/firmware/dmi/tables/DMI (type 0)")):
        try:
            raw = root.read_bytes(rel, VM_BIT_OFFSET + 1)
        except Unavailable:
            continue
        bit = _type0_vm_bit(raw)
        if bit is not None:
            return bit, f"{label} byte 0x13 bit 4"
    return None, ""


def _dmidecode_value(text: str) -> str:
    value = text.strip()
    return "" if value in _NOT_SET else value


def parse_bios_information(text: str) -> tuple[dict[str, str], bool]:
    """Vendor, Version and the VM characteristic of `dmidecode -t 0` output."""
    out: dict[str, str] = {}
    vm = False
    in_type0 = False
    for line in text.splitlines():
        if line.startswith("Handle "):
            in_type0 = "DMI type 0," in line
            continue
        if not in_type0:
            continue
        stripped = line.strip()
        if stripped == "System is a virtual machine":
            vm = True
        elif line.startswith("\tVendor:") and "bios_vendor" not in out:
            out["bios_vendor"] = _dmidecode_value(stripped.partition(":")[2])
        elif line.startswith("\tVersion:") and "bios_version" not in out:
            out["bios_version"] = _dmidecode_value(stripped.partition(":")[2])
    return out, vm


def _from_dmidecode(root: HostRoot, fw: Firmware) -> None:
    bios = root.run(["dmidecode", "-t", "0"], timeout=DMIDECODE_TIMEOUT)
    if not bios.ok or "DMI type 0," not in bios.stdout:
        if (bios.error or "").startswith("not recorded"):
            return               # a capture from before the fallback: nothing known either way
        said = [line.strip(" #") for line in (bios.stdout + "\n" + bios.stderr).splitlines()
                if line.strip(" #") and not line.startswith(("# dmidecode", "Scanning"))]
        why = bios.error or (said[-1] if said else f"exit {bios.returncode}, no output")
        fw.absent_reason = f"no /sys/class/dmi/id; dmidecode: {why[:120]}"
        return
    strings, vm = parse_bios_information(bios.stdout)
    for name, value in strings.items():
        fw.dmi[name] = value
        fw.sources[name] = "dmidecode -t 0"
    if vm:
        fw.vm_bit, fw.vm_bit_source = True, "dmidecode -t 0 (System is a virtual machine)"
    for name, keyword in _DMIDECODE_KEYWORDS.items():
        res = root.run(["dmidecode", "-s", keyword], timeout=DMIDECODE_TIMEOUT)
        if res.ok:
            fw.dmi[name] = _dmidecode_value(res.stdout.split("\n", 1)[0])
            fw.sources[name] = f"dmidecode -s {keyword}"
    fw.present = True


def read_firmware(root: HostRoot) -> Firmware:
    fw = Firmware()
    if root.exists("sys/class/dmi/id"):
        fw.present = True
        for name in DMI_FIELDS:
            value = _line(root, f"sys/class/dmi/id/{name}")
            if value is not None:
                fw.dmi[name] = value
                fw.sources[name] = f"/sys/class/dmi/id/{name}"
    else:
        _from_dmidecode(root, fw)
    bit, source = _vm_bit(root)
    if bit is not None:          # the raw structure is exact; dmidecode only says "set"
        fw.vm_bit, fw.vm_bit_source = bit, source
    return fw
