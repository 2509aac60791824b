"""CPUID: key scheme, signatures, the block scan, sidecar reading and the two live readers."""
import json
import os
import struct

import pytest

from inspector.discover import cpuid
from inspector.model import Unknown
from inspector.roots.host import HostRoot


def regs_for(sig: str, max_leaf: int) -> list[int]:
    return [max_leaf, *struct.unpack("<3I", sig.encode().ljust(12, b"\0"))]


def test_keys_and_signatures():
    assert cpuid.key(0x40000000) == "0x40000000"
    assert cpuid.key(0xD, 1) == "0x0000000d.1"
    assert cpuid.signature(regs_for("KVMKVMKVM", 0x40000001)) == "KVMKVMKVM"
    assert cpuid.hypervisor_of("bhyve bhyve ") == "bhyve"
    assert cpuid.hypervisor_of("Microsoft Hv") == "microsoft"
    assert cpuid.hypervisor_of("garbage") is None


def test_block_presence_rejects_basic_leaf_echo():
    # Intel returns the highest basic leaf for out-of-range leaves: not a hypervisor block.
    assert not cpuid._block_present(0x40000000, [0x00000D, 0x123, 0x456, 0x789])
    assert cpuid._block_present(0x40000100, regs_for("XenVMMXenVMM", 0x40000105))


def write_root(tmp_path, facts):
    (tmp_path / "inspector-sidecar.json").write_text(json.dumps({"version": 1, "facts": {"cpuid": facts}}))
    return HostRoot(str(tmp_path))


def test_view_from_sidecar(tmp_path):
    root = write_root(tmp_path, {
        "method": "dev-cpu", "0x00000000": [0x16, 0x756E6547, 0x6C65746E, 0x49656E69],
        "0x00000001": [0x50657, 0, 1 << 31, 0], "scan": ["0x40000000", "0x40000100"],
        "0x40000000": regs_for("Microsoft Hv", 0x40000003),
        "0x40000003": [0, 1 << 12, 0, 0],
        "0x40000100": regs_for("XenVMMXenVMM", 0x40000100)})
    view = cpuid.read(root)
    assert view.vendor == "GenuineIntel" and view.hypervisor_bit is True
    assert isinstance(view.blocks, list), view.blocks
    assert [b.hypervisor for b in view.blocks] == ["microsoft", "xen"]
    assert view.first_hypervisor() == "xen"
    microsoft = view.block("microsoft")
    assert microsoft is not None
    assert microsoft.leaves[0x40000003][1] == 1 << 12
    # 0x40000001/2 were not recorded: absent, not invented as zeros
    assert 0x40000001 not in microsoft.leaves


def test_missing_and_malformed_records(tmp_path):
    view = cpuid.read(write_root(tmp_path, {"method": {"__unknown__": "permission denied"}}))
    assert isinstance(view.hypervisor_bit, Unknown) and isinstance(view.method, Unknown)
    assert view.method.reason == "permission denied"
    bad = cpuid.CpuidReader(write_root(tmp_path, {"method": "dev-cpu", "0x00000001": [1, 2]}))
    leaf = bad.leaf(1)
    assert isinstance(leaf, Unknown) and "malformed" in leaf.reason
    assert isinstance(cpuid.read(HostRoot(str(tmp_path / "nothing"))).method, Unknown)


def test_probe_child_matches_dev_cpu():
    """The unprivileged stub and the cpuid driver read the same leaves on this machine."""
    pairs = [(0, 0), (0x40000000, 0), (0x40000001, 0)]
    probed = cpuid._probe_read(pairs)
    if os.access("/dev/cpu/0/cpuid", os.R_OK):
        assert cpuid._dev_read(pairs) == probed
    assert cpuid.signature(probed[(0x40000000, 0)]) == "KVMKVMKVM"


def test_probe_failure_is_a_reason_not_a_crash(monkeypatch):
    monkeypatch.setattr(cpuid, "_STUB", bytes.fromhex("0f0b"))     # ud2: the child dies (SIGILL)
    with pytest.raises(RuntimeError, match="signal"):
        cpuid._probe_read([(0, 0)])


def test_live_reader_records_what_captures_need():
    root = HostRoot("/", record=True)
    view = cpuid.read(root)
    facts = root.sidecar()["facts"]["cpuid"]
    assert view.method in ("dev-cpu", "probe")
    assert facts["scan"] == ["0x40000000"] and facts["0x40000000"][1:] == regs_for("KVMKVMKVM", 0)[1:]


def test_probe_is_used_when_dev_cpu_is_unreadable(monkeypatch, tmp_path):
    monkeypatch.setattr(cpuid, "_DEV", str(tmp_path / "no-cpuid-driver"))
    root = HostRoot("/", record=True)
    view = cpuid.read(root)
    assert view.method == "probe"
    assert view.hypervisor_bit is True and view.first_hypervisor() == "kvm"
    assert root.sidecar()["facts"]["cpuid"]["method"] == "probe"


def test_no_method_gives_reasons(monkeypatch, tmp_path):
    monkeypatch.setattr(cpuid, "_DEV", str(tmp_path / "no-cpuid-driver"))
    monkeypatch.setattr(cpuid, "_STUB", bytes.fromhex("0f0b"))
    view = cpuid.read(HostRoot("/"))
    assert isinstance(view.method, Unknown)
    assert "no-cpuid-driver" in view.method.reason and "signal" in view.method.reason


@pytest.mark.parametrize("sig,hypervisor", [
    ("XenVMMXenVMM", "xen"), ("KVMKVMKVM", "kvm"), ("Linux KVM Hv", "kvm"), ("TCGTCGTCGTCG", "qemu"),
    ("VMwareVMware", "vmware"), ("Microsoft Hv", "microsoft"), ("bhyve bhyve ", "bhyve"),
    ("BHyVE BHyVE ", "bhyve"), (" QNXQVMBSQG ", "qnx"), ("ACRNACRNACRN", "acrn"),
    ("VBoxVBoxVBox", "oracle"), ("Apple VZ", "apple"), ("LKVMLKVMLKVM", "kvmtool"),
    ("Jailhouse\0\0\0", "jailhouse"), ("SRESRESRESRE", "sre"), (" prl hyperv ", "parallels"),
    ("prl hyperv  ", "parallels"), (" lrpepyh  vr", "parallels"), (" lrpepyh vr ", "parallels"),
    ("OpenBSDVMM58", "openbsd-vmm"), ("HAXMHAXMHAXM", "haxm"), ("___ NVMM ___", "nvmm"),
    ("EVMMEVMMEVMM", "intel-kgt"), ("UnisysSpar64", "unisys-spar")])
def test_signature_table(tmp_path, sig, hypervisor):
    """Every published signature, as the registers carry it, names its hypervisor."""
    regs = [0x40000001, *struct.unpack("<3I", sig.encode("latin-1").ljust(12, b"\0"))]
    root = write_root(tmp_path, {"method": "dev-cpu", "0x00000000": [0x16, 0, 0, 0],
                                 "0x00000001": [0, 0, 1 << 31, 0], "scan": ["0x40000000"],
                                 "0x40000000": regs, "0x40000001": [0, 0, 0, 0]})
    blocks = cpuid.read(root).blocks
    assert isinstance(blocks, list) and blocks[0].hypervisor == hypervisor
    assert cpuid.hypervisor_of("") is None and cpuid.hypervisor_of("\0\0\0") is None


def test_blocks_are_read_with_the_hypervisor_bit_clear(tmp_path):
    """Xen 3.x answers at 0x40000000 without setting leaf 1 ECX bit 31."""
    root = write_root(tmp_path, {"method": "dev-cpu", "0x00000000": [0x16, 0, 0, 0],
                                 "0x00000001": [0, 0, 0, 0], "scan": ["0x40000000"],
                                 "0x40000000": regs_for("XenVMMXenVMM", 0x40000002),
                                 "0x40000001": [0x30001, 0, 0, 0], "0x40000002": [0, 0, 0, 0]})
    view = cpuid.read(root)
    assert view.hypervisor_bit is False and isinstance(view.blocks, list)
    assert [b.hypervisor for b in view.blocks] == ["xen"]
    # a capture made before the scan ignored the bit has no "scan" key then: no blocks
    old = write_root(tmp_path, {"method": "dev-cpu", "0x00000000": [0x16, 0, 0, 0],
                                "0x00000001": [0, 0, 0, 0]})
    assert cpuid.read(old).blocks == []
