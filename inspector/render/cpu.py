"""Rich renderer for the cpu section: model and topology, frequency policies, load and steal."""
from __future__ import annotations

from rich.console import RenderableType
from rich.text import Text

from inspector.discover.cpu import CpuFreqPolicy, CpuSection
from inspector.model import Unknown
from inspector.render.rows import add_row, label_grid


def _v(value: object) -> str:
    return "?" if isinstance(value, Unknown) or value is None else str(value)


def _mhz(khz: object) -> str:
    return f"{khz / 1000:.0f}" if isinstance(khz, int) else "?"


def _cpus(cpus: list[int]) -> str:
    """[0,1,2,3,6] -> "0-3,6"."""
    out, start = [], None
    for i, c in enumerate(cpus):
        if start is None:
            start = c
        if i + 1 == len(cpus) or cpus[i + 1] != c + 1:
            out.append(f"{start}" if start == c else f"{start}-{c}")
            start = None
    return ",".join(out) or "?"


def policy_lines(policies: list[CpuFreqPolicy]) -> list[Text]:
    """One line per group of identical policies (128 rows of "performance" help nobody). Lines,
    not a table: at 80 columns an eight-column table cut "0-15" to "0…" and "powersave" to
    "powers…"; a line wraps and keeps every word."""
    rows: dict[tuple, list[CpuFreqPolicy]] = {}
    for p in policies:
        key = (_v(p.driver), _v(p.governor), _v(p.energy_performance_preference),
               _mhz(p.min_khz), _mhz(p.max_khz), _mhz(p.hw_min_khz), _mhz(p.hw_max_khz))
        rows.setdefault(key, []).append(p)
    lines = []
    for key, group in rows.items():
        driver, governor, epp, lo, hi, hw_lo, hw_hi = key
        curs = [p.cur_freq_khz for p in group if isinstance(p.cur_freq_khz, int)]
        cur = f"{min(curs) / 1000:.0f}-{max(curs) / 1000:.0f}" if len(set(curs)) > 1 else \
            _mhz(curs[0]) if curs else "?"
        name = group[0].name if len(group) == 1 else f"{len(group)} policies"
        cpus = sorted(c for p in group for c in p.cpus)
        line = Text(f"{name}, CPUs {_cpus(cpus)}: {driver} ")
        line.append(governor, style="bold yellow" if governor == "powersave" else "")
        if epp != "?" or group[0].energy_performance_preference is not None:
            line.append(f", EPP {epp}")
        line.append(f"  cur {cur} MHz  limits {lo}-{hi} MHz (hw {hw_lo}-{hw_hi})")
        lines.append(line)
    return lines


def render(section: object) -> RenderableType:
    if not isinstance(section, CpuSection):
        return Text(str(section), style="yellow")
    grid = label_grid()
    if isinstance(section.model, Unknown) and isinstance(section.vendor, Unknown):
        add_row(grid, "model", Text(str(section.model), style="yellow"))
    else:
        add_row(grid, "model", f"{_v(section.model)}  ({_v(section.vendor)})")
    if isinstance(section.threads, Unknown) and isinstance(section.sockets, Unknown):
        # nothing to count from: say why once instead of a row of question marks
        add_row(grid, "topology", Text(str(section.threads), style="yellow"))
    else:
        add_row(grid, "topology", f"{_v(section.sockets)} socket(s), {_v(section.cores)} cores, "
                f"{_v(section.threads)} threads ({_v(section.threads_per_core)} per core), "
                f"online {_v(section.online)}  [from {section.topology_source}]")
    la = section.load_average
    if isinstance(la, Unknown):
        add_row(grid, "load", Text(str(la), style="yellow"))
    else:
        per_cpu = f"  ({la[0] / section.threads:.2f} per CPU)" \
            if isinstance(section.threads, int) and section.threads else ""
        add_row(grid, "load", f"{la[0]:.2f} {la[1]:.2f} {la[2]:.2f}{per_cpu}  "
                f"runnable {_v(section.volatile.runnable)}/{_v(section.volatile.tasks)}")
    steal = section.steal_percent
    if isinstance(steal, float):
        add_row(grid, "steal", Text(f"{steal:.2f}% of CPU time since boot",
                                    style="bold yellow" if steal > 10 else ""))
    else:
        add_row(grid, "steal", Text(str(steal), style="dim"))
    power = [f"role {section.role} ({', '.join(section.role_evidence)})"]
    if section.intel_pstate:
        power.append(f"intel_pstate {section.intel_pstate}")
    power.append(f"cpuidle {_v(section.cpuidle_driver)}")
    add_row(grid, "power", "; ".join(power))
    if isinstance(section.cpufreq, Unknown):
        add_row(grid, "cpufreq", Text(str(section.cpufreq), style="dim"))
    else:
        for i, line in enumerate(policy_lines(section.cpufreq)):
            add_row(grid, "cpufreq" if i == 0 else "", line)
    return grid
