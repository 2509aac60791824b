"""The reference tools, run against a fixture root.

virt-what runs for real with its --test-root option, the way its own test suite runs it: it
puts ROOT/sbin first on PATH, so the commands it would run on a live machine are given as small
scripts made from what the root recorded (virt-what-cpuid-helper from the sidecar's CPUID
leaves, dmidecode from the root's DMI files or recorded dmidecode output, uname -m from the
recorded uname); PID 1's environment is written from the recorded container= fact. The real
helper reads CPUID live, so without these it would describe this machine, not the root.

systemd-detect-virt reads only the live machine, so its logic is transcribed here from
src/basic/virt.c (detect_vm, detect_container; systemd v256): same order, same tables.
Two things it reads cannot be had from a root and count as absent: CPUID when the capture has
none, and the cgroup-namespace test of the container check."""
from __future__ import annotations

import json
import struct
import subprocess
from pathlib import Path

from inspector.discover import cpuid as cpuid_mod

X86 = ("x86_64", "i386", "i486", "i586", "i686")

# virt-what-cpuid-helper 1.25 prints the highest block whose signature it knows.
VIRT_WHAT_HELPER_KNOWS = {"bhyve bhyve ", "LKVMLKVMLKVM", "Microsoft Hv", "OpenBSDVMM58",
                          "TCGTCGTCGTCG", "VMwareVMware", "XenVMMXenVMM", "KVMKVMKVM"}
DMI_FIELDS = ("sys_vendor", "product_name", "product_version", "board_vendor", "bios_vendor",
              "bios_version", "chassis_asset_tag", "chassis_vendor")
DMIDECODE_S = {"sys_vendor": "system-manufacturer", "product_name": "system-product-name",
               "product_version": "system-version", "board_vendor": "baseboard-manufacturer",
               "chassis_vendor": "chassis-manufacturer", "chassis_asset_tag": "chassis-asset-tag"}


def sidecar_facts(root: Path) -> dict:
    path = root / "inspector-sidecar.json"
    return json.loads(path.read_text())["facts"] if path.exists() else {}


def machine(facts: dict) -> str:
    return facts.get("uname", {}).get("uname", {}).get("machine", "x86_64")


def _line(root: Path, rel: str) -> str | None:
    path = root / rel
    if not path.exists():
        return None
    return path.read_bytes().split(b"\n", 1)[0].split(b"\0", 1)[0].decode("utf-8", "replace")


def _cpuid_leaf(facts: dict, leaf: str) -> list[int] | None:
    value = facts.get("cpuid", {}).get(leaf)
    return value if isinstance(value, list) and len(value) == 4 else None


# --------------------------------------------------------------------------- virt-what
def helper_output(facts: dict) -> str:
    scan = facts.get("cpuid", {}).get("scan")
    for base in sorted(scan if isinstance(scan, list) else [], reverse=True):
        regs = _cpuid_leaf(facts, base)
        sig = cpuid_mod.signature(regs) if regs else ""
        if sig in VIRT_WHAT_HELPER_KNOWS:
            return sig + "\n"
    return ""


def _vm_bit(root: Path) -> bool:
    for rel in ("sys/firmware/dmi/entries/0-0/raw", "sys/firmware/dmi/tables/DMI"):
        path = root / rel
        if path.exists():
            raw = path.read_bytes()
            if len(raw) > 0x13 and raw[0] == 0 and raw[1] > 0x13:
                return bool(raw[0x13] & 0x10)
    return False


def dmidecode_output(root: Path, facts: dict) -> str:
    """What `dmidecode` (no options) prints for the firmware the root describes."""
    dmi: dict[str, str] = {}
    base = root / "sys/class/dmi/id"
    commands = facts.get("command", {})
    if base.exists():
        dmi = {name: _line(root, f"sys/class/dmi/id/{name}") or "" for name in DMI_FIELDS}
    elif "DMI type 0," in commands.get("dmidecode -t 0", {}).get("stdout", ""):
        bios = commands["dmidecode -t 0"]["stdout"]
        for line in bios.splitlines():
            if line.startswith("\tVendor:"):
                dmi["bios_vendor"] = line.split(":", 1)[1].strip()
            elif line.startswith("\tVersion:"):
                dmi["bios_version"] = line.split(":", 1)[1].strip()
        for name, keyword in DMIDECODE_S.items():
            dmi[name] = commands.get(f"dmidecode -s {keyword}", {}).get("stdout", "").strip()
    else:
        return "# dmidecode 3.4\n# No SMBIOS nor DMI entry point found, sorry.\n"
    value = lambda name: dmi.get(name) or "Not Specified"  # noqa: E731
    vm = "\t\tSystem is a virtual machine\n" if _vm_bit(root) or "System is a virtual machine" in \
        commands.get("dmidecode -t 0", {}).get("stdout", "") else ""
    return ("# dmidecode 3.4\nSMBIOS 2.8 present.\n\n"
            f"Handle 0x0000, DMI type 0, 24 bytes\nBIOS Information\n\tVendor: {value('bios_vendor')}"
            f"\n\tVersion: {value('bios_version')}\n\tCharacteristics:\n\t\tPCI is supported\n{vm}\n"
            f"Handle 0x0100, DMI type 1, 27 bytes\nSystem Information\n"
            f"\tManufacturer: {value('sys_vendor')}\n\tProduct Name: {value('product_name')}\n"
            f"\tVersion: {value('product_version')}\n\n"
            f"Handle 0x0200, DMI type 2, 15 bytes\nBase Board Information\n"
            f"\tManufacturer: {value('board_vendor')}\n\n"
            f"Handle 0x0300, DMI type 3, 22 bytes\nChassis Information\n"
            f"\tManufacturer: {value('chassis_vendor')}\n\tAsset Tag: {value('chassis_asset_tag')}\n\n")


def _script(path: Path, output: str) -> None:
    data = path.with_suffix(".out")
    data.write_text(output)
    path.write_text(f"#!/bin/sh\nexec cat '{data}'\n")
    path.chmod(0o755)


def prepare_for_virt_what(root: Path) -> None:
    """Give a copy of a fixture root the commands virt-what would run on that machine."""
    facts = sidecar_facts(root)
    sbin = root / "sbin"
    sbin.mkdir(exist_ok=True)
    _script(sbin / "virt-what-cpuid-helper", helper_output(facts))
    _script(sbin / "dmidecode", dmidecode_output(root, facts))
    _script(sbin / "uname", machine(facts) + "\n")
    env1 = facts.get("env1", {}).get("container")
    environ = root / "proc/1/environ"
    if isinstance(env1, str) and not environ.exists():
        environ.parent.mkdir(parents=True, exist_ok=True)
        environ.write_bytes(f"container={env1}\0".encode())


def run_virt_what(root: Path) -> list[str]:
    proc = subprocess.run(["virt-what", f"--test-root={root}"], capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.split()


# --------------------------------------------------------------------------- systemd
_DMI_TABLE = [("KVM", "kvm"), ("OpenStack", "kvm"), ("KubeVirt", "kvm"), ("Amazon EC2", "amazon"),
              ("QEMU", "qemu"), ("VMware", "vmware"), ("VMW", "vmware"), ("innotek GmbH", "oracle"),
              ("VirtualBox", "oracle"), ("Oracle Corporation", "oracle"), ("Xen", "xen"),
              ("Bochs", "bochs"), ("Parallels", "parallels"), ("BHYVE", "bhyve"),
              ("Hyper-V", "microsoft"), ("Apple Virtualization", "apple"),
              ("Google Compute Engine", "google")]
_CPUID_TABLE = {"XenVMMXenVMM": "xen", "KVMKVMKVM": "kvm", "Linux KVM Hv": "kvm",
                "TCGTCGTCGTCG": "qemu", "VMwareVMware": "vmware", "Microsoft Hv": "microsoft",
                "bhyve bhyve ": "bhyve", "QNXQVMBSQG": "qnx", "ACRNACRNACRN": "acrn",
                "SRESRESRESRE": "sre", "Apple VZ": "apple"}
_CONTAINERS = {"lxc", "lxc-libvirt", "systemd-nspawn", "docker", "podman", "rkt", "wsl", "proot",
               "pouch"}


def _smbios_bit(root: Path) -> str:
    path = root / "sys/firmware/dmi/entries/0-0/raw"
    if not path.exists():
        return "unknown"
    raw = path.read_bytes()
    if len(raw) < 20 or raw[1] < 20:
        return "unknown"
    return "set" if raw[19] & 0x10 else "unset"


def _detect_vm_dmi(root: Path, arch: str) -> str:
    if not (arch in X86 or arch.startswith(("arm", "aarch64", "loongarch"))):
        return "none"
    found = "none"
    for name in ("product_name", "sys_vendor", "board_vendor", "bios_vendor", "product_version"):
        value = _line(root, f"sys/class/dmi/id/{name}")
        if value is None:
            continue
        found = next((v for prefix, v in _DMI_TABLE if value.startswith(prefix)), "none")
        if found != "none":
            break
    if found == "amazon":
        bit = _smbios_bit(root)
        if bit != "unknown":
            return "amazon" if bit == "set" else "none"
        product = _line(root, "sys/class/dmi/id/product_name")
        if product is None:
            return "amazon"
        at = product.find(".metal")
        return "none" if at >= 0 and product[at + 6:at + 7] in ("", "-") else "amazon"
    if found == "none" and _smbios_bit(root) == "set":
        return "vm-other"
    return found


def _detect_vm_cpuid(facts: dict, arch: str) -> str:
    leaf1 = _cpuid_leaf(facts, "0x00000001")
    if arch not in X86 or leaf1 is None or not leaf1[2] & (1 << 31):
        return "none"
    regs = _cpuid_leaf(facts, "0x40000000")
    if regs is None:
        return "vm-other"
    text = struct.pack("<3I", *regs[1:]) + b"\0"
    return next((v for sig, v in _CPUID_TABLE.items() if text == sig.encode().ljust(13, b"\0")),
                "vm-other")


def _xen_dom0(root: Path) -> bool:
    features = _line(root, "sys/hypervisor/properties/features")
    if features is not None:
        try:
            return bool(int(features, 16) & (1 << 11))
        except ValueError:
            pass
    caps = _line(root, "proc/xen/capabilities")
    return caps is not None and "control_d" in caps.split(",")


def _detect_vm_device_tree(root: Path, arch: str) -> str:
    if not arch.startswith(("arm", "aarch64", "ppc", "powerpc", "riscv")):
        return "none"
    dt = root / "proc/device-tree"
    hv = _line(root, "proc/device-tree/hypervisor/compatible")
    if hv is None:
        if (dt / "ibm,partition-name").exists() and (dt / "hmc-managed?").exists() and \
                not (dt / "chosen/qemu,graphic-width").exists():
            return "powervm"
        if not dt.exists():
            return "none"
        if any("fw-cfg" in p.name for p in dt.iterdir()):
            return "qemu"
        return "qemu" if _line(root, "proc/device-tree/compatible") == "qemu,pseries" else "none"
    if hv == "linux,kvm":
        return "kvm"
    return "xen" if "xen" in hv else "vmware" if "vmware" in hv else "vm-other"


def _detect_vm_zvm(root: Path, arch: str) -> str:
    if not arch.startswith("s390") or not (root / "proc/sysinfo").exists():
        return "none"
    for line in (root / "proc/sysinfo").read_text().splitlines():
        if line.startswith("VM00 Control Program"):
            words = line.split(":", 1)[1].split()
            return "zvm" if words and words[0] == "z/VM" else "kvm"
    return "none"


def systemd_detect_vm(root: Path) -> str:
    facts = sidecar_facts(root)
    arch = machine(facts)
    hyperv = other = False
    dmi = _detect_vm_dmi(root, arch)
    if dmi in ("oracle", "xen", "amazon", "parallels", "google"):
        return dmi
    cpuinfo = root / "proc/cpuinfo"
    for line in (cpuinfo.read_text().splitlines() if cpuinfo.exists() else []):
        if line.startswith("vendor_id\t: "):
            if line[len("vendor_id\t: "):].startswith("User Mode Linux"):
                return "uml"
            break
    dom0 = False
    if (root / "proc/xen").exists():
        dom0 = _xen_dom0(root)
        if not dom0:
            return "xen"

    def finish(v: str) -> str:
        if v == "none":
            return "microsoft" if hyperv else "vm-other" if other else "none"
        return v
    v = _detect_vm_cpuid(facts, arch)
    if v == "microsoft":
        hyperv = True
    elif v == "vm-other":
        other = True
    elif v != "none":
        return v
    if dom0:
        return finish(v)
    if dmi == "vm-other":
        other = True
    elif dmi != "none":
        return dmi
    hv = _line(root, "sys/hypervisor/type")
    if hv is not None:
        if hv == "xen":
            return "xen"
        other = True
    v = _detect_vm_device_tree(root, arch)
    if v == "vm-other":
        other = True
    elif v != "none":
        return v
    return finish(_detect_vm_zvm(root, arch))


def _container_files(root: Path) -> str:
    if (root / "run/.containerenv").exists():
        return "podman"
    return "docker" if (root / ".dockerenv").exists() else "none"


def _translate(root: Path, name: str) -> str:
    if name == "oci":
        found = _container_files(root)
        return "container-other" if found == "none" else found
    return name if name in _CONTAINERS else "container-other"


def systemd_detect_container(root: Path) -> str:
    facts = sidecar_facts(root)
    if (root / "proc/vz").exists() and not (root / "proc/bc").exists():
        return "openvz"
    release = _line(root, "proc/sys/kernel/osrelease") or ""
    if "Microsoft" in release or "WSL" in release:
        return "wsl"
    status = root / "proc/self/status"
    for line in (status.read_text().splitlines() if status.exists() else []):
        if line.startswith("TracerPid:") and line.split()[1] != "0":
            comm = _line(root, f"proc/{line.split()[1]}/comm") or ""
            if comm.startswith("proot"):
                return "proot"
    for rel in ("run/host/container-manager", "run/systemd/container"):
        value = _line(root, rel)
        if value:
            return _translate(root, value)
    env1 = facts.get("env1", {}).get("container")
    environ = root / "proc/1/environ"
    if env1 is None and environ.exists():
        env1 = next((item[len(b"container="):].decode() for item in environ.read_bytes().split(b"\0")
                     if item.startswith(b"container=")), None)
    if isinstance(env1, str) and env1:
        return _translate(root, env1)
    return _container_files(root)
