"""Benchmark: `inspector fleet` over 500 hosts' snapshots (goal: under 5 s).

The snapshots are real `inspector snapshot` outputs (five fixture roots and this host, with a
short IO probe run), copied to 500 hosts in Ansible's fetch layout (DIR/<host>/var/tmp/
inspector.json) with their own hostnames and times. Timed, as an operator runs them (the real
binary, interpreter start-up included, median of three runs): the table, --json, --level warn
--where virt=xen, and `fleet BEFORE AFTER` (500 per-host diffs, AFTER with one host in ten
changed). Printed: each figure, peak memory, the bytes read, and whether the goal is met.

Run: `.venv/bin/python tests/bench/bench_fleet.py [--hosts N]` (or `make bench`).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
ROOTS = ["flash-mixed", "storage-raid1-recovering", "net-errors", "xen-pv-guest",
         "nvme-bare-metal"]
GOAL_S = 5.0


def inspector_bin() -> str:
    exe = Path(sys.executable).parent / "inspector"
    return str(exe) if exe.exists() else "inspector"


def real_snapshots(directory: Path) -> list[dict]:
    docs = []
    for name in ROOTS:
        out = directory / f"{name}.json"
        subprocess.run([inspector_bin(), "snapshot", "--root", str(REPO / "tests/fixtures/roots" / name),
                        "-o", str(out)], check=True, capture_output=True)
        docs.append(json.loads(out.read_text()))
    out = directory / "live.json"
    subprocess.run([inspector_bin(), "snapshot", "-o", str(out), "--probe", f"io:{directory}",
                    "--probe-seconds", "0.5"], check=True, capture_output=True)
    docs.append(json.loads(out.read_text()))
    return docs


def lay_out(directory: Path, sources: list[dict], hosts: int, changed_every: int = 0) -> int:
    """`hosts` snapshots in the fetch layout; returns the bytes written."""
    written = 0
    now = time.time()
    for i in range(hosts):
        doc = json.loads(json.dumps(sources[i % len(sources)]))
        name = f"host{i:04d}.example.net"
        doc["report"]["host"]["hostname"] = name
        doc["created_at"] = now - (i % 97) * 60
        if changed_every and i % changed_every == 0:       # one host in N: a new crit finding
            doc["report"]["findings"].insert(0, {"level": "crit", "subject": "md0",
                                                 "message": "md array md0 is degraded",
                                                 "evidence": [], "advice": "",
                                                 "code": "md.degraded"})
        path = directory / name / "var/tmp/inspector.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        data = json.dumps(doc, indent=1)
        path.write_text(data)
        written += len(data)
    return written


def timed(argv: list[str], runs: int = 3) -> tuple[float, int, int, int]:
    """Median wall seconds of `runs` runs, the exit status, the output's line count and the
    largest peak RSS (KiB) of the runs."""
    times, status, lines, rss = [], 0, 0, 0
    for _ in range(runs):
        start = time.perf_counter()
        with tempfile.TemporaryFile() as out:
            proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.PIPE,
                                    env={**os.environ, "COLUMNS": "160"})
            assert proc.stderr is not None      # stderr=PIPE
            err = proc.stderr.read()
            _pid, wait_status, usage = os.wait4(proc.pid, 0)
            times.append(time.perf_counter() - start)
            proc.returncode = status = os.waitstatus_to_exitcode(wait_status)
            rss = max(rss, usage.ru_maxrss)
            out.seek(0)
            lines = out.read().count(b"\n")
        if status not in (0, 1):
            raise SystemExit(f"{' '.join(argv)}: exit {status}: {err.decode().strip()}")
    return statistics.median(times), status, lines, rss


def bench(hosts: int) -> bool:
    with tempfile.TemporaryDirectory(prefix="bench-fleet-") as tmp:
        tmp_path = Path(tmp)
        sources = real_snapshots(tmp_path)
        before, after = tmp_path / "before", tmp_path / "after"
        size = lay_out(before, sources, hosts)
        lay_out(after, sources, hosts, changed_every=10)
        print(f"{hosts} hosts, {size / 1e6:.1f} MB of snapshots "
              f"({size / hosts / 1e3:.0f} KB each, from {len(sources)} real snapshots)")
        ok = True
        for label, args in (("fleet DIR", [str(before)]),
                            ("fleet DIR --json", [str(before), "--json"]),
                            ("fleet DIR --level warn --where virt=xen",
                             [str(before), "--level", "warn", "--where", "virt=xen"]),
                            ("fleet BEFORE AFTER", [str(before), str(after)])):
            seconds, status, lines, rss = timed([inspector_bin(), "fleet", *args])
            met = seconds < GOAL_S
            ok &= met
            print(f"  {label:42s} {seconds:6.2f} s  ({seconds / hosts * 1000:.2f} ms/host, "
                  f"peak RSS {rss / 1024:.0f} MiB, exit {status}, {lines} lines)  "
                  f"goal {GOAL_S:g} s {'met' if met else 'MISSED'}")
        return ok


def test_bench_fleet():
    assert bench(500)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, default=500)
    sys.exit(0 if bench(parser.parse_args().hosts) else 1)
