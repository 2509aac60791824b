"""The processes sampler on a fixture tree advanced between samples: CPU % over the
interval (threads folded: the process's stat sums them), RSS, VmSwap, IO bytes/s, major
faults, user names from the root's passwd, command lines redacted as captures are, kernel
threads, sorting, and a reused pid."""
from __future__ import annotations

import pytest

from inspector.live.processes import (
    CLK_TCK,
    PAGE_KIB,
    SortKey,
    parse_stat_fields,
    sort_processes,
    top_processes,
)
from live_host import LiveHost


def stat(pid, comm, state="S", utime=0, stime=0, majflt=0, rss_pages=100, threads=1,
         start=5000, flags=4194304):
    return (f"{pid} ({comm}) {state} 1 1 1 0 -1 {flags} 0 0 {majflt} 0 {utime} {stime} 0 0 "
            f"20 0 {threads} 0 {start} 1000 {rss_pages} 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n")


def put(host, pid, comm, *, uid=0, swap=0, io=(0, 0), cmdline=None, **kw):
    host.write(f"proc/{pid}/stat", stat(pid, comm, **kw))
    host.write(f"proc/{pid}/status", f"Name:\t{comm}\nUid:\t{uid}\t{uid}\t{uid}\t{uid}\n"
               f"VmSwap:\t{swap} kB\nvoluntary_ctxt_switches:\t1\nnonvoluntary_ctxt_switches:\t1\n")
    host.write(f"proc/{pid}/io", f"rchar: 0\nwchar: 0\nsyscr: 0\nsyscw: 0\nread_bytes: {io[0]}\n"
               f"write_bytes: {io[1]}\ncancelled_write_bytes: 0\n")
    if cmdline is not None:
        host.write(f"proc/{pid}/cmdline", "\0".join(cmdline) + "\0")


@pytest.fixture
def host(tmp_path):
    return LiveHost(tmp_path / "root")


def test_rates_users_redaction_and_sorting(host):
    put(host, 10, "mysqld", uid=27, threads=40, rss_pages=50000, swap=2048,
        cmdline=["/usr/sbin/mysqld", "--user=mysql", "--password", "hunter2"])
    put(host, 11, "backup", cmdline=["rsync", "rsync://bob:s3cret@host/x", "/srv"])
    put(host, 2, "kthreadd", flags=0x00200000 | 0x40, rss_pages=0)
    session = host.session()
    host.step(session)
    # one second: mysqld used 1.5 CPUs (all threads), backup wrote 4 MiB and read 1 MiB
    put(host, 10, "mysqld", uid=27, threads=40, rss_pages=50000, swap=2048,
        utime=int(1.2 * CLK_TCK), stime=int(0.3 * CLK_TCK), majflt=30)
    put(host, 11, "backup", io=(1 << 20, 4 << 20), utime=2)
    step = host.step(session)
    procs = {p.pid: p for p in step.sample.processes}
    db = procs[10]
    assert db.cpu_pct == pytest.approx(150.0) and db.threads == 40 and db.user == "mysql"
    assert db.rss_kib == 50000 * PAGE_KIB and db.swap_kib == 2048 and db.majflt_s == 30
    assert db.cmdline == "/usr/sbin/mysqld --user=mysql --password <redacted>"
    backup = procs[11]
    assert (backup.read_bytes_s, backup.write_bytes_s) == (1 << 20, 4 << 20)
    assert backup.cmdline == "rsync rsync://<redacted>@host/x /srv"
    kthread = procs[2]
    assert kthread.cmdline == "[kthreadd]" and kthread.swap_kib is None
    assert kthread.read_bytes_s is None
    assert [p.pid for p in sort_processes(step.sample.processes, "cpu")][:2] == [10, 11]
    assert sort_processes(step.sample.processes, SortKey.IO)[0].pid == 11
    assert sort_processes(step.sample.processes, SortKey.MEM)[0].pid == 10
    assert {p.pid for p in top_processes(step.sample.processes, 1)} == {10, 11}


def test_a_reused_pid_starts_from_zero(host):
    put(host, 20, "old", utime=1000, io=(0, 1 << 30))
    session = host.session()
    host.step(session)
    put(host, 20, "new", utime=5, start=9999, io=(0, 10))   # same pid, another process
    step = host.step(session)
    new = step.sample.processes[0]
    assert new.comm == "new" and new.cpu_pct == 0 and new.write_bytes_s == 0


def test_unparsable_stat_is_skipped():
    assert parse_stat_fields(1, b"1 (x) S 1 2") is None
    assert parse_stat_fields(1, b"garbage") is None
    st = parse_stat_fields(7, stat(7, "a) b (c").encode())
    assert st is not None and st.comm == "a) b (c"
