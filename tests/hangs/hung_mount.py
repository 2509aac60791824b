"""A FUSE filesystem that never answers, mounted in a private mount namespace, and a runner that
times an `inspector` command against it.

SilentFuse (the MiniFuse of tests/integration/test_top_dstate.py) answers INIT, then holds every
request (LOOKUP, GETATTR, OPEN, OPENDIR, READ ...) unanswered, as a hung lxcfs or FUSE server
does. It reads each request from /dev/fuse, so a process waiting on one sleeps in the kernel
even through SIGKILL until it is answered (fs/fuse/dev.c, request_wait_answer): a process with
such a thread cannot finish exiting, which is what Inspector must survive.

The runner is this file as a script, started by `run_hung` under `unshare -m` (the mounts never
reach the host's namespace, where a `df` would hang on them):

    hung_mount.py --mount PATH [--mount PATH ...] [--signal-after S] [--cap S] -- CMD ARGS

It mounts a silent filesystem on each PATH (a file root over a file such as /proc/diskstats, a
directory root over a directory), runs CMD and times it to its exit and the end of its output.
Then it answers every held request with EIO, unmounts, and waits for the processes CMD left
behind (the runner is their subreaper, so they become its children): none may stay in D state.
It prints one JSON object (see `run_hung`).
"""
from __future__ import annotations

import argparse
import ctypes
import errno
import json
import os
import signal
import subprocess
import sys
import threading
import time
import types
from pathlib import Path

HERE = Path(__file__).resolve().parent
PR_SET_CHILD_SUBREAPER = 36


def run_hung(mounts: list[str], argv: list[str], *, signal_after: float | None = None,
             signal_from: str = "start", cap: float = 60.0, env: dict | None = None) -> dict:
    """Run `argv` with a silent FUSE mount on each path, in a private mount namespace.

    Returns {"status", "stdout", "stderr", "seconds" (start to exit and end of output),
    "signal_to_exit" (seconds from SIGINT to the end, with signal_after: sent that long after
    `signal_from`, see time_command), "held_after" (start to the first request held),
    "after_held" (from then to the end),
    "held" (requests the silent mounts received: proof the command did touch them),
    "left_behind" (processes the command left stuck on the mounts), "stuck_after_release"
    (those still there 10 s after the mounts answered), "hung" (the command outlived `cap`
    and was killed)}."""
    runner = [sys.executable, str(Path(__file__)), "--cap", str(cap)]
    for path in mounts:
        runner += ["--mount", path]
    if signal_after is not None:
        runner += ["--signal-after", str(signal_after), "--signal-from", signal_from]
    proc = subprocess.run(["unshare", "-m", "--propagation", "private", *runner, "--", *argv],
                          capture_output=True, text=True, timeout=cap + 60,
                          env={**os.environ, "COLUMNS": "200", **(env or {})})
    assert proc.returncode == 0, f"runner failed ({proc.returncode}): {proc.stderr[-3000:]}"
    return json.loads(proc.stdout)


class _StandIn(types.ModuleType):
    """A module whose every name is a stand-in (itself), called or not."""

    def __getattr__(self, name: str) -> _StandIn:
        return self

    def __call__(self, *args: object, **kwargs: object) -> _StandIn:
        return self


def light_fuse_server_import() -> None:
    """Makes `from test_top_dstate import MiniFuse` cheap: tests/integration/test_top_dstate.py
    has the FUSE server (MiniFuse and the protocol's constants), which needs only the standard
    library; the test module's own imports (pytest, conftest, inspector.live) get stand-ins,
    else each runner spent 0.3 s of CPU (1.5 s of wall on a loaded machine) importing what it
    never uses. For the runners only: never in a pytest process."""
    for name in ("pytest", "conftest", "inspector.live", "inspector.live.procs",
                 "inspector.roots.host"):
        sys.modules.setdefault(name, _StandIn(name))
    sys.path[:0] = [str(HERE.parent / "integration")]


def _silent_fuse_class():
    light_fuse_server_import()
    from test_top_dstate import INIT, MiniFuse

    class SilentFuse(MiniFuse):
        """Answers INIT, then holds every request until `release`, after which every request
        is answered with EIO. `file_root`: the root is a regular file (mounted over one)."""

        def __init__(self, mountpoint: str, file_root: bool):
            self.ROOT_MODE = "100000" if file_root else "40000"
            self.answering = False
            self.held_total = 0
            super().__init__(mountpoint)

        def _handle(self, opcode: int, unique: int, node: int, body: bytes) -> None:
            if opcode == INIT:
                super()._handle(opcode, unique, node, body)
            elif self.answering:
                self._reply(unique, error=-errno.EIO)
            else:
                with self.lock:
                    self.held.append(unique)
                    self.held_total += 1
                self.reads_held.set()

        def release(self) -> None:
            """Answer every held request with EIO, and every later one."""
            self.answering = True
            with self.lock:
                held, self.held = self.held, []
            for unique in held:
                self._reply(unique, error=-errno.EIO)

    return SilentFuse


def _children() -> list[int]:
    """Processes whose parent is this runner (the command's orphans come here)."""
    me, out = os.getpid(), []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == me:
                out.append(int(entry))
    return out


def _reap(timeout: float) -> int:
    """Wait for every child to end; the number still there after `timeout`."""
    give_up = time.monotonic() + timeout
    while time.monotonic() < give_up:
        try:
            while os.waitpid(-1, os.WNOHANG)[0]:
                pass
        except ChildProcessError:
            return 0
        time.sleep(0.05)
    return len(_children())


def time_command(argv: list[str], mounts: list, signum: int, signal_after: float | None,
                 cap: float, signal_from: str = "start") -> dict:
    """Run `argv` as from a terminal (SIGINT at its default: a background job would ignore
    it), send `signum` `signal_after` seconds after `signal_from` ("start"; "held": the first
    request a mount holds; "output": the command's first output, i.e. once it got that far,
    however slow the machine), and time it to its exit and the end of its output; a command
    still there after `cap` is "hung" (the mounts answer, then it is killed). Then the mounts
    answer what they hold and go, and what the command left stuck is counted. The FUSE
    servers count what they held (`held_total`); "held_after" is the seconds from the start
    to the first request held (the command reached the hang), "after_held" from then to the
    end: a bound by progress, whatever the start-up cost."""
    result: dict = {"hung": False, "signal_to_exit": None, "held_after": None}
    start = time.monotonic()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    out, err = bytearray(), bytearray()
    output_seen, held = threading.Event(), threading.Event()
    pumps = [threading.Thread(target=_pump, args=(proc.stdout, out, output_seen), daemon=True),
             threading.Thread(target=_pump, args=(proc.stderr, err, None), daemon=True)]
    for pump in pumps:
        pump.start()

    def watch_held() -> None:
        while proc.poll() is None and not held.is_set():
            if any(fuse.reads_held.is_set() for fuse in mounts):
                result["held_after"] = round(time.monotonic() - start, 3)
                held.set()
            time.sleep(0.01)
    threading.Thread(target=watch_held, daemon=True).start()
    sent: list[float] = []
    if signal_after is not None:
        gate = {"start": None, "held": held, "output": output_seen}[signal_from]

        def send() -> None:
            while gate is not None and not gate.wait(0.05):
                if proc.poll() is not None:
                    return
            time.sleep(signal_after)
            if proc.poll() is None:
                sent.append(time.monotonic())
                proc.send_signal(signum)
        threading.Thread(target=send, daemon=True).start()
    give_up = start + cap
    try:
        proc.wait(timeout=cap)
        for pump in pumps:           # a child it left may hold its output open
            pump.join(max(0.0, give_up - time.monotonic()))
        if any(pump.is_alive() for pump in pumps):
            raise subprocess.TimeoutExpired(argv, cap)
    except subprocess.TimeoutExpired:
        result["hung"] = True
        for fuse in mounts:            # else the kill cannot complete: the waits ignore it
            fuse.release()
        proc.kill()
        proc.wait()
        for pump in pumps:
            pump.join(10)
    end = time.monotonic()
    result.update(status=proc.returncode, stdout=out.decode(errors="replace"),
                  stderr=err.decode(errors="replace"), seconds=round(end - start, 3))
    # from the hang on: what the command's own bound covers, its start-up (the part a loaded
    # machine slows most) aside; the whole time if the watcher missed the moment
    held_after = result["held_after"] or 0.0
    result["after_held"] = round(end - start - held_after, 3)
    if sent:
        result["signal_to_exit"] = round(end - sent[0], 3)
    result["held"] = sum(fuse.held_total for fuse in mounts)
    result["left_behind"] = len(_children())
    for fuse in mounts:
        fuse.close()                   # answers what is held, then umount -l
    result["stuck_after_release"] = _reap(10.0)
    return result


def _pump(stream, into: bytearray, seen: threading.Event | None) -> None:
    """Read `stream` to its end into `into`; `seen` is set at the first bytes."""
    while chunk := stream.read1(65536):
        into += chunk
        if seen is not None:
            seen.set()
    stream.close()


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mount", action="append", default=[])
    parser.add_argument("--signal-after", type=float)
    parser.add_argument("--signal-from", choices=["start", "held", "output"], default="start")
    parser.add_argument("--cap", type=float, default=60.0)
    parser.add_argument("argv", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    argv = args.argv[1:] if args.argv[:1] == ["--"] else args.argv
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    SilentFuse = _silent_fuse_class()
    mounts = [SilentFuse(path, file_root=not os.path.isdir(path)) for path in args.mount]
    result = time_command(argv, mounts, signal.SIGINT, args.signal_after, args.cap,
                          args.signal_from)
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
