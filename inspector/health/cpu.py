"""Health rules for the cpu section.

- cpu.powersave_governor (warn): a server running the powersave governor. With acpi-cpufreq
  and most generic drivers that pins the minimum frequency; with intel_pstate/amd-pstate in
  active mode it scales, but toward efficiency unless EPP says performance.
- cpu.steal (warn): steal time above 10% of all CPU time since boot: the hypervisor gives
  this guest's vCPUs to others (rates over an interval are the live sampler's job).
"""
from __future__ import annotations

from collections.abc import Iterable

from inspector.discover.cpu import CpuSection
from inspector.model import Finding, Level, Report

STEAL_WARN_PERCENT = 10.0
SCALING_POWERSAVE = ("intel_pstate", "amd-pstate", "amd-pstate-epp", "intel_cpufreq")


def rules(report: Report) -> Iterable[Finding]:
    s = report.section("cpu")
    if not isinstance(s, CpuSection):
        return []
    out: list[Finding] = []
    out.extend(_powersave(s))
    if isinstance(s.steal_percent, float) and s.steal_percent > STEAL_WARN_PERCENT:
        stat = s.cpu_times if isinstance(s.cpu_times, dict) else {}
        out.append(Finding(
            Level.WARN, "cpu", f"steal time {s.steal_percent:.1f}% since boot "
            f"(above {STEAL_WARN_PERCENT:g}%)",
            [f"/proc/stat cpu steal={stat.get('steal')} of "
             f"{sum(v for k, v in stat.items() if k not in ('guest', 'guest_nice'))} jiffies"],
            "The hypervisor is overcommitted: ask the provider/host team, move the VM, or use "
            "dedicated vCPUs; watch the live steal rate to see whether it is happening now.",
            code="cpu.steal"))
    return out


def _powersave(s: CpuSection) -> list[Finding]:
    if s.role != "server" or not isinstance(s.cpufreq, list):
        return []
    policies = [p for p in s.cpufreq if p.governor == "powersave"]
    if not policies:
        return []
    drivers = sorted({p.driver for p in policies if isinstance(p.driver, str)})
    epps = sorted({p.energy_performance_preference for p in policies
                   if isinstance(p.energy_performance_preference, str)})
    scaling = bool(drivers) and all(d in SCALING_POWERSAVE for d in drivers)
    if scaling and epps == ["performance"]:
        return []   # intel_pstate powersave + EPP performance: runs at full speed when busy
    detail = ("scales toward efficiency" + (f" (EPP {', '.join(epps)})" if epps else "")
              if scaling else "pins the CPUs at their minimum frequency")
    cpus = sum(len(p.cpus) or 1 for p in policies)
    mins = sorted({p.min_khz for p in policies if isinstance(p.min_khz, int)})
    return [Finding(
        Level.WARN, "cpu", f"powersave governor on a server: {detail}",
        [f"{len(policies)} cpufreq policies ({cpus} CPUs) governor powersave, driver "
         f"{', '.join(drivers) or 'unknown'}"] +
        ([f"scaling_min_freq {', '.join(f'{m / 1000:g} MHz' for m in mins)}"] if mins else []) +
        s.role_evidence,
        "cpupower frequency-set -g performance (or EPP performance with intel_pstate), and "
        "set it in the tuned/BIOS profile so it survives reboots.",
        code="cpu.powersave_governor")]
