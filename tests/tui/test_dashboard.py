"""The Overview's live panels (inspector.tui.dashboard), painted without a terminal: which
disks and NICs show, in what order, in which units; that every size has every panel and no
panel rows of nothing; that the panels fit the rows in view when their smallest forms do."""
from __future__ import annotations

import pytest

from inspector.live.cpustat import LoadAvg
from inspector.live.filesystems import FsUse
from inspector.live.memory import MemoryUse
from inspector.live.pressure import Pressure
from inspector.live.processes import ProcessRate
from inspector.live.procs import DStateProc
from inspector.model import Unknown
from inspector.tui import dashboard
from inspector.tui.live import CpuView, DiskRate, LiveView, NicRate
from inspector.tui.trends import Trends
from inspector.widgets import units
from screen_panels import panels


def disk(name, util=0.0, r=0.0, w=0.0, await_ms=0.0, kind="disk", parent=None, members=()):
    return DiskRate(name, util, await_ms, r, w, kind=kind, parent=parent, members=list(members))


def view(disks=(), nics=(), root=None, **kw) -> LiveView:
    v = LiveView(interval=1.0, disks=list(disks), nics=list(nics), root_device=root)
    v.cpu = CpuView(user=12.0, system=3.0, iowait=31.0, steal=4.0, idle=50.0, cpus=8)
    v.load = LoadAvg(2.5, 1.5, 1.0, 3, 400)
    v.memory = MemoryUse(total_kib=16 << 20, available_kib=4 << 20, cached_kib=2 << 20,
                         swap_total_kib=4 << 20, swap_free_kib=3 << 20, dirty_kib=300 << 10)
    v.pressure = {"cpu": Pressure("cpu", 5.0, 4.0, None, None),
                  "memory": Pressure("memory", 0.0, 0.0, 0.0, 0.0),
                  "io": Pressure("io", 42.0, 30.0, 35.0, 20.0)}
    hung = Unknown("statvfs timed out after 1 s")
    v.filesystems = [FsUse("/", "ext4", "/dev/vda1", "254:1", 100 << 30, 96 << 30, 4 << 30),
                     FsUse("/mnt/nfs", "nfs4", "srv:/x", "0:50", hung, hung, hung)]
    v.top_io, v.dstate = [], []
    v.processes = [process(pid) for pid in range(1, 120)]
    for k, val in kw.items():
        setattr(v, k, val)
    return v


def process(pid, cpu=0.0, rss=1000, io=0.0, dstate=0.0, comm="sleeper",
            cmdline="/usr/bin/sleeper --every 5s") -> ProcessRate:
    return ProcessRate(pid, comm, "root", "D" if dstate else "S", cpu, rss + pid, None, io, 0.0,
                       0.0, dstate, 1, cmdline)


def paint(v, width, height, reason=None) -> str:
    trends = Trends()
    if v is not None:
        for _ in range(5):
            trends.push(v)
    lines = dashboard.paint(dashboard.Ctx(v, trends, reason), width, height)
    assert all(line.cell_len <= width for line in lines), [line.cell_len for line in lines]
    return "\n".join(line.plain for line in lines)


def names(v) -> list[tuple[int, str]]:
    return [(depth, d.name) for depth, d in dashboard.disk_rows(v)]


def test_units_show_each_figure_in_the_unit_that_reads():
    assert units.latency_ms(0.05) == "50 µs"
    assert units.latency_ms(2.345) == "2.3 ms" and units.latency_ms(250) == "250 ms"
    assert units.latency_ms(12_500) == "12 s" and units.latency_ms(0) == "0"
    assert units.per_s(0.5) == "0.5" and units.per_s(1234) == "1.2k" and units.per_s(35_000) == "35k"
    assert units.bytes_s(123e6) == "123 MB/s" and units.bytes_s(999) == "999 B/s"
    assert units.size(256 << 30) == "256G" and units.size(1536 << 20) == "1.5G"


def test_root_disk_first_when_all_are_idle_and_idle_loops_hidden():
    v = view([disk("loop0", kind="loop"), disk("zram0", kind="zram"), disk("sda"),
              disk("vda"), disk("vda1", kind="part", parent="vda")], root="vda1")
    assert names(v) == [(0, "vda"), (0, "sda")]
    # a loop device that works is shown
    v.disks[0].r_s, v.disks[0].util = 50.0, 3.0
    assert (0, "loop0") in names(v)


def test_busy_disks_first_and_arrays_fold_their_members():
    v = view([disk("sda", util=95.0, r=300), disk("sda1", kind="part", parent="sda"),
              disk("sdb", util=10.0), disk("sdb1", kind="part", parent="sdb"),
              disk("md0", util=20.0, kind="md", members=["sda1", "sdb1"]),
              disk("nvme0n1", util=60.0, kind="nvme"),
              disk("dm-0", kind="dm", members=["md0"])], root="dm-0")
    # sda and sdb are wholly md members: they show under md0 only, md0 under dm-0
    assert names(v) == [(0, "nvme0n1"), (0, "dm-0"), (1, "md0"), (2, "sda1"), (2, "sdb1")]
    text = paint(v, 200, 50)
    assert "└ md0" in text and "└ sda1" in text


def test_figures_and_units_in_the_disk_and_nic_panels():
    v = view([disk("vda", util=42.0, r=1234, w=5, await_ms=0.05)],
             [NicRate("eth0", 12e6, 3e3, 0, 2.0, stalled=True, operstate="up"),
              NicRate("lo", 5e3, 5e3, operstate="unknown", carrier=True),
              NicRate("eth1", 0, 0, operstate="down")])
    text = paint(v, 200, 50)
    row = next(line for line in text.splitlines() if "vda " in line)
    assert "1.2k" in row and "50 µs" in row and "42.0%" in row
    nic = next(line for line in text.splitlines() if "eth0 " in line)
    assert "12.0 MB/s" in nic and "3.0 kB/s" in nic and "STALLED" in nic
    assert "down: eth1" in text                    # down NICs out of the rates
    assert not any(line.lstrip("│").startswith("lo ") for line in text.splitlines())


def test_memory_pressure_filesystems_and_a_timed_out_mount():
    text = paint(view([disk("vda")]), 200, 50)
    assert "75% 12G/16G" in text and "swap" in text and "1G/4G" in text
    assert "42.0% (35.0%)" in text                  # io pressure, some (full)
    assert "load 2.50 1.50 1.00" in text
    assert "96% 96G/100G" in text                   # fill as df's Use%
    assert "/mnt/nfs" in text and "statvfs timed out after 1 s" in text


def busy_view() -> LiveView:
    v = view([disk("vda", util=3.0), disk("sda", util=50.0, r=300)],
             [NicRate("eth0", 1e3, 1e3, operstate="up")])
    v.processes = [process(1, cpu=99.0, comm="busy", cmdline="/usr/bin/python3 -c loop"),
                   process(2, rss=9 << 20, comm="java", cmdline="/opt/jdk/bin/java -jar big.jar"),
                   process(3, io=12e6, comm="dd", cmdline="dd if=/dev/zero of=/x"),
                   *[process(pid) for pid in range(4, 300)]]
    v.dstate = [DStateProc(3, 3, "dd", "io_schedule", 12.0, 0.0)]
    return v


@pytest.mark.parametrize("size", [(80, 14), (80, 24), (100, 30), (120, 40), (200, 50),
                                  (300, 80), (60, 20)])
def test_every_size_has_every_panel_and_none_shows_rows_of_nothing(size):
    """Panels present by title, the CPU figures, the disks and NICs, the top CPU, memory and
    IO process each on a line and the D-state count; a panel at most two empty rows."""
    text = paint(busy_view(), *size)
    found = {p.title: p for p in panels(text)}
    assert set(found) == set(dashboard.TITLES), (sorted(found), text)
    for must in ("iow", "vda", "sda", "eth0", "python3 -c loop", "java -jar", "dd if=",
                 "1 in D state, longest 12 s (dd)"):
        assert must in text, (must, text)
    for panel in found.values():
        assert panel.blank_rows <= 2, (panel.title, panel.rows, text)


@pytest.mark.parametrize("size", [(80, 17), (100, 20), (120, 30), (200, 45)])
def test_the_panels_fit_the_rows_in_view_when_their_smallest_forms_do(size):
    """One line of PSI, of filesystem fill, of each top process: the 80x24 Overview keeps
    every panel on its first screen; bigger screens are filled exactly."""
    lines = paint(busy_view(), *size).splitlines()
    assert len(lines) <= size[1], (len(lines), "\n".join(lines))


@pytest.mark.parametrize("size", [(200, 50), (300, 80), (100, 60)])
def test_at_large_sizes_the_lists_get_the_rows(size):
    """The charts take what their data needs (a CPU state at zero one row); the disks show
    every member and the processes fill the rest of the rows in view."""
    v = busy_view()
    v.disks += [disk(f"sd{c}", kind="disk") for c in "bcdefgh"]
    lines = paint(v, *size).splitlines()
    assert len(lines) == size[1]
    text = "\n".join(lines)
    for name in ("sdb", "sdh"):
        assert name in text
    procs = next(p for p in panels(text) if p.title == "Processes")
    assert len(procs.rows) >= size[1] // 3, len(procs.rows)


@pytest.mark.parametrize("size", [(80, 24), (100, 20), (100, 30), (120, 30), (200, 45),
                                  (300, 80), (60, 20)])
def test_rows_the_processes_cannot_fill_go_to_the_charts(size):
    """/proc/[pid] timed out (a loaded host): the processes panel is its one reason line and
    the rows it leaves go to the charts above, not to empty screen under it."""
    v = busy_view()
    v.processes = Unknown("/proc/[pid] timed out after 1 s")
    lines = paint(v, *size).splitlines()
    text = "\n".join(lines)
    # at most two rows of nothing under the last panel: too few for the CPU chart's framed form
    assert size[1] - 2 <= len(lines) <= size[1], (len(lines), text)
    found = {p.title: p for p in panels(text)}
    assert set(found) == set(dashboard.TITLES), (sorted(found), text)
    assert [r.strip(" │") for r in found["Processes"].rows] == ["/proc/[pid] timed out after 1 s"]
    for panel in found.values():
        assert panel.blank_rows <= 2, (panel.title, panel.rows, text)


@pytest.mark.parametrize("size", [(80, 24), (100, 30), (100, 60), (200, 50), (300, 80)])
def test_rows_the_lists_cannot_fill_go_to_the_charts(size):
    """A quiet host: 70 processes, most of them kernel threads (no memory, no CPU), so the
    lists hold a few lines each. The panel is sized by what its lists show, not by how many
    processes there are, and the rows they leave go to the CPU chart (before: 9 of 50 rows
    empty under the processes at 200x50 on a fresh CI machine)."""
    v = busy_view()
    v.processes = [process(1, cpu=3.0, comm="tmux", cmdline="tmux"),
                   process(2, cpu=1.0, rss=9 << 20, comm="python3", cmdline="python3 -m x"),
                   *[process(pid) for pid in range(3, 10)],
                   *[ProcessRate(pid, f"kworker/{pid}", "root", "I", 0.0, 0, None, 0.0, 0.0,
                                 0.0, 0.0, 1, "") for pid in range(10, 71)]]
    lines = paint(v, *size).splitlines()
    text = "\n".join(lines)
    assert size[1] - 2 <= len(lines) <= size[1], (len(lines), text)
    procs = next(p for p in panels(text) if p.title == "Processes")
    assert procs.blank_rows <= 2, (procs.rows, text)
    assert "kworker" not in text      # a kernel thread has no memory to rank


def test_without_live_data_each_panel_says_why():
    text = paint(None, 120, 40, reason="capture: no live data")
    assert text.count("capture: no live data") >= 4
    text = paint(None, 120, 40, reason="live sampling timed out after 2 s")
    assert "live sampling timed out after 2 s" in text and "collecting" not in text


def test_unknown_parts_show_their_reason():
    v = view(pressure=Unknown("no PSI in this kernel"), memory=Unknown("permission denied"),
             filesystems=Unknown("capture: no filesystem fill"),
             processes=Unknown("needs root"), disks_error="unknown (timed out after 2 s)")
    text = paint(v, 200, 50)
    for reason in ("no PSI in this kernel", "permission denied", "no filesystem fill",
                   "needs root", "timed out after 2 s"):
        assert reason in text, reason
