"""VM layers from platform interfaces other than x86 CPUID: s390x's STSI report (/proc/sysinfo),
POWER's LPAR configuration (/proc/powerpc/lparcfg) and device tree, and the device tree of arm64
and RISC-V guests."""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from inspector.discover.virt.model import INFO, MEDIUM, STRONG, Evidence, Layer
from inspector.discover.virt.signals import Signals


def _squeeze(text: str) -> str:
    return " ".join(text.split())


def is_s390(sig: Signals) -> bool:
    return sig.arch.startswith("s390") or (sig.cpu_vendor or "").startswith("IBM/S390")


def s390_layers(sig: Signals) -> tuple[list[Layer], Layer] | None:
    """z/VM and KVM guests from /proc/sysinfo, which arch/s390/kernel/sysinfo.c fills from STSI:
    one "VMnn" block per hypervisor level (3.2.2; VM00 is the one this system runs in) after the
    logical partition (2.2.2). Every s390x Linux runs in a PR/SM logical partition, the
    machine's firmware hypervisor: it is the hardware layer's flavor ("lpar"), as
    systemd-detect-virt reports no virtualization there and virt-what ibm_systemz-lpar."""
    if not is_s390(sig):
        return None
    hardware = Layer("hardware", "hardware", confidence="high")
    info = sig.sysinfo
    if info is None:
        return [Layer("vm", "none", confidence="low", evidence=[Evidence(
            "/proc/sysinfo", "not readable", "unknown", INFO,
            "s390x names its hypervisors (z/VM, KVM) only there")])], hardware
    layers = []
    levels = sorted({key[:4] for key in info if re.fullmatch(r"VM\d\d Control Program", key)})
    for level in levels:
        program = _squeeze(info.get(f"{level} Control Program", ""))
        technology = "zvm" if program.startswith("z/VM") else \
            "kvm" if program.startswith("KVM") else "vm-other"
        name = _squeeze(info.get(f"{level} Name", ""))
        layers.append(Layer("vm", technology, confidence="high", evidence=[Evidence(
            f"/proc/sysinfo {level} Control Program", program, technology, STRONG,
            ("the hypervisor this system runs in" if level == "VM00" else
             f"hypervisor level {int(level[2:])}, below VM00") +
            (f"; guest name {name}" if name else ""))]))
    if not layers:
        layers.append(Layer("vm", "none", confidence="high", evidence=[Evidence(
            "/proc/sysinfo", "no VMnn Control Program lines", "none", STRONG,
            "STSI lists every hypervisor level (z/VM, KVM) a guest runs under")]))
    if "LPAR Name" in info or "LPAR Number" in info:
        hardware.flavor = "lpar"
        detail = ", ".join(x for x in (
            f"number {info['LPAR Number']}" if info.get("LPAR Number") else "",
            _squeeze(info.get("LPAR Characteristics", "")).lower()) if x)
        machine = " ".join(x for x in (info.get("Manufacturer", ""), info.get("Type", "")) if x)
        hardware.evidence.append(Evidence(
            "/proc/sysinfo LPAR Name", _squeeze(info.get("LPAR Name", "")) +
            (f" ({detail})" if detail else ""), "lpar", STRONG,
            f"a PR/SM logical partition of {machine or 'an IBM Z'}: the firmware hypervisor "
            "every s390x system runs under"))
    return layers, hardware


def is_power(sig: Signals) -> bool:
    return sig.arch.startswith("ppc") or "platform" in sig.cpuinfo


def power_layer(sig: Signals) -> Layer | None:
    """PowerVM LPARs, KVM guests and QEMU (TCG) guests on POWER; None off POWER or when
    nothing POWER-specific is readable.

    A PAPR guest ("platform: pSeries") is an LPAR of PowerVM or a pseries guest of QEMU, which
    calls the machine "IBM pSeries (emulated by qemu)" (cpuinfo model, lparcfg system_type)
    and adds a /hypervisor node compatible with "linux,kvm" only under KVM. PowerVM's LPARs
    shares processors or dedicates them: lparcfg's shared_processor_mode, written by
    arch/powerpc/platforms/pseries/lparcfg.c."""
    if not is_power(sig):
        return None
    dt, lpar = sig.devicetree, sig.lparcfg or {}
    platform = sig.cpuinfo.get("platform", "")
    model = sig.cpuinfo.get("model", "") or sig.cpuinfo.get("machine", "")
    system_type = lpar.get("system_type", "")
    emulated = [(src, value) for src, value in (("/proc/cpuinfo model", model),
                                                ("/proc/powerpc/lparcfg system_type", system_type))
                if "emulated by qemu" in value]
    ev: list[Evidence] = []
    if dt.hypervisor and "linux,kvm" in dt.hypervisor:
        ev.append(Evidence("/proc/device-tree/hypervisor/compatible", dt.hypervisor, "kvm", STRONG,
                           "QEMU adds this node to a pseries guest only under KVM"))
        ev += [Evidence(src, value, "kvm", MEDIUM) for src, value in emulated]
        return Layer("vm", "kvm", confidence="high", evidence=ev)
    if "qemu,pseries" in dt.compatible:
        ev.append(Evidence("/proc/device-tree/compatible", ", ".join(dt.compatible), "qemu", STRONG,
                           "QEMU's pseries machine"))
        ev.append(Evidence("/proc/device-tree/hypervisor", "not present", "tcg", MEDIUM,
                           "QEMU adds a linux,kvm hypervisor node under KVM only: QEMU's own CPU "
                           "emulation (TCG)"))
        return Layer("vm", "qemu", flavor="tcg", confidence="high", evidence=ev)
    if emulated:
        ev += [Evidence(src, value, "kvm", MEDIUM) for src, value in emulated]
        ev.append(Evidence("/proc/device-tree", "not readable", "kvm", INFO,
                           "QEMU emulates the pSeries machine; KVM (the usual accelerator) cannot "
                           "be told from TCG without the device tree's hypervisor node"))
        return Layer("vm", "kvm", confidence="medium", evidence=ev)
    powervm_dt = dt.partition_name is not None and dt.hmc_managed and not dt.qemu_graphic
    if platform == "pSeries" or lpar or powervm_dt:
        if platform:
            ev.append(Evidence("/proc/cpuinfo platform", platform, "powervm", MEDIUM,
                               "a PAPR logical partition, and not QEMU's (its model would say "
                               "'emulated by qemu')"))
        if system_type:
            ev.append(Evidence("/proc/powerpc/lparcfg system_type", system_type, "powervm", STRONG,
                               f"partition {lpar.get('partition_id', '?')}"))
        if dt.partition_name is not None:
            ev.append(Evidence("/proc/device-tree/ibm,partition-name", dt.partition_name, "powervm",
                               STRONG if dt.hmc_managed else MEDIUM,
                               "managed by an HMC (hmc-managed?)" if dt.hmc_managed else ""))
        mode = {"1": "shared LPAR", "0": "dedicated LPAR"}.get(lpar.get("shared_processor_mode", ""))
        if mode:
            ev.append(Evidence("/proc/powerpc/lparcfg shared_processor_mode",
                               lpar["shared_processor_mode"], mode, STRONG,
                               "processors " + ("shared with other partitions from a pool"
                                                if mode.startswith("shared") else
                                                "dedicated to this partition")))
        confident = bool(system_type) or powervm_dt
        return Layer("vm", "powervm", guest_mode=mode, confidence="high" if confident else "medium",
                     evidence=ev)
    if platform == "PowerNV":
        return Layer("vm", "none", confidence="high", evidence=[Evidence(
            "/proc/cpuinfo platform", platform, "none", STRONG,
            "OPAL firmware without a hypervisor below: bare metal (KVM hosts run here)")])
    return None


@dataclass
class TreeHint:
    """What a device tree says about the hypervisor, for the VM decision."""
    technology: str
    flavor: str | None
    strong: bool                     # names the hypervisor outright
    evidence: list[Evidence] = field(default_factory=list)


def devicetree_hint(sig: Signals) -> TreeHint | None:
    """arm64 and RISC-V guests booted with a device tree (Xen's node is read with Xen)."""
    dt = sig.devicetree
    if not dt.present:
        return None
    src = "/proc/device-tree/hypervisor/compatible"
    if dt.hypervisor and not dt.hypervisor.startswith("xen"):
        technology = "vmware" if "vmware" in dt.hypervisor else \
            "kvm" if "linux,kvm" in dt.hypervisor else "vm-other"
        return TreeHint(technology, None, True, [Evidence(src, dt.hypervisor, technology, STRONG)])
    if dt.fw_cfg:
        return TreeHint("qemu", None, True, [Evidence(
            "/proc/device-tree", " ".join(dt.fw_cfg), "qemu", STRONG,
            "QEMU's firmware configuration device: only QEMU creates it; whether KVM or TCG "
            "runs it is not in the tree")])
    if "linux,dummy-virt" in dt.compatible:
        return TreeHint("kvm", "kvmtool", False, [Evidence(
            "/proc/device-tree/compatible", ", ".join(dt.compatible), "kvmtool", MEDIUM,
            "the root of QEMU's and kvmtool's arm virt machines; without QEMU's fw-cfg node it is "
            "kvmtool (lkvm), which always runs on KVM")])
    return None
