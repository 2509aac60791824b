"""How much slower than a quiet machine this one is right now: the factor the tests' wall-clock
bounds scale by.

A bound that proves "no hang" is the time the thing takes on a quiet machine plus its slack;
on a shared machine (other jobs, two busy loops beside the suite) the slack grows with the
load while a hang still never ends. So a test writes its bound as `limit + slack(quiet)`:
`quiet` is the time the steps around `limit` (start-up, output, joining children) take on a
quiet machine, and `slack` multiplies it by the factor measured here, at most CAP. With CAP
the loosest bound stays far below the time a hang is given (a runner's cap, 30-60 s) and
below the time a wrong path takes (a default timeout of 15 s where the test gave 2).

The factor is the larger of two measures, taken at most every MAX_AGE seconds:
- the share of a CPU a spinning thread of ours gets over SPIN_S (1.0 on a quiet machine; two
  busy loops and the suite on 2 cores give it 1/2 to 1/3), times how much slower a CPU
  second's worth of that loop is than on the reference machine;
- the wall time of a Python start that imports the CLI, against the reference's (start-up is
  most of what a short command does; it also pays for memory and IO pressure).
A measure that overestimates only loosens bounds up to CAP; one that underestimates fails a
test, hence the larger of the two. INSPECTOR_TEST_SLOWNESS=F fixes the factor (to reproduce a
run). The reference figures are the 2-core VM of the repository's CI, quiet.
"""
from __future__ import annotations

import os
import subprocess
import sys
import time
from dataclasses import dataclass

CAP = 4.0
MAX_AGE = 15.0            # seconds a measure stands for
SPIN_S = 0.25
# the reference machine, quiet: loop rounds per CPU second (best of many) and the wall time
# of `python -c "import inspector.cli"` (its CPU time plus the exec)
REFERENCE_ROUNDS_PER_CPU_S = 95_000
REFERENCE_START_S = 0.12
_ROUND = range(1000)


@dataclass(frozen=True)
class Measure:
    factor: float
    cpu_share: float          # of one CPU, while spinning
    cpu_speed: float          # the reference's loop rate over ours (>1: a slower CPU)
    start_s: float            # the Python start's wall time
    at: float                 # time.monotonic() of the measure
    forced: bool = False

    def __str__(self) -> str:
        if self.forced:
            return f"slowness factor {self.factor:g} (INSPECTOR_TEST_SLOWNESS)"
        return (f"slowness factor {self.factor:.2f} (cap {CAP:g}): a spinning thread got "
                f"{self.cpu_share:.0%} of a CPU at {1 / self.cpu_speed:.0%} of the reference's "
                f"speed; a Python start took {self.start_s:.2f} s (reference "
                f"{REFERENCE_START_S:g} s); load {os.getloadavg()[0]:.1f} on "
                f"{os.cpu_count()} CPUs; measured {time.monotonic() - self.at:.0f} s ago")


_last: Measure | None = None
used: list[Measure] = []      # the measures the running test used (shown when it fails)


def measure() -> Measure:
    """Measure now."""
    forced = os.environ.get("INSPECTOR_TEST_SLOWNESS")
    if forced:
        return Measure(float(forced), 1.0, 1.0, 0.0, time.monotonic(), forced=True)
    share, rate = _spin(SPIN_S)
    speed = max(1.0, REFERENCE_ROUNDS_PER_CPU_S / rate)
    start_s = _python_start()
    raw = max(speed / max(share, 1e-3), start_s / REFERENCE_START_S)
    return Measure(min(CAP, max(1.0, raw)), share, speed, start_s, time.monotonic())


def current() -> Measure:
    """The latest measure, taken again when older than MAX_AGE."""
    global _last
    if _last is None or time.monotonic() - _last.at > MAX_AGE:
        _last = measure()
    if _last not in used:
        used.append(_last)
    return _last


def factor() -> float:
    return current().factor


def slack(quiet_seconds: float) -> float:
    """The time a step that takes `quiet_seconds` on a quiet machine is given here and now."""
    return quiet_seconds * factor()


def extra(quiet_seconds: float) -> float:
    """What the slowness adds to a step that takes `quiet_seconds` on a quiet machine: for a
    bound that must hold exactly when quiet (a whole command within its --timeout)."""
    return quiet_seconds * (factor() - 1.0)


def _spin(window: float) -> tuple[float, float]:
    """(share of a CPU this thread got, loop rounds per CPU second) over `window` s of spinning."""
    wall0, cpu0, rounds = time.perf_counter(), time.thread_time(), 0
    while time.perf_counter() - wall0 < window:
        for _ in _ROUND:
            pass
        rounds += 1
    wall, cpu = time.perf_counter() - wall0, time.thread_time() - cpu0
    return cpu / wall, rounds / max(cpu, 1e-6)


def _python_start() -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", "import inspector.cli"], check=True, timeout=120)
    return time.perf_counter() - start


if __name__ == "__main__":      # python tests/slowness.py: what a test would get here
    print(measure())
