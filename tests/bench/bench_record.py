"""Benchmark: the cost of `inspector record --samples` against its budgets.

1. Database size: an hour of 10 s intervals from a synthetic host with 20 block devices and 8
   NICs whose counters all move every interval (the worst case: idle devices cost nothing),
   written as fast as it goes, extrapolated to a day. Budget: 20 MB a day.
2. CPU: the real recorder, `--samples --sample-every 1s`, on this machine with 20 more loop
   devices (fio on four of them) and 8 veth NICs carrying traffic in a private network
   namespace. CPU of the recorder and its children over the steady state (the first findings
   tick excluded) per interval, as a share of one core at a 10 s interval; plus the findings
   tick every 5 minutes (`record --once`'s CPU / 300 s). Budget: 0.5% of one core.
3. A week of intervals (60,480 at 10 s, 20 disks, 8 NICs): how long `inspector top --db FILE
   --from TIME --count 1` takes from exec to exit, and the TUI timeline's opening (the list
   of intervals, the markers, the view at the cursor and its trends). Budget: 1 s.

Run as root: `.venv/bin/python tests/bench/bench_record.py [--seconds 30] [--skip-cpu]`.
"""
from __future__ import annotations

import argparse
import contextlib
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent), str(HERE.parent / "recording")]

from inspector.live import rates  # noqa: E402
from inspector.record.history import HistoryDB  # noqa: E402
from inspector.record.store import SampleWriter, used_bytes  # noqa: E402
from synthetic import START, SyntheticHost  # noqa: E402

STEP = 10.0
DAY = 86400 / STEP
SIZE_BUDGET_MB = 20.0
CPU_BUDGET = 0.5            # percent of one core
OPEN_BUDGET_S = 1.0
INSPECTOR = str(Path(sys.executable).parent / "inspector")


def write_intervals(path: str, count: int, busy: float = 1.0, batch: int = 1) -> float:
    """`count` synthetic intervals into a new database; returns the seconds it took."""
    for suffix in ("", "-wal", "-shm"):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path + suffix)
    host = SyntheticHost(disks=20, nics=8, busy=busy)
    start = time.perf_counter()
    with HistoryDB(path) as db:
        writer = SampleWriter(db.conn)
        prev = host.snapshot(0.0)
        i = 0
        while i < count:
            with db.writing("bench"):
                for _ in range(min(batch, count - i)):
                    i += 1
                    cur = host.snapshot(i * STEP)
                    writer.append(prev, cur, rates(prev, cur), 3600)
                    prev = cur
        db.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return time.perf_counter() - start


def bench_size(tmp: str) -> bool:
    ok = True
    for busy, label in ((1.0, "every device busy"), (0.3, "30% of devices busy")):
        path = os.path.join(tmp, f"size-{busy}.sqlite")
        seconds = write_intervals(path, 360, busy)
        with HistoryDB(path, create=False) as db:
            used = used_bytes(db.conn)
        per_day = used / 360 * DAY / 1e6
        print(f"size ({label}): an hour = {used / 1e6:.2f} MB ({used / 360:.0f} B/interval, "
              f"written in {seconds:.1f} s) -> {per_day:.1f} MB/day "
              f"(budget {SIZE_BUDGET_MB:g}) {'ok' if per_day <= SIZE_BUDGET_MB else 'OVER'}")
        ok &= per_day <= SIZE_BUDGET_MB
    return ok


# ------------------------------------------------------------------------------ CPU
def proc_cpu(pid: int) -> float:
    """utime+stime of `pid`, its reaped children, and its live children (seconds)."""
    tick = os.sysconf("SC_CLK_TCK")

    def fields(p: int) -> list[str]:
        with open(f"/proc/{p}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()

    total = 0.0
    own = fields(pid)
    total += sum(int(v) for v in own[11:15]) / tick      # utime stime cutime cstime
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            f = fields(int(entry))
        except OSError:
            continue
        if int(f[1]) == pid:                               # a live child of the recorder
            total += sum(int(v) for v in f[11:13]) / tick
    return total


@contextlib.contextmanager
def loops(tmp: str, count: int):
    devs = []
    try:
        for i in range(count):
            backing = os.path.join(tmp, f"loop{i}.img")
            with open(backing, "wb") as f:
                f.truncate(32 << 20)
            devs.append(subprocess.run(["losetup", "--find", "--show", backing],
                                       capture_output=True, text=True, check=True).stdout.strip())
        yield devs
    finally:
        for dev in devs:
            subprocess.run(["losetup", "-d", dev], check=False)


@contextlib.contextmanager
def eight_nics():
    a, b = f"benchrec{os.getpid()}a", f"benchrec{os.getpid()}b"
    run = lambda *argv: subprocess.run(argv, check=True, capture_output=True)  # noqa: E731
    run("ip", "netns", "add", a)
    run("ip", "netns", "add", b)
    senders = []
    try:
        for i in range(8):
            run("ip", "-n", a, "link", "add", f"va{i}", "type", "veth", "peer", "name",
                f"vb{i}", "netns", b)
            run("ip", "-n", a, "addr", "add", f"10.78.{i}.1/24", "dev", f"va{i}")
            run("ip", "-n", b, "addr", "add", f"10.78.{i}.2/24", "dev", f"vb{i}")
            run("ip", "-n", a, "link", "set", f"va{i}", "up")
            run("ip", "-n", b, "link", "set", f"vb{i}", "up")
        run("ip", "-n", a, "link", "set", "lo", "up")
        sender = ("import socket,time\ns=socket.socket(socket.AF_INET,socket.SOCK_DGRAM)\n"
                  "while True:\n for i in range(8): s.sendto(b'x'*500,(f'10.78.{i}.1',9))\n"
                  " time.sleep(0.01)\n")
        senders.append(subprocess.Popen(["ip", "netns", "exec", b, sys.executable, "-c",
                                         sender]))
        yield a
    finally:
        for p in senders:
            p.kill()
            p.wait()
        subprocess.run(["ip", "netns", "del", b], check=False)
        subprocess.run(["ip", "netns", "del", a], check=False)


def bench_cpu(tmp: str, seconds: float) -> bool:
    db = os.path.join(tmp, "cpu.sqlite")
    with loops(tmp, 20) as devs, eight_nics() as netns:
        fio = subprocess.Popen(
            ["fio", "--name=load", "--rw=randread", "--bs=4k", "--direct=1", "--thread",
             "--ioengine=psync", "--rate_iops=200", "--time_based", f"--runtime={seconds + 60}",
             f"--filename={':'.join(devs[:4])}"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        proc = subprocess.Popen(["ip", "netns", "exec", netns, INSPECTOR, "record",
                                 "--samples", "--sample-every", "1s", "--every", "1h",
                                 "--db", db], stderr=subprocess.PIPE, text=True)
        try:
            line = ""
            assert proc.stderr is not None           # stderr=PIPE
            while "sample 1:" not in line:           # the first findings tick is done
                line = proc.stderr.readline()
                if not line:
                    raise SystemExit("recorder ended early")
            time.sleep(2.0)
            c0, t0 = proc_cpu(proc.pid), time.monotonic()
            time.sleep(seconds)
            c1, t1 = proc_cpu(proc.pid), time.monotonic()
        finally:
            proc.terminate()
            proc.wait(timeout=30)
            fio.kill()
            fio.wait()
        intervals = t1 - t0               # one a second
        per_interval = (c1 - c0) / intervals
        once = subprocess.run(["/usr/bin/time", "-f", "%U %S", "ip", "netns", "exec", netns,
                               INSPECTOR, "record", "--once", "--db",
                               os.path.join(tmp, "once.sqlite")],
                              capture_output=True, text=True)
        tick = sum(float(v) for v in once.stderr.strip().splitlines()[-1].split())
    share = per_interval / STEP * 100
    ticks = tick / 300 * 100
    print(f"cpu: {per_interval * 1e3:.1f} ms per interval ({len(devs) + 11} block devices, "
          f"9 NICs in the namespace) -> {share:.3f}% of a core at 10 s; findings tick "
          f"{tick:.2f} s every 5 min -> {ticks:.3f}%; total {share + ticks:.3f}% "
          f"(budget {CPU_BUDGET:g}%) {'ok' if share + ticks <= CPU_BUDGET else 'OVER'}")
    return share + ticks <= CPU_BUDGET


# ------------------------------------------------------------------------------ a week
def bench_week(tmp: str) -> bool:
    path = os.path.join(tmp, "week.sqlite")
    count = int(7 * DAY)
    seconds = write_intervals(path, count, busy=1.0, batch=360)
    size = os.path.getsize(path)
    print(f"week: {count} intervals written in {seconds:.0f} s, {size / 1e6:.0f} MB")
    middle = START + count / 2 * STEP
    timings = []
    for _ in range(3):
        start = time.perf_counter()
        res = subprocess.run([INSPECTOR, "top", "--db", path, "--from", f"@{middle}",
                              "--count", "1"], capture_output=True, text=True)
        timings.append(time.perf_counter() - start)
        assert res.returncode == 0 and "recorded" in res.stdout, res.stderr
    cli = min(timings)
    start = time.perf_counter()
    res = subprocess.run([INSPECTOR, "history", "--db", path, "--samples"], capture_output=True,
                         text=True)
    hist = time.perf_counter() - start
    assert res.returncode == 0, res.stderr
    opened = timeline_open(path, middle)
    ok = cli <= OPEN_BUDGET_S and (opened is None or opened <= OPEN_BUDGET_S)
    print(f"week: top --db --from (middle) --count 1: {cli:.2f} s from exec to exit; "
          + (f"TUI timeline open at the middle: {opened:.2f} s; " if opened is not None else "")
          + f"(budget {OPEN_BUDGET_S:g} s) {'ok' if ok else 'OVER'}; "
          f"history --samples over the week: {hist:.2f} s")
    return ok


def timeline_open(path: str, at: float) -> float | None:
    try:
        from inspector.tui.timeline import RecordedTimeline
    except ImportError:
        return None
    start = time.perf_counter()
    timeline = RecordedTimeline.open(path, at)
    timeline.view()
    timeline.trends()
    elapsed = time.perf_counter() - start
    timeline.close()
    return elapsed


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=30.0, help="CPU measurement window")
    ap.add_argument("--skip-cpu", action="store_true")
    ap.add_argument("--skip-week", action="store_true")
    args = ap.parse_args()
    ok = True
    with tempfile.TemporaryDirectory(prefix="bench-record-") as tmp:
        ok &= bench_size(tmp)
        if not args.skip_cpu:
            if os.geteuid() != 0:
                raise SystemExit("the CPU part needs root (loop devices, network namespaces)")
            ok &= bench_cpu(tmp, args.seconds)
        if not args.skip_week:
            ok &= bench_week(tmp)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
