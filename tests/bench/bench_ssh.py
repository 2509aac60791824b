"""Benchmark: what the live view over ssh costs the host it watches (issue 30).

A real sshd on loopback (tests/remote/sshd.py); the client samples at 1 Hz as `top` and the
TUI do (inspector.remote.streamed_root.RemoteSampler) for --seconds. Printed:
- the remote loop's CPU, measured on the target: utime+stime of its shell, of the awk reading
  the files and of the greps and dfs they waited for (cutime+cstime), per second of wall time,
  in % of one core (goal: at most 0.5 %), and which reader the host's loop uses (read=awk|grep);
  beside it, over the same seconds, the same loop reading every process's io and every NIC
  counter file each frame, as it did before (inspector.remote.process_io, netdev);
- the sshd session's CPU (encryption), apart;
- the bytes per second on the wire each way (TCP payload of the connection, `ss -ti`), and the
  frames' own bytes;
- the reference: `ssh HOST top -b -d 1` (procps top, what an operator runs with nothing
  installed) over the same time, its CPU on the target and its bytes per second, and the
  ratios ours / theirs.

Run: `.venv/bin/python tests/bench/bench_ssh.py [--seconds 30]` (root: sshd), or `make bench`.
"""
from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path
from unittest import mock

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "remote"))

from sshd import SshServer  # noqa: E402

from inspector.live.netstats import COUNTERS  # noqa: E402
from inspector.remote import live  # noqa: E402
from inspector.remote.capture import capture, open_capture  # noqa: E402
from inspector.remote.live import LiveStream  # noqa: E402
from inspector.remote.ssh import Target  # noqa: E402
from inspector.remote.streamed_root import RemoteSampler, StreamedRoot  # noqa: E402

HZ = os.sysconf("SC_CLK_TCK")


def _children(pid: int) -> list[int]:
    try:
        text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    except OSError:
        return []
    return [int(p) for p in text.split()]


def _descendants(pid: int) -> list[int]:
    out, todo = [], [pid]
    while todo:
        for child in _children(todo.pop()):
            out.append(child)
            todo.append(child)
    return out


def _cmdline(pid: int) -> list[str]:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().rstrip(b"\0").decode().split("\0")
    except OSError:
        return []


def _ticks(pid: int, children: bool = True) -> int:
    """utime+stime (+cutime+cstime: the children it waited for) in clock ticks."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    own = int(fields[11]) + int(fields[12])
    return own + (int(fields[13]) + int(fields[14]) if children else 0)


def _loop_ticks(pid: int) -> int:
    """The loop's CPU in clock ticks: its shell's, and its descendants', those it waited for
    (cutime+cstime) and those still running (the awk reading the files, the subshell of its
    pipeline: their time reaches the shell's cutime only when they end)."""
    total = 0
    for each in [pid, *_descendants(pid)]:
        try:
            total += _ticks(each)
        except OSError:
            pass                   # ended (its time is in its parent's cutime from now on)
    return total


def _find(server: SshServer, argv0: str, args: list[str],
          exclude: frozenset[int] | set[int] = frozenset()) -> int:
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        for pid in _descendants(server.proc.pid):
            if pid in exclude:
                continue
            cmd = _cmdline(pid)
            if cmd[:1] and os.path.basename(cmd[0]) == argv0 and cmd[1:] == args:
                return pid
        time.sleep(0.1)
    raise RuntimeError(f"{argv0} {' '.join(args)} not found under sshd")


def _session(server: SshServer, worker: int) -> int:
    """The sshd process that carries `worker`'s session (its nearest sshd ancestor)."""
    pid = worker
    while pid > 1:
        fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
        pid = int(fields[1])
        if os.path.basename(_cmdline(pid)[0] if _cmdline(pid) else "").startswith("sshd"):
            return pid
    return server.proc.pid


def _wire(port: int, pid: int | None = None) -> tuple[int, int]:
    """(bytes the client sent, bytes it received) on its connections to `port` (those of
    process `pid` only, when given)."""
    out = subprocess.run(["ss", "-tinpH", "state", "established", f"( dport = :{port} )"],
                         capture_output=True, text=True).stdout
    sent = received = 0
    for conn in re.split(r"\n(?=\S)", out):
        if pid is None or f"pid={pid}," in conn:
            sent += sum(int(m) for m in re.findall(r"bytes_sent:(\d+)", conn))
            received += sum(int(m) for m in re.findall(r"bytes_received:(\d+)", conn))
    return sent, received


class EveryFileRoot(StreamedRoot):
    """The loop reading as it did before its cost was cut: every process's io (kernel
    threads' too), every NIC counter from its sysfs file and the md files, each frame."""

    def _name_io(self, frame) -> None:
        self._io.update({}, {})
        self._io.sweep_due = lambda: True        # type: ignore[method-assign]


EVERY_FILE_BASE = " ".join([live.BASE, live.MD, *(f"/sys/class/net/*/statistics/{c}"
                                                    for c in COUNTERS)])


class Session:
    """One live view of the host over its own ssh connection, and the loop serving it."""

    def __init__(self, server: SshServer, static, every_file: bool = False):
        target = Target(server.destination, tuple(server.options()))
        before = set(_descendants(server.proc.pid))
        if every_file:
            with mock.patch.object(live, "BASE", EVERY_FILE_BASE):
                self.stream = LiveStream(target)
            root: StreamedRoot = EveryFileRoot(self.stream, static, frame_timeout=3.0)
        else:
            self.stream = LiveStream(target)
            root = StreamedRoot(self.stream, static, frame_timeout=3.0)
        self.sampler = RemoteSampler(root)
        self.loop = _find(server, "sh", ["-s"], exclude=before)
        self.session = _session(server, self.loop)
        self.port = server.port
        self.sampler.sample()            # first frame: every process's command line once

    def run(self, seconds: float, offset: float, out: dict) -> None:
        """Samples at 1 Hz for `seconds`, `offset` s into each second; figures into `out`."""
        ticks0, sshd0 = _loop_ticks(self.loop), _ticks(self.session, children=False)
        wire0, payload0 = _wire(self.port, self.stream.proc.pid), self.stream.reader.received
        start = time.monotonic()
        samples = 0
        seen: set[int] = set()
        while time.monotonic() - start < seconds:
            samples += 1
            delay = start + offset + samples - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            counters = self.sampler.sample()
            assert isinstance(counters.procs, dict), counters.procs
            if samples == 1:
                first = set(counters.procs)
            seen |= set(counters.procs)
        elapsed = time.monotonic() - start
        ticks1, sshd1 = _loop_ticks(self.loop), _ticks(self.session, children=False)
        wire1, payload1 = _wire(self.port, self.stream.proc.pid), self.stream.reader.received
        out.update({"samples": samples, "processes": len(counters.procs),
                    "read": self.stream.has.get("read", "?"),
                    "started_per_s": len(seen - first) / elapsed,
                    "cpu_pct": 100.0 * (ticks1 - ticks0) / HZ / elapsed,
                    "sshd_pct": 100.0 * (sshd1 - sshd0) / HZ / elapsed,
                    "up_Bps": (wire1[0] - wire0[0]) / elapsed,
                    "down_Bps": (wire1[1] - wire0[1]) / elapsed,
                    "payload_Bps": (payload1 - payload0) / elapsed})


def measure_ours(server: SshServer, seconds: float) -> tuple[dict, dict]:
    """Ours and the every-file reference side by side over the same seconds (half a second
    apart), so both meet the same load: (ours, reference)."""
    static = open_capture(capture(Target(server.destination, tuple(server.options()))))
    sessions = [Session(server, static), Session(server, static, every_file=True)]
    results: list[dict] = [{}, {}]
    threads = [threading.Thread(target=s.run, args=(seconds, i / 2, results[i]))
               for i, s in enumerate(sessions)]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        for session in sessions:
            session.sampler.close()
    return results[0], results[1]


def measure_top(server: SshServer, seconds: float) -> dict | None:
    """procps `top -b -d 1` over the same ssh, for the same time."""
    if not any(os.access(os.path.join(d, "top"), os.X_OK) for d in ("/usr/bin", "/bin")):
        return None
    argv = ["ssh", "-T", *[w for o in server.options() for w in ("-o", o)],
            server.destination, "top", "-b", "-d", "1"]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    try:
        top = _find(server, "top", ["-b", "-d", "1"])
        session = _session(server, top)
        time.sleep(2)
        ticks0, sshd0, wire0 = _ticks(top), _ticks(session, children=False), _wire(server.port)
        start = time.monotonic()
        received = 0
        assert proc.stdout is not None
        os.set_blocking(proc.stdout.fileno(), False)
        while time.monotonic() - start < seconds:
            time.sleep(0.2)
            chunk = proc.stdout.read()
            received += len(chunk or b"")
        elapsed = time.monotonic() - start
        ticks1, sshd1, wire1 = _ticks(top), _ticks(session, children=False), _wire(server.port)
    finally:
        proc.kill()
        proc.wait()
    return {"cpu_pct": 100.0 * (ticks1 - ticks0) / HZ / elapsed,
            "sshd_pct": 100.0 * (sshd1 - sshd0) / HZ / elapsed,
            "up_Bps": (wire1[0] - wire0[0]) / elapsed, "down_Bps": (wire1[1] - wire0[1]) / elapsed,
            "payload_Bps": received / elapsed}


def run(seconds: float) -> dict:
    server = SshServer.start()
    try:
        ours, before = measure_ours(server, seconds)
        theirs = measure_top(server, seconds)
    finally:
        server.stop()
    print(f"\nlive view over ssh at 1 Hz, {ours['samples']} samples, {ours['processes']} "
          f"processes on the host ({ours['started_per_s']:.1f} started a second)")
    # CPU times count in clock ticks: one tick over the run is this much of a core
    tick_pct = 100.0 / HZ / seconds
    print(f"  remote loop CPU on the host : {ours['cpu_pct']:.3f} % of a core (goal <= 0.5 %, "
          f"+-{tick_pct:.3f} % a tick), read={ours['read']}")
    print(f"    beside it, reading every io and NIC file: {before['cpu_pct']:.3f} % "
          f"({before['down_Bps']:.0f} B/s to us)")
    print(f"  sshd session CPU            : {ours['sshd_pct']:.3f} %")
    print(f"  on the wire                 : {ours['down_Bps']:.0f} B/s to us, "
          f"{ours['up_Bps']:.0f} B/s to the host; frames {ours['payload_Bps']:.0f} B/s")
    if theirs:
        print("  reference `ssh HOST top -b -d 1` (procps):")
        print(f"    top CPU on the host       : {theirs['cpu_pct']:.3f} % "
              f"(ours/theirs {ours['cpu_pct'] / max(theirs['cpu_pct'], 1e-9):.2f})")
        print(f"    sshd session CPU          : {theirs['sshd_pct']:.3f} %")
        print(f"    on the wire               : {theirs['down_Bps']:.0f} B/s to us "
              f"(ours/theirs {ours['down_Bps'] / max(theirs['down_Bps'], 1e-9):.2f})")
    return {"ours": ours, "theirs": theirs}


def test_bench_ssh():
    run(30.0)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=30.0)
    run(parser.parse_args().seconds)
