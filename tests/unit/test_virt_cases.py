"""Virtualization layers on the fixture roots: one case per kind of machine, and more.

Each row: root, container (verdict, flavor), VM layers innermost first as (verdict, flavor, guest
mode), host roles, hardware flavor, summary line. Roots are built by
tests/fixtures/build_virt_roots.py from real file layouts and CPUID leaves."""
import json

import pytest

from conftest import fixture_root, run_cli
from inspector.discover import virt
from inspector.discover.virt import IGNORED, SUSPECT
from inspector.health import virt as virt_rules
from inspector.roots.host import HostRoot
from virt_layers import layer_of, virt_report

NONE = ("none", None)
VM_NONE = [("none", None, None)]

CASES = [
    # root                                 container              vm layers                                  roles            hardware     summary
    ("virt-01-baremetal-dell",             NONE, VM_NONE, [], None, "hardware"),
    ("virt-02-kvm-qemu",                   NONE, [("kvm", None, None)], [], None, "kvm > hardware"),
    ("virt-03-kvm-hyperv-enlightenments",  NONE, [("kvm", None, None)], [], None, "kvm > hardware"),
    ("virt-04-azure",                      NONE, [("hyperv", "azure", None)], [], None, "hyperv (azure) > hardware"),
    ("virt-05-surface-laptop",             NONE, VM_NONE, [], None, "hardware"),
    ("virt-06-oracle-physical",            NONE, VM_NONE, [], None, "hardware"),
    ("virt-07-ec2-nitro",                  NONE, [("kvm", "aws", None)], [], None, "kvm (aws) > hardware"),
    ("virt-08-ec2-metal",                  NONE, VM_NONE, [], "aws-metal", "hardware (aws-metal)"),
    ("virt-09-graviton",                   NONE, [("kvm", "aws", None)], [], None, "kvm (aws) > hardware"),
    ("virt-10-aws-xen-hvm",                NONE, [("xen", "aws", "PVHVM")], [], None, "xen (PVHVM, aws) > hardware"),
    ("virt-11-xenserver-hvm-viridian",     NONE, [("xen", "xenserver", "PVHVM")], [], None, "xen (PVHVM, xenserver) > hardware"),
    ("virt-12-xenserver-pv-amd",           NONE, [("xen", "plain", "PV")], [], None, "xen (PV, plain) > hardware"),
    ("virt-13-xen-dom0",                   NONE, VM_NONE, ["xen-host"], None, "hardware"),
    ("virt-14-xen-pvh",                    NONE, [("xen", "plain", "PVH")], [], None, "xen (PVH, plain) > hardware"),
    ("virt-15-gce",                        NONE, [("kvm", "gce", None)], [], None, "kvm (gce) > hardware"),
    ("virt-16-firecracker",                NONE, [("kvm", "firecracker", None)], [], None, "kvm (firecracker) > hardware"),
    ("virt-17-docker-in-kvm-cgroup2",      ("docker", None), [("kvm", None, None)], [], None, "docker > kvm > hardware"),
    ("virt-18-stray-dockerenv",            NONE, [("kvm", "firecracker", None)], [], None, "kvm (firecracker) > hardware"),
    ("virt-19-lxc-baremetal",              ("lxc", None), VM_NONE, [], None, "lxc > hardware"),
    ("virt-20-podman-rootless",            ("podman", "rootless"), [("kvm", None, None)], [], None, "podman (rootless) > kvm > hardware"),
    ("virt-21-wsl2",                       ("wsl", "wsl2"), [("hyperv", None, None)], [], None, "wsl (wsl2) > hyperv > hardware"),
    ("virt-22-openvz-guest",               ("openvz", None), VM_NONE, [], None, "openvz > hardware"),
    ("virt-22-openvz-host",                NONE, VM_NONE, ["openvz-host"], None, "hardware"),
    ("virt-23-nested-kvm-in-vmware",       NONE, [("vmware", None, None)], ["kvm-host"], None, "vmware > hardware"),
    ("virt-24-uml-in-kvm",                 NONE, [("uml", None, None), ("kvm", None, None)], [], None, "uml > kvm > hardware"),
    ("virt-25-xen-pv-in-vmware",           NONE, [("xen", "plain", "PV"), ("vmware", None, None)], [], None, "xen (PV, plain) > vmware > hardware"),
    ("virt-26-virtualbox",                 NONE, [("virtualbox", None, None)], [], None, "virtualbox > hardware"),
    ("virt-27-bhyve",                      NONE, [("bhyve", None, None)], [], None, "bhyve > hardware"),
    ("virt-28-qemu-tcg",                   NONE, [("qemu", "tcg", None)], [], None, "qemu (tcg) > hardware"),
    ("virt-29-nspawn-in-kvm",              ("systemd-nspawn", None), [("kvm", None, None)], [], None, "systemd-nspawn > kvm > hardware"),
    ("virt-30-kubernetes-on-ec2",          ("kubernetes", None), [("kvm", "aws", None)], [], None, "kubernetes > kvm (aws) > hardware"),
    ("virt-31-xen-hvm-no-pv-drivers",      NONE, [("xen", "plain", "HVM")], [], None, "xen (HVM, plain) > hardware"),
    ("virt-32-hyperv-root",                NONE, VM_NONE, ["hyperv-root"], None, "hardware"),
    ("virt-33-docker-cgroup1-baremetal",   ("docker", None), VM_NONE, [], None, "docker > hardware"),
    ("virt-34-vmware",                     NONE, [("vmware", None, None)], [], None, "vmware > hardware"),
    ("virt-35-no-cpuid-cpuinfo-flag",      NONE, [("kvm", None, None)], [], None, "kvm > hardware"),
    ("virt-36-firecracker-unprivileged",   NONE, [("kvm", "firecracker", None)], [], None, "kvm (firecracker) > hardware"),
    ("virt-37-azure-confidential-snp",     NONE, [("hyperv", "azure", None)], [], None, "hyperv (azure, AMD SEV-SNP) > hardware"),
    # The shared machine roots (block and network files come from other collectors' fixtures).
    ("xen-pv-guest",                       NONE, [("xen", "plain", "PV")], [], None, "xen (PV, plain) > hardware"),
    ("xenserver-hvm",                      NONE, [("xen", "xenserver", "PVHVM")], [], None, "xen (PVHVM, xenserver) > hardware"),
    ("kvm-virtio-guest",                   NONE, [("kvm", None, None)], [], None, "kvm > hardware"),
    ("nvme-bare-metal",                    NONE, VM_NONE, ["kvm-host"], None, "hardware"),
    # Beyond modern x86 (issue 15): each class of evidence the first cases did not read.
    ("virt-38-aws-xen-hvm-no-xen-sysfs",   NONE, [("xen", "aws", "HVM")], [], None, "xen (HVM, aws) > hardware"),
    ("virt-39-xen3-hvm-no-hypervisor-bit", NONE, [("xen", "plain", "HVM")], [], None, "xen (HVM, plain) > hardware"),
    ("virt-40-qemu-tcg-old-bochs",         NONE, [("qemu", "tcg", None)], [], None, "qemu (tcg) > hardware"),
    ("virt-41-arm64-qemu-fw-cfg",          NONE, [("qemu", None, None)], [], None, "qemu > hardware"),
    ("virt-42-arm64-kvmtool",              NONE, [("kvm", "kvmtool", None)], [], None, "kvm (kvmtool) > hardware"),
    ("virt-43-arm64-vmware-dt",            NONE, [("vmware", None, None)], [], None, "vmware > hardware"),
    ("virt-44-arm64-alibaba-ecs",          NONE, [("kvm", "alibaba", None)], [], None, "kvm (alibaba) > hardware"),
    ("virt-45-arm64-qemu-kvm-uefi",        NONE, [("kvm", None, None)], [], None, "kvm > hardware"),
    ("virt-46-ppc64le-powervm-shared",     NONE, [("powervm", None, "shared LPAR")], [], None, "powervm (shared LPAR) > hardware"),
    ("virt-47-ppc64le-powervm-dedicated",  NONE, [("powervm", None, "dedicated LPAR")], [], None, "powervm (dedicated LPAR) > hardware"),
    ("virt-48-ppc64le-kvm",                NONE, [("kvm", None, None)], [], None, "kvm > hardware"),
    ("virt-49-s390x-zvm",                  NONE, [("zvm", None, None)], [], "lpar", "zvm > hardware (lpar)"),
    ("virt-50-s390x-kvm",                  NONE, [("kvm", None, None)], [], "lpar", "kvm > hardware (lpar)"),
    ("virt-51-s390x-lpar",                 NONE, VM_NONE, [], "lpar", "hardware (lpar)"),
    ("virt-52-container-manager-script",   ("container-other", None), [("kvm", None, None)], [], None, "container-other > kvm > hardware"),
    ("virt-53-nspawn-pid1-environ",        ("systemd-nspawn", None), [("kvm", None, None)], [], None, "systemd-nspawn > kvm > hardware"),
    ("virt-54-linux-vserver-guest",        ("linux-vserver", None), VM_NONE, [], None, "linux-vserver > hardware"),
    ("virt-55-kubernetes-crio",            ("kubernetes", "cri-o"), [("kvm", None, None)], [], None, "kubernetes (cri-o) > kvm > hardware"),
    ("virt-56-kubernetes-containerd",      ("kubernetes", "containerd"), [("kvm", None, None)], [], None, "kubernetes (containerd) > kvm > hardware"),
    ("virt-57-empty-cpuinfo",              NONE, VM_NONE, [], None, "hardware"),
    ("virt-58-kvm-rhel5-dmidecode",        NONE, [("kvm", "redhat", None)], [], None, "kvm (redhat) > hardware"),
    ("virt-59-vmware-phoenix-vm-bit-0",    NONE, [("vmware", None, None)], [], None, "vmware > hardware"),
    ("virt-60-openbsd-vmm",                NONE, [("openbsd-vmm", None, None)], [], None, "openbsd-vmm > hardware"),
    ("virt-61-parallels-desktop",          NONE, [("parallels", None, None)], [], None, "parallels > hardware"),
]


def collect(name: str) -> virt.VirtSection:
    return virt.collect(HostRoot(str(fixture_root(name))))


@pytest.mark.parametrize("name,container,vms,roles,hw_flavor,summary", CASES, ids=[c[0] for c in CASES])
def test_layers(name, container, vms, roles, hw_flavor, summary):
    section = collect(name)
    kinds = [layer.kind for layer in section.layers]
    assert kinds[0] == "container" and kinds[-1] == "hardware"
    c = layer_of(section, "container")
    assert (c.verdict, c.flavor) == container
    assert [(layer.verdict, layer.flavor, layer.guest_mode) for layer in section.vm_layers] == vms
    assert [r.role for r in section.roles] == roles
    assert layer_of(section, "hardware").flavor == hw_flavor
    assert section.summary == summary
    for layer in section.layers:
        assert layer.confidence in ("high", "medium", "low")
        if layer.present and layer.kind != "hardware":
            assert layer.evidence, f"{layer.kind} {layer.verdict} without evidence"
        for e in layer.evidence:
            if e.weight in (SUSPECT, IGNORED):
                assert e.note, f"{e.source} {e.weight} without a reason"


def test_enough_machine_kinds_first_studied():
    numbered = {c[0].split("-")[1] for c in CASES if c[0].startswith("virt-")}
    assert len({n for n in numbered if int(n) <= 25}) >= 20


def test_stray_dockerenv_is_suspect_with_reason():
    c = layer_of(collect("virt-18-stray-dockerenv"), "container")
    marker = next(e for e in c.evidence if e.source == "/.dockerenv")
    assert marker.weight == SUSPECT and "initial" in marker.note
    # the same file inside a real container namespace counts
    d = layer_of(collect("virt-17-docker-in-kvm-cgroup2"), "container")
    assert next(e for e in d.evidence if e.source == "/.dockerenv").weight != SUSPECT
    assert any(e.source == "/proc/self/mountinfo" and "/docker/containers/" in e.value
               for e in d.evidence)


def test_dmi_without_hypervisor_bit_is_ignored():
    for name in ("virt-05-surface-laptop", "virt-06-oracle-physical"):
        vm = collect(name).vm_layers[0]
        dmi = [e for e in vm.evidence if e.source.startswith("/sys/class/dmi/id/")]
        assert dmi and all(e.weight == IGNORED and "hypervisor bit" in e.note for e in dmi)


def test_hyperv_enlightenments_do_not_hide_kvm():
    section = collect("virt-03-kvm-hyperv-enlightenments")
    assert section.cpuid.blocks == ["0x40000000 Microsoft Hv (microsoft)",
                                    "0x40000100 KVMKVMKVM (kvm)"]
    assert section.vm_layers[0].verdict == "kvm"


def test_no_cpuid_falls_back_to_cpuinfo_flag():
    vm = collect("virt-35-no-cpuid-cpuinfo-flag").vm_layers[0]
    flag = next(e for e in vm.evidence if e.source == "/proc/cpuinfo flags")
    assert flag.value == "hypervisor" and "Permission denied" in flag.note


def findings(name: str):
    report = virt_report(collect(name))
    return {f.code: f for f in virt_rules.rules(report)}


def test_findings():
    assert "virt.xen_hvm_no_pv_drivers" in findings("virt-31-xen-hvm-no-pv-drivers")
    assert "virt.xen_hvm_no_pv_drivers" not in findings("virt-11-xenserver-hvm-viridian")
    stray = findings("virt-18-stray-dockerenv")["virt.stray_container_marker"]
    assert "/.dockerenv" in stray.message
    assert findings("virt-02-kvm-qemu") == {}          # a plain guest is information, not a finding


def test_report_json_and_text_on_a_root():
    res = run_cli("report", "--json", "--section", "virt", "--root",
                  str(fixture_root("virt-11-xenserver-hvm-viridian")))
    assert res.status == 0, res.err
    section = json.loads(res.out)["sections"]["virt"]
    assert section["summary"] == "xen (PVHVM, xenserver) > hardware"
    text = run_cli("report", "--section", "virt", "--root", str(fixture_root("virt-17-docker-in-kvm-cgroup2")))
    assert text.status == 0 and "docker > kvm > hardware" in text.out
    assert "/proc/self/ns/pid" in text.out


def test_conflicting_container_signals_warn(tmp_path):
    import shutil
    root = tmp_path / "root"
    shutil.copytree(fixture_root("virt-33-docker-cgroup1-baremetal"), root, symlinks=True)
    (root / "run/systemd").mkdir(parents=True)
    (root / "run/systemd/container").write_text("lxc\n")
    section = virt.collect(HostRoot(str(root)))
    assert layer_of(section, "container").present and layer_of(section, "container").confidence != "high"
    report = virt_report(section)
    codes = [f.code for f in virt_rules.rules(report)]
    assert "virt.container_conflict" in codes
    assert any("disagree" in c for c in section.conflicts)


def test_proot_is_seen_through_its_tracer(tmp_path):
    import shutil
    root = tmp_path / "root"
    shutil.copytree(fixture_root("virt-01-baremetal-dell"), root, symlinks=True)
    (root / "proc/self/status").write_text("Name:\tbash\nState:\tS (sleeping)\nTracerPid:\t4242\n")
    (root / "proc/4242").mkdir()
    (root / "proc/4242/comm").write_text("proot\n")
    assert layer_of(virt.collect(HostRoot(str(root))), "container").verdict == "proot"
    (root / "proc/4242/comm").write_text("gdb\n")                  # a debugger is not a container
    assert layer_of(virt.collect(HostRoot(str(root))), "container").verdict == "none"


def test_dmi_only_guess_is_low_confidence_and_says_so(tmp_path):
    import shutil
    root = tmp_path / "root"
    shutil.copytree(fixture_root("virt-35-no-cpuid-cpuinfo-flag"), root, symlinks=True)
    (root / "proc/cpuinfo").unlink()                 # no CPUID and no cpuinfo flag: DMI alone
    section = virt.collect(HostRoot(str(root)))
    vm = section.vm_layers[0]
    assert vm.verdict == "kvm" and vm.confidence == "low"
    report = virt_report(section)
    assert "virt.low_confidence" in [f.code for f in virt_rules.rules(report)]
