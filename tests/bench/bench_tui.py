"""TUI overhead, side by side with glances and btop in the same run, at 80x24 and 200x50.

Each tool runs in tmux at the size, refreshing every second (Inspector's Overview at its 1 Hz,
`glances -t 1`, btop with update_ms 1000 from a private config). After a warm-up, for MEASURE
seconds: CPU % of one core summed over the tool's whole process tree (Inspector's discovery and
sampler children included), RSS summed over the tree (and PSS, which counts a page shared by
forked processes once), bytes per second written to the terminal, and for Inspector the time
from start to the first full frame. Then the ratios to glances and the goals (issue 26):
CPU <= 80 % of glances', RSS summed <= glances', first full frame <= 1 s. The Probes screen
charting an IO probe is measured too with BENCH_PROBES=1.

    .venv/bin/python tests/bench/bench_tui.py          # prints the table and the ratios
    .venv/bin/pytest -s tests/bench/bench_tui.py -o addopts=""
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass

import psutil

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from conftest import inspector_bin  # noqa: E402

WARMUP = float(os.environ.get("BENCH_WARMUP", "5"))
MEASURE = float(os.environ.get("BENCH_SECONDS", "30"))
SIZES = ((80, 24), (200, 50))
CPU_SHARE_OF_GLANCES = 0.80     # issue 26: at most 80 % of glances' CPU at the same refresh
FIRST_FRAME_GOAL = 1.0


@dataclass
class Result:
    name: str
    size: tuple[int, int]
    cpu_pct: float              # of one core, the whole process tree
    rss_mb: float               # summed over the tree, at the end of the measure
    pss_mb: float | None        # the same, shared pages counted once (None: unreadable)
    processes: int
    term_kb_s: float
    first_frame_s: float | None = None
    note: str = ""


class Session:
    def __init__(self, name: str, command: str, size: tuple[int, int]):
        self.socket = f"bench-{os.getpid()}-{name.split()[0]}-{size[0]}"
        self.name, self.size = name, size
        fd, self.out = tempfile.mkstemp(prefix="bench-term-")
        os.close(fd)
        self.started = time.monotonic()
        self.tmux("new-session", "-d", "-s", "b", "-x", str(size[0]), "-y", str(size[1]), command)
        self.pid = int(self.tmux("list-panes", "-t", "b", "-F", "#{pane_pid}").strip())
        self.tmux("pipe-pane", "-t", "b", "-o", f"cat >> {self.out}")

    def tmux(self, *args: str) -> str:
        # not pytest's COLUMNS and LINES (80x24): Textual would size itself by them
        env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
        return subprocess.run(["tmux", "-L", self.socket, *args], capture_output=True,
                              text=True, timeout=10, env=env).stdout

    def screen(self) -> str:
        return self.tmux("capture-pane", "-p", "-t", "b")

    def keys(self, *keys: str) -> None:
        self.tmux("send-keys", "-t", "b", *keys)

    def wait(self, predicate, timeout: float = 30.0) -> float:
        deadline = time.monotonic() + timeout
        while not predicate(self.screen()):
            if time.monotonic() > deadline:
                raise RuntimeError(f"{self.name}: screen not reached:\n{self.screen()}")
            time.sleep(0.02)
        return time.monotonic() - self.started

    def tree(self) -> list[psutil.Process]:
        """The tool and every process under it (a shell wrapper left out)."""
        pane = psutil.Process(self.pid)
        out = []
        for proc in [pane, *pane.children(recursive=True)]:
            try:
                if proc.name() not in ("sh", "bash", "env"):
                    out.append(proc)
            except psutil.Error:
                pass
        return out

    def measure(self, seconds: float) -> tuple[float, float, float | None, int, float]:
        """(CPU % of one core, RSS MB, PSS MB, processes, terminal KB/s) over `seconds`:
        the CPU of every process of the tree, those that came or went during it too."""
        seen: dict[int, psutil.Process] = {}
        first: dict[int, float] = {}
        last: dict[int, float] = {}

        def poll() -> None:
            for proc in self.tree():
                seen.setdefault(proc.pid, proc)
            for pid, proc in seen.items():
                try:
                    times = proc.cpu_times()
                except psutil.Error:
                    continue
                used = times.user + times.system
                first.setdefault(pid, used)
                last[pid] = used
        size0 = os.path.getsize(self.out)
        poll()
        t0 = time.monotonic()
        while time.monotonic() - t0 < seconds:
            time.sleep(min(1.0, seconds - (time.monotonic() - t0)))
            poll()
        span = time.monotonic() - t0
        size1 = os.path.getsize(self.out)
        cpu = sum(last[pid] - first[pid] for pid in last)
        # each process's share, the tool's own first (Inspector: the UI, then its readers)
        self.shares = [100.0 * (last[pid] - first[pid]) / span for pid in sorted(last)]
        rss = pss = 0.0
        pss_known = True
        procs = self.tree()
        self.rss_by_process: list[float] = []      # MB, in the order of the tree (UI first)
        for proc in procs:
            try:
                mem = proc.memory_full_info()
                rss += mem.rss
                pss += getattr(mem, "pss", 0)
                self.rss_by_process.append(mem.rss / 2**20)
            except psutil.AccessDenied:
                pss_known = False
                rss += proc.memory_info().rss
                self.rss_by_process.append(proc.memory_info().rss / 2**20)
            except psutil.Error:
                pass
        return (100.0 * cpu / span, rss / 2**20, pss / 2**20 if pss_known else None,
                len(procs), (size1 - size0) / 1024.0 / span)

    def close(self) -> None:
        self.tmux("kill-server")
        try:
            os.unlink(self.out)
        except OSError:
            pass


def bench_overview(size: tuple[int, int]) -> Result:
    s = Session("inspector overview", inspector_bin(), size)
    try:
        # the full first frame: tabs, footer and the live panels' titles
        first = s.wait(lambda t: "1 Over" in t and "q Quit" in t and "CPU" in t
                       and ("Disks" in t or "─ Memory" in t))
        first_cpu = sum(sum(p.cpu_times()[:2]) for p in s.tree())
        s.wait(lambda t: "discovered" in t)
        time.sleep(WARMUP)
        cpu, rss, pss, n, kbs = s.measure(MEASURE)
        shares = " + ".join(f"{x:.2f}" for x in s.shares)
        rss_each = " + ".join(f"{x:.1f}" for x in s.rss_by_process)
        return Result("inspector overview (1 s)", size, cpu, rss, pss, n, kbs, first,
                      note=f"by process, UI first: CPU % {shares}, RSS MB {rss_each}; "
                           f"first frame after {first_cpu:.2f} s of CPU")
    finally:
        s.close()


def bench_probes(target: str, size: tuple[int, int]) -> Result:
    s = Session("inspector probes", inspector_bin(), size)
    try:
        s.wait(lambda t: "1 Over" in t and "q Quit" in t)
        s.keys("6")
        s.wait(lambda t: "Enter" in t)     # the form
        time.sleep(1.0)
        s.keys("Enter")                    # edit the target field (EditField), if it is one
        s.keys("C-u")
        s.keys("-l", target)
        s.wait(lambda t: os.path.basename(target) in t)
        s.keys("Enter")
        s.wait(lambda t: "running" in t)
        time.sleep(WARMUP)
        cpu, rss, pss, n, kbs = s.measure(MEASURE)
        return Result("inspector probes (IO probe, 4 Hz)", size, cpu, rss, pss, n, kbs,
                      note="the probe's own process counted")
    finally:
        s.close()


def bench_reference(name: str, command: str, ready: str, size: tuple[int, int]) -> Result | None:
    words = command.split()
    exe = shutil.which(next(w for w in words if w != "env" and "=" not in w))
    if exe is None:
        return None
    s = Session(name, command, size)
    try:
        s.wait(lambda t: ready in t or len(t.strip()) > 200)
        time.sleep(WARMUP)
        cpu, rss, pss, n, kbs = s.measure(MEASURE)
        return Result(name, size, cpu, rss, pss, n, kbs)
    finally:
        s.close()


def run_all() -> list[Result]:
    results: list[Result] = []
    config = tempfile.mkdtemp(prefix="bench-btop-")
    os.makedirs(os.path.join(config, "btop"))
    with open(os.path.join(config, "btop", "btop.conf"), "w") as f:
        f.write("update_ms = 1000\n")        # btop 1.2 has no flag for it
    try:
        for size in SIZES:
            results.append(bench_overview(size))
            for name, command, ready in (("glances (1 s)", "glances -t 1", "CPU"),
                                         ("btop (1 s)",
                                          f"env XDG_CONFIG_HOME={config} btop --utf-force",
                                          "cpu")):
                r = bench_reference(name, command, ready, size)
                if r is not None:
                    results.append(r)
    finally:
        shutil.rmtree(config, ignore_errors=True)
    if os.environ.get("BENCH_PROBES"):
        fd, target = tempfile.mkstemp(prefix="bench-io-", dir="/var/tmp")
        with os.fdopen(fd, "wb") as f:
            f.write(os.urandom(64 << 20))
        try:
            results.append(bench_probes(target, (200, 50)))
        finally:
            os.unlink(target)
    return results


def report(results: list[Result]) -> str:
    lines = [f"{'scenario':36} {'size':>7} {'CPU %':>6} {'RSS MB':>7} {'PSS MB':>7} {'procs':>5} "
             f"{'term KB/s':>9} {'first frame s':>13}"]
    for r in results:
        ff = f"{r.first_frame_s:.2f}" if r.first_frame_s is not None else "-"
        pss = f"{r.pss_mb:.1f}" if r.pss_mb is not None else "-"
        lines.append(f"{r.name:36} {r.size[0]:>3}x{r.size[1]:<3} {r.cpu_pct:6.2f} {r.rss_mb:7.1f} "
                     f"{pss:>7} {r.processes:5d} {r.term_kb_s:9.2f} {ff:>13}"
                     + (f"  ({r.note})" if r.note else ""))
    for size in SIZES:
        ours = next((r for r in results if r.size == size and r.name.startswith("inspector ov")),
                    None)
        if ours is None:
            continue
        for ref in ("glances", "btop"):
            other = next((r for r in results if r.size == size and r.name.startswith(ref)), None)
            if other is None:
                lines.append(f"{size[0]}x{size[1]} {ref}: not installed, no ratio")
                continue
            lines.append(f"{size[0]}x{size[1]} inspector / {ref}: "
                         f"CPU {ours.cpu_pct / max(other.cpu_pct, 1e-9):.2f}x, "
                         f"RSS {ours.rss_mb / max(other.rss_mb, 1e-9):.2f}x"
                         + (f", PSS {ours.pss_mb / max(other.pss_mb, 1e-9):.2f}x"
                            if ours.pss_mb and other.pss_mb else "")
                         + f", bytes {ours.term_kb_s / max(other.term_kb_s, 1e-9):.2f}x")
        glances = next((r for r in results if r.size == size and r.name.startswith("glances")),
                       None)
        if glances is not None:
            verdicts = goals(ours, glances)
            lines.append(f"{size[0]}x{size[1]} goals: " + ", ".join(
                f"{what} {'met' if ok else 'MISSED'}" for what, ok in verdicts.items()))
    lines.append(f"load average during the run: {os.getloadavg()}")
    return "\n".join(lines)


def goals(ours: Result, glances: Result) -> dict[str, bool]:
    return {f"CPU <= {CPU_SHARE_OF_GLANCES:.0%} of glances'":
            ours.cpu_pct <= CPU_SHARE_OF_GLANCES * glances.cpu_pct,
            "RSS summed <= glances'": ours.rss_mb <= glances.rss_mb,
            f"first frame <= {FIRST_FRAME_GOAL} s":
            (ours.first_frame_s or 99) <= FIRST_FRAME_GOAL}


def test_tui_overhead():
    results = run_all()
    print("\n" + report(results))
    for ours in (r for r in results if r.name.startswith("inspector ov")):
        # asserted loosely (a loaded box must not flap): a hang or a regression several times
        # over still fails; the goals themselves are printed above
        assert ours.first_frame_s is not None and ours.first_frame_s < 5 * FIRST_FRAME_GOAL
        glances = next((r for r in results if r.size == ours.size
                        and r.name.startswith("glances")), None)
        if glances is not None:
            assert ours.cpu_pct < 3 * glances.cpu_pct and ours.rss_mb < 3 * glances.rss_mb


if __name__ == "__main__":
    print(report(run_all()))
