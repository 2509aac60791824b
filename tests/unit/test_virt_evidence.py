"""The evidence behind the verdicts beyond modern x86 (issue 15): what each class of signal
says, how much it weighs and why, on the fixture roots and on variations of them made here."""
import json
import shutil

import pytest

from conftest import fixture_root, run_cli
from inspector.discover import virt
from inspector.discover.virt import IGNORED, INFO, MEDIUM, STRONG, WEAK
from inspector.discover.virt.firmware import parse_bios_information
from inspector.health import virt as virt_rules
from inspector.roots.host import HostRoot
from virt_layers import layer_of, virt_report


def collect(name_or_path) -> virt.VirtSection:
    path = fixture_root(name_or_path) if isinstance(name_or_path, str) else name_or_path
    return virt.collect(HostRoot(str(path)))


def evidence(layer, source_part: str):
    return [e for e in layer.evidence if source_part in e.source]


def copy_root(tmp_path, name: str):
    root = tmp_path / name
    shutil.copytree(fixture_root(name), root, symlinks=True)
    return root


def codes(section) -> list[str]:
    return [f.code for f in virt_rules.rules(virt_report(section))]


# --------------------------------------------------------------------------- Xen
def test_xen_hvm_from_cpuid_and_dmi_without_xen_sysfs():
    section = collect("virt-38-aws-xen-hvm-no-xen-sysfs")
    vm = section.vm_layers[0]
    mode = evidence(vm, "guest mode")[0]
    assert mode.points_to == "HVM" and mode.weight == MEDIUM and "PV guest runs CPUID" in mode.note
    aws = next(e for e in vm.evidence if e.points_to == "aws")
    assert aws.value == "4.11.amazon" and "virt-what" in aws.note
    assert evidence(vm, "/sys/hypervisor/type and /proc/xen")[0].value == "not present"
    # no PV drivers on a kernel without Xen support: the emulated-devices finding applies
    assert "virt.xen_hvm_no_pv_drivers" in codes(section)


def test_xen_leaves_count_with_the_hypervisor_bit_clear():
    vm = collect("virt-39-xen3-hvm-no-hypervisor-bit").vm_layers[0]
    block = evidence(vm, "cpuid 0x40000000")[0]
    assert block.weight == STRONG and "bit is clear" in block.note
    # the DMI strings came from dmidecode (RHEL 5: no /sys/class/dmi/id)
    assert vm.guest_mode == "HVM" and vm.confidence == "high"


def test_unknown_signature_with_the_bit_clear_is_ignored(tmp_path):
    root = copy_root(tmp_path, "virt-01-baremetal-dell")
    side = json.loads((root / "inspector-sidecar.json").read_text())
    side["facts"]["cpuid"].update({"scan": ["0x40000000"],
                                   "0x40000000": [0x40000001, 0x6C6C6548, 0x6F57206F, 0x00646C72]})
    (root / "inspector-sidecar.json").write_text(json.dumps(side))
    section = collect(root)
    vm = section.vm_layers[0]
    assert vm.verdict == "none" and vm.confidence == "high"
    ignored = evidence(vm, "cpuid 0x40000000")[0]
    assert ignored.weight == IGNORED and ignored.value == "Hello World"
    assert any("cpuid 0x40000000" in c for c in section.conflicts)


def xen_on_arm_root(tmp_path, guest_type: str | None):
    root = tmp_path / "xen-arm"
    shutil.copytree(fixture_root("virt-41-arm64-qemu-fw-cfg"), root, symlinks=True)
    dtb = root / "sys/firmware/devicetree/base"
    shutil.rmtree(dtb / "fw-cfg@9020000")
    (dtb / "compatible").write_bytes(b"xen,xenvm-4.17\0xen,xenvm\0")
    (dtb / "hypervisor").mkdir()
    (dtb / "hypervisor/compatible").write_bytes(b"xen,xen-4.17\0xen,xen\0")
    (root / "proc/xen").mkdir()
    (root / "proc/xen/capabilities").write_text("")
    (root / "sys/hypervisor").mkdir()
    (root / "sys/hypervisor/type").write_text("xen\n")
    if guest_type:
        (root / "sys/hypervisor/guest_type").write_text(guest_type + "\n")
    for name in ("vbd-51712", "vif-0"):
        (root / "sys/bus/xen/devices" / name).mkdir(parents=True)
    return root


@pytest.mark.parametrize("guest_type", [None, "HVM"])
def test_xen_on_arm_is_never_pv(tmp_path, guest_type):
    """No DMI, no CPUID: on x86 that read as PV; Arm has no PV guests (guest_type says HVM)."""
    section = collect(xen_on_arm_root(tmp_path, guest_type))
    vm = section.vm_layers[0]
    assert (vm.verdict, vm.guest_mode) == ("xen", "PVH")
    assert "never PV" in evidence(vm, "guest mode")[0].note
    assert "virt.xen_hvm_no_pv_drivers" not in codes(section)


# --------------------------------------------------------------------------- QEMU, firmware
def test_old_qemu_without_kvm_is_qemu_not_bochs():
    vm = collect("virt-40-qemu-tcg-old-bochs").vm_layers[0]
    assert (vm.verdict, vm.flavor, vm.confidence) == ("qemu", "tcg", "medium")
    assert "systemd-detect-virt says bochs" in evidence(vm, "DMI vs CPU model")[0].note
    assert evidence(vm, "QEMU accelerator")[0].points_to == "tcg"


def test_firmware_vm_bit_zero_is_weak_and_says_why():
    vm = collect("virt-59-vmware-phoenix-vm-bit-0").vm_layers[0]
    bit = evidence(vm, "0-0/raw")[0]
    assert (bit.value, bit.weight) == ("0", WEAK) and "Phoenix" in bit.note
    assert (vm.verdict, vm.confidence) == ("vmware", "high")


def test_vm_bit_read_from_the_dmi_table_when_dmi_sysfs_is_not_loaded():
    vm = collect("virt-45-arm64-qemu-kvm-uefi").vm_layers[0]
    bit = evidence(vm, "tables/DMI")[0]
    assert (bit.value, bit.weight, bit.points_to) == ("1", STRONG, "vm")
    assert vm.confidence == "high"        # DMI vendor confirmed by the VM bit


def test_dmidecode_fallback_strings_and_vm_characteristic():
    vm = collect("virt-58-kvm-rhel5-dmidecode").vm_layers[0]
    dmi = evidence(vm, "dmidecode -s system-product-name")[0]
    assert (dmi.value, dmi.points_to) == ("KVM", "kvm")
    assert evidence(vm, "dmidecode -s system-manufacturer")[0].points_to == "redhat"
    text = ("Handle 0x0000, DMI type 0, 24 bytes\nBIOS Information\n\tVendor: Amazon EC2\n"
            "\tVersion: 1.0\n\tCharacteristics:\n\t\tUEFI is supported\n"
            "\t\tSystem is a virtual machine\n\nHandle 0x0001, DMI type 1, 27 bytes\n"
            "System Information\n\tVersion: Not Specified\n")
    assert parse_bios_information(text) == ({"bios_vendor": "Amazon EC2", "bios_version": "1.0"},
                                             True)


def test_empty_cpuinfo_is_unknown_not_no_hypervisor():
    section = collect("virt-57-empty-cpuinfo")
    vm = section.vm_layers[0]
    assert (vm.verdict, vm.confidence) == ("none", "low")
    gap = evidence(vm, "/proc/cpuinfo")[0]
    assert gap.weight == INFO and "empty" in gap.value
    res = run_cli("report", "--section", "virt", "--root", str(fixture_root("virt-57-empty-cpuinfo")))
    assert res.status == 0 and "hardware?" in res.out


# --------------------------------------------------------------------------- arm64, POWER
def test_arm_device_tree_and_clouds():
    fw_cfg = collect("virt-41-arm64-qemu-fw-cfg").vm_layers[0]
    assert "qemu,fw-cfg-mmio" in evidence(fw_cfg, "/proc/device-tree")[0].value
    tool = collect("virt-42-arm64-kvmtool").vm_layers[0]
    assert "without QEMU's fw-cfg" in evidence(tool, "/proc/device-tree/compatible")[0].note
    ecs = collect("virt-44-arm64-alibaba-ecs").vm_layers[0]
    assert ecs.confidence == "medium" and "bare-metal" in evidence(ecs, "product_name")[0].note


def test_arm_microsoft_dmi_needs_the_virtual_machine_product(tmp_path):
    root = copy_root(tmp_path, "virt-44-arm64-alibaba-ecs")
    dmi = root / "sys/devices/virtual/dmi/id"
    for name, value in (("sys_vendor", "Microsoft Corporation"), ("board_vendor", "Microsoft Corporation"),
                        ("bios_vendor", "Microsoft Corporation"), ("chassis_vendor", "Microsoft Corporation"),
                        ("product_name", "Windows Dev Kit 2023")):
        (dmi / name).write_text(value + "\n")
    assert collect(root).vm_layers[0].verdict == "none"      # an arm64 desktop, not Hyper-V
    (dmi / "product_name").write_text("Virtual Machine\n")
    assert collect(root).vm_layers[0].verdict == "hyperv"


def test_pseries_without_the_kvm_node_is_qemu_tcg(tmp_path):
    root = copy_root(tmp_path, "virt-48-ppc64le-kvm")
    shutil.rmtree(root / "sys/firmware/devicetree/base/hypervisor")
    vm = collect(root).vm_layers[0]
    assert (vm.verdict, vm.flavor) == ("qemu", "tcg")
    # without any device tree, the model string alone: KVM, with less confidence
    shutil.rmtree(root / "sys/firmware/devicetree")
    vm = collect(root).vm_layers[0]
    assert (vm.verdict, vm.confidence) == ("kvm", "medium")


def test_powervm_mode_evidence():
    vm = collect("virt-46-ppc64le-powervm-shared").vm_layers[0]
    mode = evidence(vm, "shared_processor_mode")[0]
    assert (mode.value, mode.points_to) == ("1", "shared LPAR")
    assert evidence(vm, "ibm,partition-name")[0].value == "lpar-db01"


def test_s390_without_sysinfo_is_low_confidence(tmp_path):
    root = copy_root(tmp_path, "virt-49-s390x-zvm")
    (root / "proc/sysinfo").unlink()
    section = collect(root)
    assert section.vm_layers[0].confidence == "low" and layer_of(section, "hardware").flavor is None


# --------------------------------------------------------------------------- containers
def test_manager_marker_must_be_one_word():
    c = layer_of(collect("virt-52-container-manager-script"), "container")
    marker = evidence(c, "/run/host/container-manager")[0]
    assert marker.weight == IGNORED and marker.value.startswith("#!/bin/sh")
    assert c.verdict == "container-other"       # the namespaces still show a container


@pytest.mark.parametrize("content,verdict", [("lxc\n", "lxc"), ("", "docker"),
                                             ("lxc docker\n", "docker")])
def test_systemd_container_file(tmp_path, content, verdict):
    root = copy_root(tmp_path, "virt-33-docker-cgroup1-baremetal")
    (root / "run/systemd").mkdir(parents=True)
    (root / "run/systemd/container").write_text(content)
    assert layer_of(collect(root), "container").verdict == verdict


def test_pid1_container_from_a_foreign_tree_keeps_only_container():
    c = layer_of(collect("virt-53-nspawn-pid1-environ"), "container")
    env = evidence(c, "/proc/1/environ")[0]
    assert env.value == "systemd-nspawn" and "container= only" in env.note
    assert "PATH" not in json.dumps([e.__dict__ for e in c.evidence])


def test_vserver_host_context_is_a_role(tmp_path):
    root = copy_root(tmp_path, "virt-54-linux-vserver-guest")
    status = root / "proc/self/status"
    status.write_text(status.read_text().replace("VxID: 41639", "VxID: 0"))
    section = collect(root)
    assert layer_of(section, "container").verdict == "none"
    assert [r.role for r in section.roles] == ["vserver-host"]


def test_kubernetes_runtime_evidence():
    crio = layer_of(collect("virt-55-kubernetes-crio"), "container")
    runtime = next(e for e in crio.evidence if e.note == "the pod's container runtime")
    assert runtime.points_to == "cri-o" and "/etc/hostname" in runtime.value
    containerd = layer_of(collect("virt-56-kubernetes-containerd"), "container")
    runtime = next(e for e in containerd.evidence if e.note == "the pod's container runtime")
    assert runtime.points_to == "containerd" and "cri-containerd-" in runtime.value
