"""Inspector against the reference tools on every virt fixture root: virt-what (run for real with
--test-root) and systemd-detect-virt's logic (transcribed in virt_reference.py). Wherever a tool
names a virtualization, Inspector's answer equals it or refines it; the few places where it
disagrees on purpose are listed below with the reason, and must still disagree (so the list
cannot go stale). virt-what comes from the virt-what package (apt install virt-what)."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from conftest import fixture_root
from inspector.discover import virt
from inspector.roots.host import HostRoot
from virt_layers import layer_of
from virt_reference import (
    prepare_for_virt_what,
    run_virt_what,
    systemd_detect_container,
    systemd_detect_vm,
)

ROOTS = sorted(p.name for p in fixture_root("virt-01-baremetal-dell").parent.iterdir()
               if p.name.startswith("virt-"))


def vms(s: virt.VirtSection) -> list[virt.Layer]:
    return [layer for layer in s.vm_layers if layer.present]


def vm_is(*verdicts: str, flavor: str | None = None, mode: tuple[str, ...] = ()):
    return lambda s: any(layer.verdict in verdicts and (flavor is None or layer.flavor == flavor)
                         and (not mode or layer.guest_mode in mode) for layer in vms(s))


def container_is(*verdicts: str, flavor: str | None = None):
    return lambda s: layer_of(s, "container").verdict in verdicts and \
        (flavor is None or layer_of(s, "container").flavor == flavor)


def role_is(role: str):
    return lambda s: any(r.role == role for r in s.roles)


def flavor_is(*flavors: str):
    return lambda s: any(layer.flavor in flavors for layer in s.layers)


# What each reference answer means in Inspector's terms; "refines" is built in: qemu is
# satisfied by kvm (QEMU accelerated by KVM), bochs by qemu (SeaBIOS's vendor string under QEMU),
# lkvm by kvm (kvmtool), amazon by kvm or xen with the aws flavor.
VIRT_WHAT = {
    "kvm": vm_is("kvm"), "qemu": vm_is("qemu", "kvm"), "lkvm": vm_is("kvm", flavor="kvmtool"),
    "xen": vm_is("xen"), "xen-hvm": vm_is("xen", mode=("HVM", "PVHVM")),
    "xen-domU": vm_is("xen"), "xen-dom0": role_is("xen-host"), "aws": flavor_is("aws", "aws-metal"),
    "vmware": vm_is("vmware"), "hyperv": vm_is("hyperv"), "virtualpc": vm_is("hyperv"),
    "virtualbox": vm_is("virtualbox"), "bhyve": vm_is("bhyve"), "parallels": vm_is("parallels"),
    "uml": vm_is("uml"), "vmm": vm_is("openbsd-vmm"),
    "google_cloud": vm_is("kvm", flavor="gce"), "alibaba_cloud": vm_is("kvm", flavor="alibaba"),
    "redhat": vm_is("kvm", flavor="redhat"),
    "openvz": container_is("openvz"), "lxc": container_is("lxc"), "docker": container_is("docker"),
    "podman": container_is("podman"),
    "linux_vserver": lambda s: container_is("linux-vserver")(s) or role_is("vserver-host")(s),
    "linux_vserver-guest": container_is("linux-vserver"),
    "linux_vserver-host": role_is("vserver-host"),
    "ibm_systemz": lambda s: layer_of(s, "hardware").flavor == "lpar" or vm_is("zvm", "kvm")(s),
    "ibm_systemz-zvm": vm_is("zvm"), "ibm_systemz-kvm": vm_is("kvm"),
    "ibm_systemz-lpar": lambda s: layer_of(s, "hardware").flavor == "lpar",
    "ibm_power-lpar_shared": vm_is("powervm", mode=("shared LPAR",)),
    "ibm_power-lpar_dedicated": vm_is("powervm", mode=("dedicated LPAR",)),
    "ibm_power-kvm": vm_is("kvm", "qemu"),
}
SYSTEMD_VM = {
    "kvm": vm_is("kvm"), "qemu": vm_is("qemu", "kvm"), "bochs": vm_is("qemu", "bochs"),
    "amazon": lambda s: any(layer.flavor == "aws" for layer in vms(s)), "xen": vm_is("xen"),
    "uml": vm_is("uml"), "vmware": vm_is("vmware"), "oracle": vm_is("virtualbox"),
    "microsoft": vm_is("hyperv"), "zvm": vm_is("zvm"), "parallels": vm_is("parallels"),
    "bhyve": vm_is("bhyve"), "qnx": vm_is("qnx"), "acrn": vm_is("acrn"),
    "powervm": vm_is("powervm"), "apple": vm_is("apple"), "sre": vm_is("sre"),
    "google": vm_is("kvm", flavor="gce"), "vm-other": lambda s: bool(vms(s)),
}
SYSTEMD_CONTAINER = {name: container_is(name) for name in (
    "docker", "podman", "lxc", "systemd-nspawn", "openvz", "wsl", "proot", "rkt", "pouch")}
SYSTEMD_CONTAINER["lxc-libvirt"] = container_is("lxc")
SYSTEMD_CONTAINER["container-other"] = lambda s: layer_of(s, "container").present

# (root, tool, answer): why Inspector answers otherwise.
DISAGREE = {
    ("virt-06-oracle-physical", "systemd", "oracle"):
        "no CPUID hypervisor bit: an Oracle server's DMI, not VirtualBox (systemd #21100)",
    ("virt-13-xen-dom0", "systemd", "xen"): "dom0 is the Xen host: a xen-host role, not a guest",
    ("virt-13-xen-dom0", "virt-what", "xen"): "dom0 is the Xen host: a xen-host role, not a guest",
    ("virt-13-xen-dom0", "virt-what", "xen-hvm"): "dom0 is a PV control domain, not an HVM guest",
    ("virt-18-stray-dockerenv", "systemd", "docker"):
        "a /.dockerenv left in the image on the host's PID namespace and cgroups",
    ("virt-18-stray-dockerenv", "virt-what", "docker"):
        "a /.dockerenv left in the image on the host's PID namespace and cgroups",
    ("virt-26-virtualbox", "virt-what", "kvm"):
        "VirtualBox presents KVM's paravirtual CPUID interface; DMI names the product",
    ("virt-32-hyperv-root", "systemd", "microsoft"):
        "the Hyper-V root partition (CpuManagement privilege) is the host: a hyperv-root role",
    ("virt-32-hyperv-root", "virt-what", "hyperv"):
        "the Hyper-V root partition (CpuManagement privilege) is the host: a hyperv-root role",
}


def check(name: str, tool: str, answer: str, table: dict, section) -> str | None:
    """None when Inspector equals or refines `answer`; else what went wrong."""
    assert answer in table, f"{tool} answer {answer!r} on {name} has no meaning in the table"
    agrees = table[answer](section)
    if (name, tool, answer) in DISAGREE:
        return None if not agrees else f"{name}: listed as a disagreement with {tool} " \
            f"{answer!r} but Inspector now agrees"
    return None if agrees else f"{name}: {tool} says {answer!r}, Inspector {section.summary!r}"


@pytest.fixture(scope="module")
def virt_what():
    assert shutil.which("virt-what"), "virt-what is not installed (apt install virt-what)"
    return run_virt_what


@pytest.mark.parametrize("name", ROOTS)
def test_agrees_with_virt_what(name, tmp_path, virt_what):
    root = tmp_path / name
    shutil.copytree(fixture_root(name), root, symlinks=True)
    prepare_for_virt_what(root)
    facts = virt_what(root)
    section = virt.collect(HostRoot(str(fixture_root(name))))
    problems = [p for fact in facts if (p := check(name, "virt-what", fact, VIRT_WHAT, section))]
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("name", ROOTS)
def test_agrees_with_systemd_detect_virt(name):
    root = Path(fixture_root(name))
    section = virt.collect(HostRoot(str(root)))
    problems = []
    vm, container = systemd_detect_vm(root), systemd_detect_container(root)
    if vm != "none":
        problems.append(check(name, "systemd", vm, SYSTEMD_VM, section))
    if container != "none":
        problems.append(check(name, "systemd", container, SYSTEMD_CONTAINER, section))
    stated = [p for p in problems if p]
    assert not stated, "\n".join(stated)


def test_every_verdict_has_evidence_and_low_confidence_is_thin():
    """Where a reference tool names something, Inspector says why; 'low' only when thin: no
    evidence of strong or medium weight supports the layer's verdict."""
    for name in ROOTS:
        section = virt.collect(HostRoot(str(fixture_root(name))))
        for layer in vms(section) + [layer_of(section, "container")]:
            if not layer.present:
                continue
            assert layer.evidence, f"{name}: {layer.label()} without evidence"
            weighty = [e for e in layer.evidence if e.weight in ("strong", "medium")]
            if layer.confidence == "low":
                assert not weighty, f"{name}: {layer.label()} low with {weighty}"
            else:
                assert weighty, f"{name}: {layer.label()} {layer.confidence} on weak evidence only"


def test_the_transcription_reads_what_systemd_reads():
    """Spot checks of the systemd transcription on cases whose answer its code makes plain."""
    root = lambda n: Path(fixture_root(n))  # noqa: E731
    assert systemd_detect_vm(root("virt-03-kvm-hyperv-enlightenments")) == "qemu"  # first block only
    assert systemd_detect_vm(root("virt-40-qemu-tcg-old-bochs")) == "bochs"
    assert systemd_detect_vm(root("virt-46-ppc64le-powervm-shared")) == "powervm"
    assert systemd_detect_vm(root("virt-60-openbsd-vmm")) == "vm-other"
    assert systemd_detect_container(root("virt-52-container-manager-script")) == "container-other"
    assert systemd_detect_container(root("virt-18-stray-dockerenv")) == "docker"
