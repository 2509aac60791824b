"""Live samplers: what the host does right now, for `inspector top`, `check --live`,
`record --samples` and the TUI. One sampler, one sample type; rates need two reads.

API::

    from inspector.live.worker import SamplerProcess     # the sampler in a child process
    from inspector.health.live.session import LiveSession
    sampler = SamplerProcess(root)       # fork before starting threads; root: HostRoot
    session = LiveSession(sampler.counters, thresholds)   # inspector.config.load_config().live
    step = session.step()                # every interval (1 s); the first has no sample
    step.sample                          # Rates | None: the live sample (below)
    step.findings                        # [LiveFinding]: active first, then ended ones
    sampler.close()

In the TUI, inspector.tui.live.LiveProcess (from make_sampler(root), thresholds from
inspector.toml) wraps exactly this and hands the screens a LiveView whose `sample` is the
Rates, `processes` every process (re-sort with processes.sort_processes), `live_findings`
the LiveFindings (active first, then ended, each with `since`/`ended`) and `findings` the
plain Findings to list with discovery's (the live ones with "since HH:MM:SS" as evidence,
the ended ones as OK "ended ...", a bad config file as UNKNOWN `config.invalid`). When a
report arrives, `sampler.set_hypervisor(hypervisor_of(report.section("virt")))`
(inspector.health.live.session) lets the steal finding name the layer.

- `Counters` (sampler.py): every counter at one moment: disks (/proc/diskstats), topology
  (md/dm members, partitions), nics, cpu (/proc/stat), load, memory (/proc/meminfo),
  pressure (PSI), vmstat (pgmajfault, pswpin/out, oom_kill, nr_dirty, nr_writeback), softnet
  (/proc/net/softnet_stat), md (resync progress), filesystems (statvfs every second, bounded),
  procs (every process: inspector.live.processes), dstate (tasks in D with their wait point
  and device), oom_victims (read from the kernel log only when oom_kill rose). Any part may be
  `Unknown(reason)`; a source that did not answer in time is named in `timed_out`.
- `Rates` (sampler.py), the live sample, `rates(prev, cur)`: `interval`, `wall`,
  `disks` [DiskRates: iostat -x, md/dm `members`, `busy_members`], `nics` [NicRates], `cpu`
  (CpuRates: percent per state, procs_running/blocked), `load`, `memory`, `pressure`, `vm`
  (VmRates), `softnet` (SoftnetRates), `md` [MdSync: action, progress, speed, `eta_s()`],
  `filesystems` [FsUse], `fs_devices` (mountpoint -> disk), `dstate` [DStateProc: pid, tgid,
  comm, wchan, `wait`, `device`, seconds, since], `top_io` [ProcIoRate], `processes`
  [ProcessRate, all, by CPU; not in JSON], `top_processes` (top 10 by each sort key: what JSON
  keeps), `oom_victims`, `findings` (the sampler's own: net.stall; tasks in D are the live rules'),
  `live_findings` (set by LiveSession), `timed_out`. Fields from `memory` on are None in an
  interval read back from a recording.
- `ProcessRate` (processes.py): pid, comm, user, state, cpu_pct (of one CPU), rss_kib,
  swap_kib, read/write_bytes_s, majflt_s, dstate_s, threads, cmdline (redacted as captures
  are). `sort_processes(procs, SortKey.CPU|MEM|IO|DSTATE, limit)` orders a table.
- `LiveFinding` (findings.py): `finding` (inspector.model.Finding, code `live.*`), `since`,
  `ended` (None while active), `worst`, `as_finding()` (an ended one as an OK finding
  "ended HH:MM:SS"). Codes and thresholds: inspector.health.live, inspector.config.
- `since_boot(counters)`: averages since boot from one read (iostat's first report); what a
  single-sample capture can show.
- Hung sources: each sample waits at most `read_timeout` (1 s) for all sources together; one
  that does not answer (a hung FUSE/NFS mount, lxcfs) is Unknown("/proc/diskstats timed out
  after 1 s") and not read again until its read returns. Its thread stays blocked in the
  sampler's child (SamplerProcess), never in the caller.
- The sampler is stateful on purpose (when a process entered D, when a NIC last received,
  command lines and user names already read): keep one per view. Counter wraps, devices
  appearing or vanishing, CPUs going offline are handled in `rates`.
- Cost: one sample of everything is a few hundred small reads plus three per process
  (tests/bench/bench_samplers.py prints its CPU time beside sysstat's and per 1000
  processes); steady-state memory does not grow with the number of samples.
"""
from __future__ import annotations

from inspector.live.cpustat import CpuCounters, CpuPercent, CpuRates, LoadAvg
from inspector.live.diskstats import (
    DiskCounters,
    DiskInfo,
    DiskRates,
    DiskstatsParseError,
    parse_diskstats,
)
from inspector.live.netstats import NicCounters, NicRates, StallDetector
from inspector.live.procs import DStateProc, ProcIoRate
from inspector.live.sampler import Counters, LiveSampler, Rates, rates, since_boot
from inspector.roots.host import HostRoot

__all__ = ["LiveSampler", "Counters", "Rates", "rates", "since_boot", "capture_sample",
           "DiskCounters", "DiskInfo", "DiskRates", "DiskstatsParseError", "parse_diskstats",
           "NicCounters", "NicRates", "StallDetector", "CpuCounters", "CpuPercent", "CpuRates",
           "LoadAvg", "DStateProc", "ProcIoRate"]


def capture_sample(root: HostRoot) -> dict[str, str]:
    """Read one sample of every live counter through `root` so a capture carries it
    (per-process IO is left out: one moment of it gives no rate). Returns the sources that
    did not answer in time (path -> reason): the capture lacks them."""
    return LiveSampler(root, process_io=False).sample().timed_out
