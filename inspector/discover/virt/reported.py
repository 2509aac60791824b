"""What the host's own tools said about virtualization, as a sosreport keeps their outputs:
hostnamectl's "Virtualization:" line (systemd-detect-virt's answer), lscpu's "Hypervisor
vendor:" and the kernel's "Hypervisor detected:" line in dmesg.

They stand in for what a sosreport does not keep (CPUID, PID 1's environment, often DMI) and
are secondhand, so they weigh MEDIUM. systemd-detect-virt names the innermost layer only: a
container there hides the VM below, which lscpu and dmesg (CPUID seen by the kernel) still name.
Read only from trees captured elsewhere: live, the signals themselves are read."""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from inspector.discover.virt.model import MEDIUM, Evidence
from inspector.roots.host import HostRoot

# systemd-detect-virt --list: its container and VM identifiers, in Inspector's verdict names
SYSTEMD_CONTAINERS = {"lxc": "lxc", "lxc-libvirt": "lxc", "docker": "docker", "podman": "podman",
                      "rkt": "rkt", "systemd-nspawn": "systemd-nspawn", "openvz": "openvz",
                      "wsl": "wsl", "proot": "proot", "pouch": "pouch",
                      "container-other": "container-other"}
SYSTEMD_VMS = {"kvm": ("kvm", None), "amazon": ("kvm", "aws"), "google": ("kvm", "gce"),
               "qemu": ("qemu", None), "bochs": ("qemu", None), "xen": ("xen", None),
               "microsoft": ("hyperv", None), "vmware": ("vmware", None),
               "oracle": ("virtualbox", None), "parallels": ("parallels", None),
               "bhyve": ("bhyve", None), "zvm": ("zvm", None), "powervm": ("powervm", None),
               "uml": ("uml", None), "acrn": ("acrn", None), "qnx": ("qnx", None),
               "apple": ("apple", None), "sre": ("sre", None), "vm-other": ("vm-other", None)}
# lscpu's and the kernel's hypervisor vendor names (arch/x86/kernel/cpu/hypervisor.c)
_VENDORS = {"kvm": "kvm", "xen": "xen", "microsoft": "hyperv", "vmware": "vmware",
            "acrn": "acrn", "jailhouse": "jailhouse", "bhyve": "bhyve", "qnx": "qnx",
            "virtualbox": "virtualbox", "parallels": "parallels"}
_DETECTED = re.compile(r"Hypervisor detected: (\S+)")


@dataclass
class Reported:
    """Each tool's answer: (verdict, flavor, evidence)."""
    container: tuple[str, Evidence] | None = None       # hostnamectl names a container
    vms: list[tuple[str, str | None, Evidence]] = field(default_factory=list)
    no_virt: Evidence | None = None                      # hostnamectl: "none" or no such line


def _output(root: HostRoot, argv: list[str]) -> str | None:
    result = root.run(argv)
    return result.stdout if result.error is None and result.stdout.strip() else None


def gather_reported(root: HostRoot) -> Reported:
    out = Reported()
    if root.live:
        return out
    status = _output(root, ["hostnamectl", "status"])
    if status is not None:
        value = next((line.split(":", 1)[1].strip() for line in status.splitlines()
                      if line.strip().startswith("Virtualization:")), None)
        source = "hostnamectl status Virtualization"
        if value in SYSTEMD_CONTAINERS:
            out.container = (SYSTEMD_CONTAINERS[value], Evidence(
                source, value, SYSTEMD_CONTAINERS[value], MEDIUM,
                "systemd-detect-virt's answer as the host reported it; it names the innermost "
                "layer only (a VM below a container is not shown)"))
        elif value in SYSTEMD_VMS:
            verdict, flavor = SYSTEMD_VMS[value]
            out.vms.append((verdict, flavor, Evidence(
                source, value, verdict, MEDIUM, "systemd-detect-virt's answer as the host "
                "reported it: a VM, and no container (it would have named the container)")))
        elif status.strip() and value is None:
            out.no_virt = Evidence(source, "no Virtualization line", "none", MEDIUM,
                                   "hostnamectl prints it only when systemd detects a VM or "
                                   "container")
    lscpu = _output(root, ["lscpu"])
    if lscpu is not None:
        vendor = next((line.split(":", 1)[1].strip() for line in lscpu.splitlines()
                       if line.startswith("Hypervisor vendor:")), None)
        named = _VENDORS.get((vendor or "").lower())
        if named:
            out.vms.append((named, None, Evidence(
                "lscpu Hypervisor vendor", vendor or "", named, MEDIUM,
                "CPUID's hypervisor leaf as lscpu read it on the host")))
    dmesg = _output(root, ["dmesg"])
    match = _DETECTED.search(dmesg or "")
    if match and (detected := _VENDORS.get(match.group(1).lower())):
        out.vms.append((detected, None, Evidence(
            "dmesg", match.group(0), detected, MEDIUM,
            "the kernel's own hypervisor detection at boot")))
    return out
