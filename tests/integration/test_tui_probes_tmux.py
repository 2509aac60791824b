"""The Probes screen of the real binary in tmux (issue 20): a memcached run measures the same
while the operator flips screens and resizes the window as when the screen is left alone (and
as the CLI). The runs' outcomes and memory: test_tui_probe_runs_tmux.py.

The throughput is read from memcached's own counters, not from the code under test, in
alternating windows of one run: about a second left alone, about a second flipping screens
every 0.3 s with a resize every third key, a moment to settle, and again. Two separate runs
(left alone, then busy) differed by up to 30 % here with no UI work at all: this 2-core VM's
throughput drifts and dips by itself. Alternating inside one run cancels the drift; medians
of the windows drop the dips."""
from __future__ import annotations

import json
import re
import statistics
import subprocess
import time

import pytest

from conftest import inspector_bin
from memcached_server import MemcachedServer
from slowness import factor, slack
from tmux_session import Tmux

# alone, after the parallel part of `make test`: measures a load's throughput with and without the UI busy
pytestmark = pytest.mark.serial

# the run left alone, and the CLI's: references for the p99 bound (a stall shows as tens of
# ms against ~0.2 ms) and the ops count; 2 s is 60k+ requests (CLI runs of 3 and 5 s side
# by side here: p99 256 and 245 µs)
SECONDS = 2
SIZES = ((200, 50), (80, 24), (120, 40), (100, 30))
UNITS = {"ns": 1e-9, "µs": 1e-6, "ms": 1e-3, "s": 1.0}
ROUNDS = 6                  # window pairs in one alternating run (17 s; MAX_RUNS pools more)
QUIET_S = BUSY_S = 1.0      # a busy window runs on to its last key's FLIP_S: 4 keys, 1 resize
SETTLE_S = 0.5              # after a busy window: its last redraws are not the next quiet one's
FLIP_S = 0.3
BUDGET = 0.90               # issue 20: ops/s within 10 % of the run left alone
# ... on a machine with CPU to spare. Where other work already takes every core (two busy loops
# beside the suite on 2 cores: ratios 0.70-0.79), each redraw's CPU comes out of memcached's
# and the load's share, whoever does it; a stalled load (the UI's own work in its way) would
# still show far below this, and in the max latency bound
LOADED_BUDGET = 0.60
LOADED = 1.5                # slowness factor from which the machine has no CPU to spare
MAX_RUNS = 3                # another alternating run while the pooled windows are short of the
                            # budget: they decide (A/A, no UI work at all, varied ±6 % here)


def seconds_of(text: str) -> float:
    m = re.fullmatch(r"≈?([\d.]+)(ns|µs|ms|s)", text)
    assert m, text
    return float(m.group(1)) * UNITS[m.group(2)]


def rate_of(text: str) -> float:
    m = re.fullmatch(r"([\d.]+)([kM]?)", text)
    assert m, text
    return float(m.group(1)) * {"": 1, "k": 1e3, "M": 1e6}[m.group(2)]


def run_row(screen: str, run_id: int, state: str) -> dict | None:
    """The runs table's row of a run in `state`: its whole-run figures."""
    m = re.search(rf"#{run_id}\s+(\S+) (\S+)\s+{state}\s+(\d+)\s+(\d+)\s+(\S+)\s+(\S+)\s+(\S+)"
                  rf"\s+(\S+)", screen)
    if m is None:
        return None
    return {"errors": int(m.group(3)), "ops": int(m.group(4)), "ops_per_s": rate_of(m.group(5)),
            "p50_s": seconds_of(m.group(6)), "p99_s": seconds_of(m.group(7)),
            "max_s": seconds_of(m.group(8))}


def start_run(tmux: Tmux, address: str, seconds: float) -> None:
    """`inspector --probe memcached:ADDR` (the command line is the confirmation), its first
    ops counted."""
    tmux.start(f"--probe memcached:{address} --probe-seconds {seconds:g}")
    tmux.wait(lambda s: re.search(r"#1\s+memcached.*running\s+\d+\s+[1-9]", s) is not None,
              "the run under way")


def finished_row(tmux: Tmux, seconds: float, stop: bool = False) -> dict:
    """The run's row once it is done, or once stopped from the Probes screen (its 'x' key)."""
    tmux.resize(120, 40)
    tmux.keys("6")
    state = "stopped" if stop else "done"
    if stop:
        tmux.wait(lambda s: "run max" in s and run_row(s, 1, "running") is not None,
                  "the run on the Probes screen, at 120 columns")
        tmux.keys("x")
    # the wide table first ('run max' shows from 100 columns): until the resize is drawn the
    # row has fewer columns and the pattern reads the next text as the max ('ails')
    screen = tmux.wait(lambda s: "run max" in s and run_row(s, 1, state) is not None,
                       f"the run {state}, at 120 columns", timeout=seconds + 30)
    tmux.keys("q")
    row = run_row(screen, 1, state)
    assert row is not None
    return row


def served(server: MemcachedServer) -> int:
    """The commands memcached has answered (its own count)."""
    stats = server.stats()
    return stats["cmd_get"] + stats["cmd_set"]


def window_rate(server: MemcachedServer, seconds: float, during=None) -> float:
    """memcached's ops/s over a window of `seconds`, `during(end)` filling it if given."""
    before, start = served(server), time.monotonic()
    if during is None:
        time.sleep(seconds)
    else:
        during(start + seconds)
    return (served(server) - before) / (time.monotonic() - start)


def wait_for_load_end(server: MemcachedServer, timeout: float) -> None:
    """Until memcached's count stops growing (the run's load ended), read from memcached
    alone: the pane is not read, so not rendered, while the run goes on. A load at ~100k
    ops/s still for STILL_S has ended (its worst request left alone is a few ms)."""
    deadline = time.monotonic() + timeout
    last = served(server)
    while True:
        time.sleep(STILL_S)
        now = served(server)
        if now == last:
            return
        assert time.monotonic() < deadline, f"the load still ran after {timeout:.0f} s"
        last = now


STILL_S = 0.3


def quiet_run(tmux: Tmux, server: MemcachedServer) -> dict:
    """A run left alone (not even read: tmux renders the pane per read); its ops checked
    against memcached's own count. Its end is waited for on memcached's count, not a fixed
    SECONDS from when its first ops showed (1-2 s into the run: that much waited for nothing)."""
    before = served(server)
    start_run(tmux, server.address, SECONDS)
    wait_for_load_end(server, SECONDS + slack(10))
    row = finished_row(tmux, SECONDS)
    row["served"] = served(server) - before
    return row


def alternating_run(tmux: Tmux, server: MemcachedServer) -> tuple[list[float], list[float], dict]:
    """One run in ROUNDS pairs of windows, left alone then flipped and resized; the windows'
    ops/s as memcached counted them, and the run's own row. The run is given time to spare
    (a slow start, a busy window running on to its last key's pause) and stopped once the
    windows are taken: its tail was waited for doing nothing."""
    seconds = ROUNDS * (QUIET_S + BUSY_S + FLIP_S + SETTLE_S) + 10
    start_run(tmux, server.address, seconds)
    flips = 0

    def flip_and_resize(end: float) -> None:
        nonlocal flips
        while time.monotonic() < end:
            tmux.keys("123456"[flips % 6])
            if flips % 3 == 2:
                tmux.resize(*SIZES[(flips // 3) % len(SIZES)])
            flips += 1
            time.sleep(FLIP_S)

    quiet: list[float] = []
    busy: list[float] = []
    for _ in range(ROUNDS):
        if busy:
            time.sleep(SETTLE_S)
        quiet.append(window_rate(server, QUIET_S))
        busy.append(window_rate(server, BUSY_S, flip_and_resize))
    assert flips >= ROUNDS * BUSY_S / FLIP_S * 0.8, flips
    return quiet, busy, finished_row(tmux, seconds, stop=True)


def cli_memcached_run(address: str) -> dict:
    out = subprocess.run([inspector_bin(), "probe", "memcached", address, "-c", "4",
                          "--duration", str(SECONDS), "-t", "get", "--read-only", "--json"],
                         capture_output=True, text=True, timeout=SECONDS + 40)
    doc = json.loads(out.stdout)
    get = doc["ops"]["get"]
    lat = get.get("latency", get)
    return {"ops_per_s": doc["ops_per_s"], "max_s": lat["max_ns"] / 1e9,
            "p99_s": lat["percentiles_ns"]["p99"] / 1e9}


def test_memcached_run_is_not_distorted_by_screen_switching_and_resizes(tmux, memcached):
    server = memcached()
    budget = BUDGET if factor() < LOADED else LOADED_BUDGET
    cli = cli_memcached_run(server.address)
    alone = quiet_run(tmux, server)
    quiet: list[float] = []
    busy: list[float] = []
    rows = []
    for _ in range(MAX_RUNS):
        q, b, row = alternating_run(tmux, server)
        quiet += q
        busy += b
        rows.append(row)
        ratio = statistics.median(busy) / statistics.median(quiet)
        if ratio >= budget:
            break
    print("\nmemcached get, 4 connections (ops/s, p99, max):")
    for name, r in ((f"CLI, {SECONDS} s", cli), (f"TUI left alone, {SECONDS} s", alone),
                    *((f"TUI alternating run {i + 1}", r) for i, r in enumerate(rows))):
        print(f"  {name:<24} {r['ops_per_s']:>9.0f} ops/s  p99 {r['p99_s'] * 1e6:8.0f} µs  "
              f"max {r['max_s'] * 1e3:7.2f} ms")
    print(f"  windows as memcached counted them, {len(quiet)} pairs: median left alone "
          f"{statistics.median(quiet):.0f} ops/s, flipping+resizing {statistics.median(busy):.0f}"
          f" ops/s: ratio {ratio:.3f}")
    print("  per pair: " + " ".join(f"{b / q:.2f}" for q, b in zip(quiet, busy)))
    assert alone["errors"] == 0 and all(r["errors"] == 0 for r in rows), (alone, rows)
    # the runs table counts what the server answered, no more, no less
    assert alone["ops"] == alone["served"], alone
    # the load runs in its own process: redraws cannot stall it (that would show in its
    # latency, below); what they cost is CPU, on 2 cores shared with memcached and the load
    assert ratio >= budget, (ratio, budget, factor(), quiet, busy)
    # a load stalled by the UI's work would be stalled at every redraw: its p99 would grow by
    # tens of ms. The single worst request is the scheduler's on 2 shared cores (31 ms against
    # 5.6 ms left alone on a quiet machine), so it only bounds a gross stall
    assert max(r["p99_s"] for r in rows) <= slack(5 * max(alone["p99_s"], cli["p99_s"])), \
        (alone, rows, cli, factor())
    assert max(r["max_s"] for r in rows) <= slack(0.25), (alone, rows, cli, factor())
