"""Garbage, truncated or oddly shaped inputs never make the virt collector raise."""
import json
import shutil

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import fixture_root
from inspector.discover import virt
from inspector.roots.host import HostRoot

FILES = ["proc/cpuinfo", "proc/self/cgroup", "proc/self/mountinfo", "sys/hypervisor/type",
         "sys/hypervisor/guest_type", "sys/hypervisor/properties/features", "proc/xen/capabilities",
         "sys/firmware/dmi/entries/0-0/raw", "sys/firmware/acpi/tables/FACP", "run/.containerenv",
         "run/systemd/container", "proc/sys/kernel/osrelease", "sys/devices/virtual/dmi/id/sys_vendor"]
CPUID_VALUES = st.one_of(st.none(), st.integers(), st.text(max_size=12),
                         st.lists(st.integers(min_value=0, max_value=2**32 - 1), max_size=5),
                         st.lists(st.text(max_size=10), max_size=3))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(contents=st.dictionaries(st.sampled_from(FILES), st.binary(max_size=300), max_size=6),
       facts=st.dictionaries(st.sampled_from(["method", "0x00000000", "0x00000001", "scan", "0x40000000"]),
                             CPUID_VALUES, max_size=5))
def test_garbage_never_raises(tmp_path_factory, contents, facts):
    root = tmp_path_factory.mktemp("garbage")
    shutil.copytree(fixture_root("virt-11-xenserver-hvm-viridian"), root, symlinks=True, dirs_exist_ok=True)
    for rel, data in contents.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    side = json.loads((root / "inspector-sidecar.json").read_text())
    side["facts"]["cpuid"].update(facts)
    (root / "inspector-sidecar.json").write_text(json.dumps(side))
    section = virt.collect(HostRoot(str(root)))
    assert section.layers[0].kind == "container" and section.layers[-1].kind == "hardware"
    assert isinstance(section.summary, str)


NEW_FILES = ["proc/sysinfo", "proc/powerpc/lparcfg", "sys/firmware/devicetree/base/compatible",
             "sys/firmware/devicetree/base/hypervisor/compatible", "sys/firmware/dmi/tables/DMI",
             "sys/firmware/devicetree/base/ibm,partition-name", "run/host/container-manager",
             "proc/self/status", "proc/1/environ", "proc/cpuinfo", "run/systemd/container"]
ROOTS = ["virt-46-ppc64le-powervm-shared", "virt-49-s390x-zvm", "virt-41-arm64-qemu-fw-cfg",
         "virt-39-xen3-hvm-no-hypervisor-bit"]
COMMAND = st.one_of(st.none(), st.text(max_size=20), st.dictionaries(
    st.sampled_from(["argv", "returncode", "stdout", "stderr", "error"]),
    st.one_of(st.none(), st.integers(), st.text(max_size=200)), max_size=5))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(base=st.sampled_from(ROOTS),
       contents=st.dictionaries(st.sampled_from(NEW_FILES), st.binary(max_size=300), max_size=6),
       dmidecode=st.dictionaries(st.sampled_from(["dmidecode -t 0", "dmidecode -s system-manufacturer"]),
                                 COMMAND, max_size=2))
def test_garbage_in_platform_files_never_raises(tmp_path_factory, base, contents, dmidecode):
    """POWER, s390x, device-tree, firmware and container files of any content, and recorded
    dmidecode output of any shape, give a section, never an exception."""
    root = tmp_path_factory.mktemp("garbage")
    shutil.copytree(fixture_root(base), root, symlinks=True, dirs_exist_ok=True)
    for rel, data in contents.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    side = json.loads((root / "inspector-sidecar.json").read_text())
    side["facts"].setdefault("command", {}).update(dmidecode)
    (root / "inspector-sidecar.json").write_text(json.dumps(side))
    section = virt.collect(HostRoot(str(root)))
    assert section.layers[0].kind == "container" and section.layers[-1].kind == "hardware"
    assert isinstance(section.summary, str)
