"""The live rules on a fixture host whose counter files the test advances between samples
(the faults this VM cannot make: steal, NIC errors and drops, carrier flaps, softnet drops,
a slow md member, an md resync, an OOM kill, swap-in, dirty pages growing, a disk's await
regression): each finding appears within its window, names its culprit, has `since`, and
ends (kept, with `ended`) once the counters go quiet."""
from __future__ import annotations

import dataclasses

import pytest

from inspector.config import LiveThresholds
from inspector.live.findings import LiveFinding
from live_host import T0, LiveHost, codes


@pytest.fixture
def host(tmp_path):
    return LiveHost(tmp_path / "root")


def run(host, session, steps, fault=None, quiet=None):
    """`steps` samples with fault(host) applied before each (quiet(host) otherwise)."""
    last = None
    for _ in range(steps):
        (fault or quiet or (lambda h: None))(host)
        last = host.step(session)
    return last


def idle(h):
    h.cpu_spend(user=5)


def test_steal_names_the_hypervisor_and_ends(host):
    session = host.session(hypervisor="xen (HVM, aws)")
    host.step(session)
    step = run(host, session, 4, lambda h: h.cpu_spend(user=40, steal=35))
    found = codes(step)[("live.cpu.steal", "cpu")]
    assert found.finding.level.name == "CRIT" and "35% of CPU time stolen by xen (HVM, aws)" \
        in found.finding.message
    assert found.since == T0 + 4          # began at the first sample the window was full
    step = run(host, session, 6, idle)
    gone = codes(step, active=False)[("live.cpu.steal", "cpu")]
    assert gone.ended is not None and gone.ended > gone.since and gone.worst.name == "CRIT"
    assert "ended" in gone.as_finding().message


def test_nic_errors_drops_and_softnet(host):
    host.add_nic("eth0")
    session = host.session()
    host.step(session)

    def fault(h):
        idle(h)
        h.nic_add("eth0", "rx_errors", 5)
        h.nic_add("eth0", "rx_dropped", 50)
        h.softnet[1] += 20
        h.softnet[2] += 3
    step = run(host, session, 4, fault)
    found = codes(step)
    assert "5.0 errors/s" in found[("live.nic.errors", "eth0")].finding.message
    assert "dropping 50.0 packets/s" in found[("live.nic.drops", "eth0")].finding.message
    assert "softnet backlog dropping 20.0" in found[("live.net.softnet_drops", "net")].finding.message
    step = run(host, session, 6, idle)
    assert not codes(step)
    assert {k[0] for k in codes(step, active=False)} >= {"live.nic.errors", "live.nic.drops",
                                                         "live.net.softnet_drops"}


def test_carrier_flaps(host):
    host.add_nic("eth1")
    session = host.session()
    host.step(session)
    for up in (False, True, False, True):
        host.carrier("eth1", up)
        idle(host)
        step = host.step(session)
    flap = codes(step)[("live.nic.carrier_flaps", "eth1")]
    # the first state the rules see is the first sample's (down): three changes after it
    assert "changed 3 times" in flap.finding.message and "(now up)" in flap.finding.message


def test_slow_md_member_is_named(host):
    host.add_disk("md0", ["sda", "sdb", "sdc"], major=9, minor=0)
    for name in ("sda", "sdb", "sdc"):
        host.add_disk(name)
    session = host.session()
    host.step(session)

    def fault(h):
        idle(h)
        h.disk_io("md0", 300, 35)
        h.disk_io("sda", 100, 2, 200)
        h.disk_io("sdb", 100, 3, 300)
        h.disk_io("sdc", 100, 100, 1000)
    step = run(host, session, 4, fault)
    slow = codes(step)[("live.md.slow_member", "sdc")]
    assert "sdc of md0 is slow: await 100.0 ms against 2.5 ms" in slow.finding.message
    assert ("live.md.slow_member", "sda") not in codes(step)
    # sdc is also saturated (100 % util) and its await regressed? no baseline yet: only util
    assert ("live.disk.saturated", "sdc") in codes(step)


def test_await_regression_against_the_devices_own_baseline(host):
    host.add_disk("vdb")
    session = host.session()
    host.step(session)
    run(host, session, 12, lambda h: (idle(h), h.disk_io("vdb", 50, 0.5, 30)))
    assert not codes(host.step(session))
    step = run(host, session, 4, lambda h: (idle(h), h.disk_io("vdb", 50, 80, 400)))
    reg = codes(step)[("live.disk.await_regression", "vdb")]
    assert "await 80.0 ms" in reg.finding.message and "baseline of 0.50 ms" in reg.finding.message
    step = run(host, session, 6, lambda h: (idle(h), h.disk_io("vdb", 50, 0.5, 30)))
    assert ("live.disk.await_regression", "vdb") in codes(step, active=False)


def test_md_resync_starts_reports_speed_and_eta_stalls_and_ends(host):
    host.add_disk("md1", ["sdd", "sde"], major=9, minor=1)
    md = "sys/block/md1/md"
    host.write(f"{md}/sync_action", "idle\n")
    host.write(f"{md}/sync_completed", "none\n")
    host.write(f"{md}/sync_speed", "none\n")
    host.write(f"{md}/degraded", "1\n")
    session = host.session(LiveThresholds(disk=dataclasses.replace(
        LiveThresholds().disk, md_stall_s=3)))
    host.step(session)
    assert not codes(host.step(session))
    host.write(f"{md}/sync_action", "recover\n")
    done = 0
    for _ in range(3):
        done += 20480                      # 10 MiB/s in sectors
        host.write(f"{md}/sync_completed", f"{done} / 2048000\n")
        host.write(f"{md}/sync_speed", "10240\n")
        step = host.step(session)
    sync = codes(step)[("live.md.resync", "md1")]
    assert sync.finding.level.name == "WARN"
    assert "recover of md1 at 3.0%, 10.0 MiB/s, done in" in sync.finding.message
    began = sync.since
    for _ in range(5):                     # no progress: stalled
        step = host.step(session)
    stalled = codes(step)[("live.md.resync", "md1")]
    assert stalled.since == began and "stalled at 3.0%" in stalled.finding.message
    assert stalled.finding.level.name == "CRIT"
    host.write(f"{md}/sync_action", "idle\n")
    host.write(f"{md}/sync_completed", "none\n")
    step = host.step(session)
    assert codes(step, active=False)[("live.md.resync", "md1")].ended == T0 + host.clock


def test_resync_from_mdstat_when_sysfs_lacks_it(host):
    host.add_disk("md2", ["sdf", "sdg"], major=9, minor=2)
    (host.path / "sys/block/md2/md").mkdir(parents=True)
    host.write("proc/mdstat", "Personalities : [raid1]\nmd2 : active raid1 sdg[1] sdf[0]\n"
               "      1048576 blocks [2/1] [U_]\n      [==>..]  recovery = 12.5% "
               "(131072/1048576) finish=1.5min speed=10240K/sec\n")
    session = host.session()
    host.step(session)
    step = host.step(session)
    sync = codes(step)[("live.md.resync", "md2")]
    assert "recover of md2 at 12.5%, 10.0 MiB/s, done in 90 s" in sync.finding.message


def test_oom_kill_names_the_victim_from_the_kernel_log(host):
    host.kmsg = ["6,100,5000,-;Out of memory: Killed process 77 (old) total-vm:1kB"]
    host.vmstat["oom_kill"] = 1
    session = host.session()
    host.step(session)
    host.step(session)                     # the old kill is not news
    assert not codes(host.step(session))
    host.vmstat["oom_kill"] = 2
    host.kmsg.append("3,101,6000,-;Out of memory: Killed process 4321 (java) total-vm:9000kB, "
                     "anon-rss:2097152kB, file-rss:0kB")
    step = host.step(session)
    oom = codes(step)[("live.mem.oom_kill", "memory")]
    assert oom.finding.level.name == "CRIT"
    assert "killed 1 process: java (pid 4321, 2048 MiB resident)" in oom.finding.message
    step = run(host, session, 7, idle)
    assert ("live.mem.oom_kill", "memory") in codes(step, active=False)


def test_swapin_majfaults_and_dirty_growing(host):
    session = host.session()
    host.step(session)

    def fault(h):
        idle(h)
        h.vmstat["pswpin"] += 500
        h.vmstat["pgmajfault"] += 900
        h.vmstat["nr_dirty"] += 40000       # pages: ~156 MiB a second
    step = run(host, session, 8, fault)
    found = codes(step)
    assert "swapping in 500 pages/s" in found[("live.mem.swapin", "memory")].finding.message
    assert "900 major page faults/s" in found[("live.mem.majfault", "memory")].finding.message
    assert "and growing" in found[("live.mem.dirty_growing", "memory")].finding.message


def test_dstate_tasks_grouped_by_device_with_wait_point_and_longest_wait(host):
    host.add_disk("loop9", major=7, minor=9)
    for pid, comm in ((500, "dd"), (501, "dd")):
        host.write(f"proc/{pid}/stat", f"{pid} ({comm}) D 1 1 1 0 -1 4194304 0 0 0 0 0 0 0 0 "
                   "20 0 1 0 5000 1000 10 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n")
        host.write(f"proc/{pid}/status", "Name:\tdd\nUid:\t0\t0\t0\t0\n"
                   "voluntary_ctxt_switches:\t7\nnonvoluntary_ctxt_switches:\t1\n")
        host.write(f"proc/{pid}/wchan", "submit_bio_wait\n")
        host.write(f"proc/{pid}/stack", "[<0>] submit_bio_wait+0x74/0xc0\n"
                   "[<0>] __blkdev_direct_IO_simple+0x113/0x260\n")
        host.write(f"proc/{pid}/cmdline", "dd\0of=/dev/loop9\0")
        (host.path / f"proc/{pid}/fd").mkdir(parents=True)
        os_symlink(host.path / f"proc/{pid}/fd/1", "/dev/loop9")
    host.blocked = 2
    session = host.session()
    host.step(session)
    step = run(host, session, 6, idle)
    found = codes(step)[("live.tasks.dstate", "loop9")]
    msg = found.finding.message
    assert msg.startswith("2 tasks in D state on loop9, longest 6 s (dd, pid 500)")
    assert "waiting in submit_bio_wait (2)" in msg
    # the processes table shows the same time in D, user and command line
    procs = {p.pid: p for p in step.sample.processes}
    assert procs[500].dstate_s == pytest.approx(6) and procs[500].user == "root"
    assert procs[500].cmdline == "dd of=/dev/loop9"


def os_symlink(link, target):
    import os
    os.symlink(target, link)


def test_iowait_names_the_device_the_d_tasks_wait_on(host):
    host.add_disk("loop9", major=7, minor=9)
    host.write("proc/600/stat", "600 (dd) D 1 1 1 0 -1 4194304 0 0 0 0 0 0 0 0 20 0 1 0 5000 "
               "1000 10 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n")
    (host.path / "proc/600/fd").mkdir(parents=True)
    os_symlink(host.path / "proc/600/fd/3", "/dev/loop9")
    session = host.session()
    host.step(session)
    step = run(host, session, 4, lambda h: h.cpu_spend(user=5, iowait=45))
    iowait = codes(step)[("live.cpu.iowait", "cpu")]
    assert "45% of CPU time waiting for IO" in iowait.finding.message
    assert "behind it loop9 (1 task in D on it)" in iowait.finding.message


def test_filesystem_fill_inodes_and_time_to_full(host):
    from inspector.health.live.engine import LiveRules
    from inspector.live.filesystems import FsUse
    session = host.session()
    host.step(session)
    base = host.step(session).sample
    rules = LiveRules()
    gib = 1 << 30
    found: dict[tuple[str, str], LiveFinding] = {}
    for i in range(8):      # /data: 96 % full and 1 GiB a second more; /var: inodes at 97 %
        data = FsUse("/data", "xfs", "/dev/vdb", "252:16", 100 * gib, (90 + i) * gib,
                     (10 - i) * gib, 12.0)
        var = FsUse("/var", "ext4", "/dev/vda2", "252:2", 10 * gib, gib, 9 * gib, 97.0)
        sample = dataclasses.replace(base, wall=T0 + 10 + i, filesystems=[data, var],
                                     filesystems_wall=T0 + 10 + i,
                                     fs_devices={"/data": "vdb", "/var": "vda"})
        found = {(lf.finding.code, lf.finding.subject): lf for lf in rules.update(sample)
                 if lf.active}
    fill = found[("live.fs.fill", "/data")].finding
    assert fill.level.name == "CRIT" and "/data 97% full" in fill.message and "(vdb, xfs)" in fill.message
    ttf = found[("live.fs.time_to_full", "/data")].finding
    assert ttf.level.name == "CRIT" and "/data full in 3 s at the current rate (1.0 GiB/s" in ttf.message
    inodes = found[("live.fs.inodes", "/var")].finding
    assert inodes.level.name == "CRIT" and "97% of inodes used" in inodes.message
    assert ("live.fs.fill", "/var") not in found


def test_without_psi_memory_pressure_is_judged_from_memavailable_and_says_so(host):
    assert not (host.path / "proc/pressure").exists()
    session = host.session()
    host.step(session)
    assert not codes(run(host, session, 4, idle))             # 75 % available: nothing
    host.write("proc/meminfo", "MemTotal: 8000000 kB\nMemAvailable: 200000 kB\n")
    step = run(host, session, 4, idle)
    found = codes(step)[("live.mem.pressure", "memory")].finding
    assert "195 MiB available of 7812 MiB (no PSI in this kernel: judged from MemAvailable)" \
        in found.message
    assert any("no PSI in this kernel" in e for e in found.evidence)
