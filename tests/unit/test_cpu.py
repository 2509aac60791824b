"""CPU and power discovery and findings on fixture roots."""
from __future__ import annotations

import io
import shutil

from rich.console import Console

from conftest import fixture_root, run_cli
from inspector.discover import cpu
from inspector.model import Unknown
from inspector.render.cpu import render
from inspector.report.collect import build_report
from inspector.roots.host import HostRoot


def collect(name: str) -> cpu.CpuSection:
    return cpu.collect(HostRoot(str(fixture_root(name))))


def findings(name: str):
    return build_report(HostRoot(str(fixture_root(name))), ["cpu"]).findings


def test_powersave_server_with_steal():
    s = collect("cpu-powersave-server")
    assert (s.sockets, s.cores, s.threads, s.threads_per_core) == (2, 8, 16, 2)
    assert isinstance(s.model, str) and isinstance(s.cpufreq, list), (s.model, s.cpufreq)
    assert s.topology_source == "sysfs" and s.model.startswith("Intel(R) Xeon(R) Gold 6248")
    assert len(s.cpufreq) == 16
    p0 = s.cpufreq[0]
    assert (p0.driver, p0.governor, p0.cur_freq_khz, p0.max_khz, p0.cpus) == (
        "acpi-cpufreq", "powersave", 1000000, 2500000, [0])
    assert p0.energy_performance_preference is None
    assert s.load_average == [12.5, 11.8, 10.02] and (s.volatile.runnable, s.volatile.tasks) == (17, 904)
    assert s.steal_percent == 12.15
    assert s.role == "server" and "Rack Mount" in s.role_evidence[0]
    got = {f.code: f for f in findings("cpu-powersave-server")}
    assert sorted(got) == ["cpu.powersave_governor", "cpu.steal"]
    assert "minimum frequency" in got["cpu.powersave_governor"].message
    assert "12.2%" in got["cpu.steal"].message


def test_laptop_with_intel_pstate_is_quiet():
    s = collect("cpu-pstate-laptop")
    assert s.role == "laptop" and s.intel_pstate == "active"
    assert isinstance(s.cpufreq, list), s.cpufreq
    assert s.cpufreq[0].energy_performance_preference == "balance_power"
    assert findings("cpu-pstate-laptop") == []


def test_pstate_powersave_on_server_warns_unless_epp_performance(tmp_path):
    root = tmp_path / "r"
    shutil.copytree(fixture_root("cpu-pstate-laptop"), root, symlinks=True)
    shutil.rmtree(root / "sys/class/power_supply")
    (root / "sys/class/dmi/id/chassis_type").write_text("23\n")
    codes = [f for f in build_report(HostRoot(str(root)), ["cpu"]).findings]
    assert [f.code for f in codes] == ["cpu.powersave_governor"]
    assert "balance_power" in codes[0].message
    for policy in (root / "sys/devices/system/cpu/cpufreq").iterdir():
        (policy / "energy_performance_preference").write_text("performance\n")
    assert build_report(HostRoot(str(root)), ["cpu"]).findings == []


def test_arm_cpuinfo_without_topology_and_garbage_loadavg():
    s = collect("cpu-arm-cpuinfo")
    assert s.model == "ARM implementer 0x41 part 0xd0c"
    assert s.threads == 4 and isinstance(s.cores, Unknown) and s.topology_source == "cpuinfo"
    assert isinstance(s.load_average, Unknown) and "unparsable" in s.load_average.reason
    assert s.steal_percent == 0.0 and isinstance(s.cpu_times, dict) and "guest" not in s.cpu_times
    assert isinstance(s.cpufreq, Unknown)


def test_shared_machine_roots():
    bare = collect("nvme-bare-metal")
    assert (bare.sockets, bare.cores, bare.threads) == (1, 32, 64)
    assert isinstance(bare.cpufreq, list) and {p.governor for p in bare.cpufreq} == {"performance"}
    xen = collect("xen-pv-guest")
    assert xen.threads == 2 and isinstance(xen.steal_percent, float)


def test_empty_root_never_raises(tmp_path):
    s = cpu.collect(HostRoot(str(tmp_path)))
    assert isinstance(s.model, Unknown) and isinstance(s.load_average, Unknown)
    assert isinstance(s.steal_percent, Unknown) and isinstance(s.cpufreq, Unknown)
    assert cpu.parse_cpu_list("0-3,8,x,10-11") == [0, 1, 2, 3, 8, 10, 11]


def test_report_renders_cpu_roots():
    result = run_cli("report", "--section", "cpu", "--root",
                     str(fixture_root("cpu-powersave-server")))
    assert result.status == 0 and "cannot render" not in result.out
    console = Console(width=160, record=True, file=io.StringIO())
    console.print(render(collect("cpu-powersave-server")))
    out = console.export_text()
    assert "16 policies" in out and "powersave" in out and "2 socket(s), 8 cores" in out
    assert "[from sysfs]" in out                      # plain text, not Rich markup
