"""Live samplers: iostat -x per device, NIC rates and receive stalls, CPU split with steal and
iowait, processes in D state and the top IO processes. Rates need two samples.

API (what `inspector top` and the TUI use)::

    from inspector.live import LiveSampler, rates, since_boot
    sampler = LiveSampler(root)          # root: inspector.host.HostRoot, live or capture
    prev = sampler.sample()              # Snapshot: cumulative counters at one moment
    ...                                  # wait an interval
    cur = sampler.sample()
    r = rates(prev, cur)                 # Rates: per second over cur.mono - prev.mono
    to_jsonable(r)                       # inspector.model.to_jsonable: plain JSON

- `Snapshot` (sampler.py): mono/wall time, uptime, `disks` (name -> DiskCounters, one
  /proc/diskstats line), `topology` (name -> DiskInfo: kind, parent disk, md/dm members),
  `nics` (name -> NicCounters), `cpu` (CpuCounters from /proc/stat), `load` (LoadAvg),
  `dstate` (DStateProc list: pid, tgid, comm, wchan, seconds in D, since; threads of
  multi-threaded processes are walked while /proc/stat counts blocked tasks), `findings`
  (Finding list: "net.stall" for a NIC that stopped receiving while transmitting,
  "proc.dstate" for a task in D for 30 s or more). Any part may be `Unknown(reason)`.
- `Rates` (sampler.py): `interval`, `disks` (DiskRates: r_s w_s d_s f_s rkB_s wkB_s dkB_s
  rrqm_s wrqm_s drqm_s r_await w_await d_await f_await aqu_sz rareq_sz wareq_sz dareq_sz util
  in_flight; on md/dm devices also `members`, `busy_members` (members far busier than the
  array: the idle-looking md0 over a saturated disk) and `alias` (dm mapper name)),
  `disk_changes` (devices that appeared or vanished), `nics` (NicRates: rx/tx bytes, packets,
  errors, drops per second, with operstate and carrier), `cpu` (CpuRates: percent per state
  overall and per CPU, ctxt_s, intr_s), `load`, `dstate`, `top_io` (ProcIoRate: pid, comm,
  read/write bytes per second; Unknown on a capture or without root), `findings`, `since_boot`.
- Hung sources: each sample waits at most `read_timeout` (1 s) for all sources together; one
  that does not answer (a hung FUSE/NFS mount, lxcfs) is Unknown("/proc/diskstats timed out
  after 1 s"), named in `Snapshot.timed_out` / `Rates.timed_out` (path -> reason), and not
  read again until its read returns. Its thread stays blocked in this process, which then
  cannot exit: `inspector.live.worker.SamplerProcess` is the same sampler in a child process.
- Text for `inspector top`: inspector.live.text.format_block(rates).
- `since_boot(snapshot)`: averages since boot from one snapshot (iostat's first report); what
  a single-sample capture can show.
- The sampler is stateful on purpose: it remembers when each process entered D and when each
  NIC last received, so keep one `LiveSampler` per view. Counter wraps (32 and 64 bit),
  devices appearing or vanishing, CPUs going offline are handled in `rates`.
- Cost: one sample of everything is a few hundred small reads (tests/bench/bench_samplers.py
  prints its CPU time beside sysstat's); steady-state memory does not grow with the number of
  samples. Per-process IO is /proc/[pid]/io read through the root (live only).
"""
from __future__ import annotations

from inspector.host import HostRoot
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
from inspector.live.sampler import LiveSampler, Rates, Snapshot, rates, since_boot

__all__ = ["LiveSampler", "Snapshot", "Rates", "rates", "since_boot", "capture_sample",
           "DiskCounters", "DiskInfo", "DiskRates", "DiskstatsParseError", "parse_diskstats",
           "NicCounters", "NicRates", "StallDetector", "CpuCounters", "CpuPercent", "CpuRates",
           "LoadAvg", "DStateProc", "ProcIoRate"]


def capture_sample(root: HostRoot) -> dict[str, str]:
    """Read one sample of every live counter through `root` so a capture carries it
    (per-process IO is left out: one moment of it gives no rate). Returns the sources that
    did not answer in time (path -> reason): the capture lacks them."""
    return LiveSampler(root, process_io=False).sample().timed_out
