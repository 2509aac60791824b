"""Discovery of CPU and power: model, topology, cpufreq policies, load average, steal time.

- Model and vendor from /proc/cpuinfo (x86 "model name", ARM implementer/part, ppc "cpu" ...).
- Topology from sys/devices/system/cpu/cpuN/topology of the online CPUs: sockets are distinct
  physical_package_id, cores distinct (package, die, core_id), threads the online CPUs;
  /proc/cpuinfo's physical id / core id when sysfs has no topology.
- cpufreq per policy (cpufreq/policyN, or cpuN/cpufreq on old kernels): driver, governor,
  energy_performance_preference, current/min/max frequency and the hardware limits.
- Load average from /proc/loadavg; steal time since boot from the aggregate line of /proc/stat
  (rates over an interval belong to inspector.live).
- Whether the machine is a server (DMI chassis type, batteries), for the powersave rule.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from inspector.model import Unknown
from inspector.roots.host import HostRoot

CPU_SYS = "sys/devices/system/cpu"
STAT_FIELDS = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal",
               "guest", "guest_nice")

# SMBIOS chassis types (DSP0134 7.4.1)
LAPTOP_CHASSIS = {8: "Portable", 9: "Laptop", 10: "Notebook", 14: "Sub Notebook",
                  30: "Tablet", 31: "Convertible", 32: "Detachable"}
DESKTOP_CHASSIS = {3: "Desktop", 4: "Low Profile Desktop", 5: "Pizza Box", 6: "Mini Tower",
                   7: "Tower", 13: "All in One", 15: "Space-saving", 16: "Lunch Box",
                   35: "Mini PC", 36: "Stick PC"}
SERVER_CHASSIS = {17: "Main Server Chassis", 23: "Rack Mount Chassis", 25: "Multi-system",
                  28: "Blade", 29: "Blade Enclosure", 1: "Other", 2: "Unknown"}


@dataclass
class CpuFreqPolicy:
    """One cpufreq policy: the CPUs that share a frequency, and how it is chosen."""
    name: str                               # policy0, or cpu0 on kernels without policies
    cpus: list[int]                         # CPUs this policy governs (affected_cpus)
    driver: str | Unknown                   # intel_pstate, acpi-cpufreq, amd-pstate-epp ...
    governor: str | Unknown                 # performance, powersave, schedutil, ondemand ...
    available_governors: list[str] | Unknown  # scaling_available_governors
    # hint to the hardware: performance, balance_performance, balance_power, power ...;
    # None: the driver has no EPP
    energy_performance_preference: str | Unknown | None
    cur_freq_khz: int | Unknown             # current frequency in kHz (scaling_cur_freq)
    min_khz: int | Unknown                  # lowest kHz the governor may pick (scaling_min_freq)
    max_khz: int | Unknown                  # highest kHz the governor may pick (scaling_max_freq)
    hw_min_khz: int | Unknown               # hardware minimum in kHz (cpuinfo_min_freq)
    hw_max_khz: int | Unknown               # hardware maximum in kHz (cpuinfo_max_freq)


@dataclass
class TaskCounts:
    """Task counts of /proc/loadavg."""
    runnable: int | Unknown                 # tasks running or runnable now (/proc/loadavg)
    tasks: int | Unknown                    # all tasks (/proc/loadavg)


@dataclass
class CpuSection:
    """CPU model, topology, frequency scaling, load and steal, and the machine's role."""
    model: str | Unknown                    # /proc/cpuinfo "model name" (ARM: implementer/part)
    vendor: str | Unknown                   # cpuinfo vendor_id (GenuineIntel); ARM: implementer
    sockets: int | Unknown                  # distinct physical packages among online CPUs
    cores: int | Unknown                    # distinct physical cores (package, die, core_id)
    threads: int | Unknown                  # online logical CPUs
    threads_per_core: int | Unknown         # threads / cores: 2 with SMT (hyper-threading) on
    online: str | Unknown                   # online CPUs as a kernel list: "0-3,6"
    topology_source: str                    # sysfs | cpuinfo | none
    cpufreq: list[CpuFreqPolicy] | Unknown  # one per cpufreq policy; Unknown: no cpufreq driver
    intel_pstate: str | None                # active | passive | off, when the driver exists
    cpuidle_driver: str | Unknown           # cpuidle/current_driver: intel_idle, acpi_idle ...
    # /proc/loadavg: runnable plus uninterruptible (D) tasks, averaged over 1, 5 and 15 minutes
    load_average: list[float] | Unknown
    volatile: TaskCounts                    # changes every moment: diffs and capture checks skip it
    # aggregate CPU time since boot by field (user, system, iowait, steal ...), /proc/stat
    # "cpu" line, in USER_HZ ticks (usually 1/100 s)
    cpu_times: dict[str, int] | Unknown
    # percent of CPU time the hypervisor gave to other guests since boot: steal / all ticks
    steal_percent: float | Unknown
    role: str                               # server | laptop | desktop (battery, DMI chassis)
    role_evidence: list[str] = field(default_factory=list)  # battery, DMI chassis type ...
    # where load_average was read: "/proc/loadavg", or "uptime" (a sosreport keeps no
    # /proc/loadavg but the output of uptime, taken while sos ran); None when not read
    load_source: str | None = None


def collect(root: HostRoot) -> CpuSection:
    cpuinfo = _cpuinfo_blocks(root)
    online_text = root.try_line(f"{CPU_SYS}/online")
    online = parse_cpu_list(online_text) if isinstance(online_text, str) else None
    sockets, cores, threads, source = _topology(root, online, cpuinfo)
    tpc = threads // cores if isinstance(threads, int) and isinstance(cores, int) and cores \
        else Unknown("topology unknown")
    stat = _stat_cpu(root)
    load, runnable, tasks = _loadavg(root)
    load_source: str | None = "/proc/loadavg" if not isinstance(load, Unknown) else None
    if isinstance(load, Unknown) and not root.live:
        load, load_source = _uptime_load(root, load)
    role, role_evidence = _role(root)
    intel = root.try_line(f"{CPU_SYS}/intel_pstate/status")
    return CpuSection(
        model=_model(cpuinfo), vendor=_first(cpuinfo, "vendor_id", "CPU implementer"),
        sockets=sockets, cores=cores, threads=threads, threads_per_core=tpc,
        online=online_text, topology_source=source, cpufreq=_cpufreq(root),
        intel_pstate=intel if isinstance(intel, str) else None,
        cpuidle_driver=root.try_line(f"{CPU_SYS}/cpuidle/current_driver"),
        load_average=load, volatile=TaskCounts(runnable, tasks), cpu_times=stat,
        steal_percent=steal_percent(stat),
        role=role, role_evidence=role_evidence, load_source=load_source)


def parse_cpu_list(text: str) -> list[int]:
    """Kernel cpulist ("0-3,8,10-11") to CPU numbers; garbage parts are skipped."""
    cpus: list[int] = []
    for part in text.strip().split(","):
        m = re.fullmatch(r"\s*(\d+)(?:-(\d+))?\s*", part)
        if not m:
            continue
        lo, hi = int(m.group(1)), int(m.group(2) or m.group(1))
        if hi - lo <= 65536:
            cpus.extend(range(lo, hi + 1))
    return cpus


def _cpuinfo_blocks(root: HostRoot) -> list[dict[str, str]]:
    text = root.try_text("proc/cpuinfo")
    if isinstance(text, Unknown):
        return []
    blocks: list[dict[str, str]] = [{}]
    for line in text.splitlines():
        if not line.strip():
            if blocks[-1]:
                blocks.append({})
            continue
        key, sep, value = line.partition(":")
        if sep:
            blocks[-1].setdefault(key.strip(), value.strip())
    return [b for b in blocks if b]


def _first(blocks: list[dict[str, str]], *keys: str) -> str | Unknown:
    for block in blocks:
        for key in keys:
            if block.get(key):
                return block[key]
    return Unknown("not in /proc/cpuinfo")


def _model(blocks: list[dict[str, str]]) -> str | Unknown:
    model = _first(blocks, "model name", "Model", "cpu model", "cpu", "Processor")
    if isinstance(model, str):
        return model
    implementer, part = _first(blocks, "CPU implementer"), _first(blocks, "CPU part")
    if isinstance(implementer, str) and isinstance(part, str):
        return f"ARM implementer {implementer} part {part}"
    return model


def _topology(root: HostRoot, online: list[int] | None, cpuinfo: list[dict[str, str]]
              ) -> tuple[int | Unknown, int | Unknown, int | Unknown, str]:
    if online:
        packages, cores = set(), set()
        for cpu in online:
            topo = f"{CPU_SYS}/cpu{cpu}/topology"
            package = root.try_int(f"{topo}/physical_package_id")
            core = root.try_int(f"{topo}/core_id")
            if not isinstance(package, int) or not isinstance(core, int):
                break
            die = root.try_int(f"{topo}/die_id")
            packages.add(package)
            cores.add((package, die if isinstance(die, int) else 0, core))
        else:
            return len(packages), len(cores), len(online), "sysfs"
    processors = [b for b in cpuinfo if "processor" in b]
    if not processors:
        reason = Unknown("no topology in sysfs or /proc/cpuinfo")
        return reason, reason, len(online) if online else reason, "none"
    if all("physical id" in b and "core id" in b for b in processors):
        package_ids = {b["physical id"] for b in processors}
        core_ids = {(b["physical id"], b["core id"]) for b in processors}
        return len(package_ids), len(core_ids), len(processors), "cpuinfo"
    reason = Unknown("/proc/cpuinfo has no physical id / core id")
    return reason, reason, len(processors), "cpuinfo"


def _cpufreq(root: HostRoot) -> list[CpuFreqPolicy] | Unknown:
    base = f"{CPU_SYS}/cpufreq"
    names = [n for n in root.try_listdir(base) if re.fullmatch(r"policy\d+", n)]
    dirs = [(n, f"{base}/{n}") for n in sorted(names, key=lambda n: int(n[6:]))]
    if not dirs:  # kernels before policyN directories
        cpus = sorted((n for n in root.try_listdir(CPU_SYS) if re.fullmatch(r"cpu\d+", n)),
                      key=lambda n: int(n[3:]))
        dirs = [(n, f"{CPU_SYS}/{n}/cpufreq") for n in cpus
                if root.exists(f"{CPU_SYS}/{n}/cpufreq/scaling_governor")]
    if not dirs:
        if not root.exists(CPU_SYS):   # a capture without sysfs says nothing about cpufreq
            return Unknown(f"{CPU_SYS} not present")
        return Unknown("no cpufreq driver (usual in a VM: the hypervisor owns frequency)")
    return [_policy(root, name, path) for name, path in dirs]


def _policy(root: HostRoot, name: str, path: str) -> CpuFreqPolicy:
    affected = root.try_line(f"{path}/affected_cpus")
    governors = root.try_line(f"{path}/scaling_available_governors")
    epp = None
    if root.exists(f"{path}/energy_performance_preference"):
        epp = root.try_line(f"{path}/energy_performance_preference")
    return CpuFreqPolicy(
        name=name,
        cpus=[int(c) for c in affected.split() if c.isdigit()] if isinstance(affected, str)
        else [],
        driver=root.try_line(f"{path}/scaling_driver"),
        governor=root.try_line(f"{path}/scaling_governor"),
        available_governors=governors.split() if isinstance(governors, str) else governors,
        energy_performance_preference=epp,
        cur_freq_khz=root.try_int(f"{path}/scaling_cur_freq"),
        min_khz=root.try_int(f"{path}/scaling_min_freq"),
        max_khz=root.try_int(f"{path}/scaling_max_freq"),
        hw_min_khz=root.try_int(f"{path}/cpuinfo_min_freq"),
        hw_max_khz=root.try_int(f"{path}/cpuinfo_max_freq"))


def _loadavg(root: HostRoot) -> tuple[list[float] | Unknown, int | Unknown, int | Unknown]:
    line = root.try_line("proc/loadavg")
    if isinstance(line, Unknown):
        return line, line, line
    m = re.match(r"\s*(\d+\.\d+)\s+(\d+\.\d+)\s+(\d+\.\d+)\s+(\d+)/(\d+)", line)
    if not m:
        bad = Unknown(f"unparsable /proc/loadavg {line[:40]!r}")
        return bad, bad, bad
    return [float(m.group(i)) for i in (1, 2, 3)], int(m.group(4)), int(m.group(5))


_LOAD = re.compile(r"load averages?:\s*(.*)$", re.IGNORECASE)
_DECIMAL = re.compile(r"\d+[.,]\d+")


def parse_uptime_load(text: str) -> list[float] | None:
    """The 1, 5 and 15 minute load averages of `uptime`'s line (" 19:48:41 up 8 min,  0 user,
    load average: 2.54, 1.73, 0.81"); a decimal comma (a locale's uptime) is read too. None
    when the line has no three averages."""
    for line in text.splitlines():
        m = _LOAD.search(line)
        if m:
            values = _DECIMAL.findall(m.group(1))
            if len(values) >= 3:
                return [float(v.replace(",", ".")) for v in values[:3]]
    return None


def _uptime_load(root: HostRoot, missing: Unknown) -> tuple[list[float] | Unknown, str | None]:
    """A tree without /proc/loadavg (a sosreport): the load averages of `uptime`'s output."""
    result = root.run(["uptime"])
    load = parse_uptime_load(result.stdout) if result.error is None else None
    if load is None:
        why = result.error or f"no load average in its output {result.stdout.strip()[:60]!r}"
        return Unknown(f"/proc/loadavg: {missing.reason}; uptime: {why}"), None
    return load, "uptime"


def _stat_cpu(root: HostRoot) -> dict[str, int] | Unknown:
    text = root.try_text("proc/stat")
    if isinstance(text, Unknown):
        return text
    for line in text.splitlines():
        parts = line.split()
        if parts and parts[0] == "cpu":
            try:
                values = [int(v) for v in parts[1:]]
            except ValueError:
                break
            return dict(zip(STAT_FIELDS, values))
    return Unknown("no aggregate cpu line in /proc/stat")


def steal_percent(stat: dict[str, int] | Unknown) -> float | Unknown:
    """Steal share of all CPU time since boot (guest time is already inside user)."""
    if isinstance(stat, Unknown):
        return stat
    if "steal" not in stat:
        return Unknown("kernel does not report steal time")
    total = sum(stat.get(k, 0) for k in STAT_FIELDS[:8])
    if total <= 0:
        return Unknown("no CPU time accounted yet")
    return round(100.0 * stat["steal"] / total, 2)


def _role(root: HostRoot) -> tuple[str, list[str]]:
    evidence: list[str] = []
    if not root.exists("sys"):   # nothing to go on: the default, said to be one
        return "server", ["assumed: no sysfs in this root"]
    for supply in root.try_listdir("sys/class/power_supply"):
        if root.try_line(f"sys/class/power_supply/{supply}/type") == "Battery":
            return "laptop", [f"battery {supply}"]
    chassis = root.try_int("sys/class/dmi/id/chassis_type")
    if isinstance(chassis, int):
        if chassis in LAPTOP_CHASSIS:
            return "laptop", [f"DMI chassis type {chassis} ({LAPTOP_CHASSIS[chassis]})"]
        if chassis in DESKTOP_CHASSIS:
            return "desktop", [f"DMI chassis type {chassis} ({DESKTOP_CHASSIS[chassis]})"]
        evidence.append(f"DMI chassis type {chassis} ({SERVER_CHASSIS.get(chassis, 'other')})")
    else:
        evidence.append("no DMI chassis type")
    evidence.append("no battery")
    return "server", evidence
