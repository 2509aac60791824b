"""Containers and VMs from the field (issue 27, class 2): the container managers' storage
layouts in /proc/self/mountinfo (LXD snap and package, Incus, their btrfs/zfs pools, containerd
and CRI-O snapshotters), and the virtualization a sosreport's own tools reported (hostnamectl's
Virtualization line, lscpu, dmesg). Fixtures: tests/fixtures/field/sos-lxd-in-kvm (assembled,
see its SOURCE.md) and sos-hotsos-compute4 (a real sos 4.2 sosreport of a KVM guest)."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from conftest import FIXTURES
from inspector.captures.sosreport import open_sosreport
from inspector.discover import virt
from inspector.roots.host import HostRoot

FIELD = FIXTURES / "field"


def layers(root: HostRoot) -> dict[str, virt.Layer]:
    return {layer.kind: layer for layer in virt.collect(root).layers}


def test_lxd_container_in_a_kvm_guest_from_its_sosreport():
    section = virt.collect(open_sosreport(str(FIELD / "sos-lxd-in-kvm")))
    assert section.summary == "lxc (lxd snap) > kvm > hardware"
    container, vm = section.layers[0], section.layers[1]
    sources = {e.source: e for e in container.evidence}
    assert sources["/proc/self/mountinfo"].value.startswith(
        "/var/snap/lxd/common/lxd/storage-pools/default/containers/penguin/rootfs on /")
    assert sources["hostnamectl status Virtualization"].value == "lxc"
    assert container.confidence == "high"
    assert (vm.verdict, vm.confidence) == ("kvm", "medium")
    assert [(e.source, e.value) for e in vm.evidence if e.weight == virt.MEDIUM] == \
        [("lscpu Hypervisor vendor", "KVM")]


def test_hostnamectl_names_the_vm_of_a_sosreport_without_dmi_or_cpuid():
    section = virt.collect(open_sosreport(str(FIELD / "sos-hotsos-compute4")))
    container, vm = section.layers[0], section.layers[1]
    assert section.summary == "kvm > hardware"
    assert any(e.source == "hostnamectl status Virtualization" and e.value == "kvm" for e in vm.evidence)
    assert container.verdict == "none"
    assert any(e.value == "a VM, no container" for e in container.evidence)


def test_disagreeing_report_is_kept_as_information(tmp_path):
    root = tmp_path / "sos"
    shutil.copytree(FIELD / "sos-lxd-in-kvm", root)
    status = root / "sos_commands/host/hostnamectl_status"
    status.write_text(status.read_text().replace("Virtualization: lxc", "Virtualization: docker"))
    container = layers(open_sosreport(str(root)))["container"]
    assert container.verdict == "lxc"     # the mount path is first-hand
    told = next(e for e in container.evidence if e.source == "hostnamectl status Virtualization")
    assert told.weight == virt.INFO and "stronger signals (lxc)" in told.note


def mountinfo_root(tmp_path: Path, line: str) -> HostRoot:
    (tmp_path / "proc/self").mkdir(parents=True)
    (tmp_path / "proc/self/mountinfo").write_text(line + "\n")
    return HostRoot(str(tmp_path))


# the root mount of an instance, as each manager lays out its storage
@pytest.mark.parametrize("line,verdict,flavor", [
    ("1011 1010 8:2 /var/snap/lxd/common/lxd/storage-pools/default/containers/c1/rootfs / rw,relatime"
     " shared:499 - ext4 /dev/sda2 rw", "lxc", "lxd snap"),
    ("230 200 252:0 /var/lib/lxd/storage-pools/pool1/containers/web/rootfs / rw,relatime - ext4"
     " /dev/mapper/vg0-root rw", "lxc", "lxd"),
    ("230 200 252:0 /var/lib/lxd/containers/web/rootfs / rw,relatime - ext4 /dev/vda1 rw", "lxc", "lxd"),
    ("412 401 0:55 /var/lib/incus/storage-pools/default/containers/openwrt/rootfs / rw,relatime -"
     " ext4 /dev/nvme0n1p2 rw", "lxc", "incus"),
    ("101 90 0:48 /containers/c2/rootfs / rw,relatime - btrfs /dev/sdb rw,subvolid=270",
     "lxc", "lxd or incus"),
    ("88 80 0:50 /var/lib/containerd/io.containerd.snapshotter.v1.native/snapshots/12/fs / rw -"
     " ext4 /dev/sda1 rw", "container-other", "containerd"),
    ("612 530 0:52 / / rw,relatime - overlay overlay rw,lowerdir=/var/lib/containerd/io.containerd."
     "snapshotter.v1.overlayfs/snapshots/33/fs,upperdir=/var/lib/containerd/io.containerd.snapshotter."
     "v1.overlayfs/snapshots/34/fs,workdir=/var/lib/containerd/io.containerd.snapshotter.v1.overlayfs/"
     "snapshots/34/work", "container-other", "containerd"),
    ("612 530 0:52 / / rw,relatime - overlay overlay rw,lowerdir=/var/lib/containers/storage/overlay/"
     "l/ABC:/var/lib/containers/storage/overlay/l/DEF,upperdir=/var/lib/containers/storage/overlay/"
     "9f0e/diff,workdir=/var/lib/containers/storage/overlay/9f0e/work", "container-other",
     "cri-o or podman"),
    ("612 530 0:52 / / rw,relatime - overlay overlay rw,lowerdir=/var/lib/docker/overlay2/l/5QZC,"
     "upperdir=/var/lib/docker/overlay2/3b1e/diff,workdir=/var/lib/docker/overlay2/3b1e/work",
     "docker", None),
])
def test_container_storage_layouts(tmp_path, line, verdict, flavor):
    container = layers(mountinfo_root(tmp_path, line))["container"]
    assert (container.verdict, container.flavor) == (verdict, flavor)
    assert any(e.source == "/proc/self/mountinfo" for e in container.evidence)


def test_an_overlay_root_of_a_host_is_no_container(tmp_path):
    """A live-CD or a Fedora CoreOS host boots into an overlay whose layers are not a runtime's."""
    line = ("25 1 0:30 / / rw,relatime - overlay overlay rw,lowerdir=/run/rootfsbase,"
            "upperdir=/run/overlayfs,workdir=/run/ovlwork")
    assert layers(mountinfo_root(tmp_path, line))["container"].verdict == "none"
