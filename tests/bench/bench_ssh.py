"""Benchmark: what the live view over ssh costs the host it watches (issue 30).

A real sshd on loopback (tests/remote/sshd.py); the client samples at 1 Hz as `top` and the
TUI do (inspector.remote.streamed_root.RemoteSampler) for --seconds. Printed:
- the remote loop's CPU, measured on the target: utime+stime of its shell and of the greps it
  waited for (cutime+cstime), per second of wall time, in % of one core (goal: at most 0.5 %);
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
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "remote"))

from sshd import SshServer  # noqa: E402

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


def _find(server: SshServer, argv0: str, args: list[str]) -> int:
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        for pid in _descendants(server.proc.pid):
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


def _wire(port: int) -> tuple[int, int]:
    """(bytes the client sent, bytes it received) on its connection to `port`."""
    out = subprocess.run(["ss", "-tinH", "state", "established", f"( dport = :{port} )"],
                         capture_output=True, text=True).stdout
    sent = sum(int(m) for m in re.findall(r"bytes_sent:(\d+)", out))
    received = sum(int(m) for m in re.findall(r"bytes_received:(\d+)", out))
    return sent, received


def measure_ours(server: SshServer, seconds: float) -> dict:
    target = Target(server.destination, tuple(server.options()))
    static = open_capture(capture(target))
    stream = LiveStream(target)
    root = StreamedRoot(stream, static, frame_timeout=3.0)
    sampler = RemoteSampler(root)
    loop = _find(server, "sh", ["-s"])
    session = _session(server, loop)
    sampler.sample()                 # first frame: every process's command line once
    ticks0, sshd0 = _ticks(loop), _ticks(session, children=False)
    wire0, payload0 = _wire(server.port), stream.reader.received
    start = time.monotonic()
    samples = 0
    while time.monotonic() - start < seconds:
        samples += 1
        delay = start + samples - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        counters = sampler.sample()
        assert isinstance(counters.procs, dict), counters.procs
    elapsed = time.monotonic() - start
    ticks1, sshd1 = _ticks(loop), _ticks(session, children=False)
    wire1, payload1 = _wire(server.port), stream.reader.received
    processes = len(counters.procs)
    sampler.close()
    return {"samples": samples, "processes": processes,
            "cpu_pct": 100.0 * (ticks1 - ticks0) / HZ / elapsed,
            "sshd_pct": 100.0 * (sshd1 - sshd0) / HZ / elapsed,
            "up_Bps": (wire1[0] - wire0[0]) / elapsed, "down_Bps": (wire1[1] - wire0[1]) / elapsed,
            "payload_Bps": (payload1 - payload0) / elapsed}


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
        ours = measure_ours(server, seconds)
        theirs = measure_top(server, seconds)
    finally:
        server.stop()
    print(f"\nlive view over ssh at 1 Hz, {ours['samples']} samples, {ours['processes']} "
          f"processes on the host")
    print(f"  remote loop CPU on the host : {ours['cpu_pct']:.3f} % of a core (goal <= 0.5 %)")
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
