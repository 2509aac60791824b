"""A FUSE file that answers its first reads and then holds every read, mounted in a private
mount namespace, and a runner that times an `inspector` command against it: the mount that
answers the stat and the open and then hangs (a FUSE or NFS server dying mid-run).

    stall_mount.py --mount DIR --answer N [--term-after S] [--cap S] -- CMD ARGS

DIR gets MiniFuse's /disk.img (16 MiB of zeros, tests/integration/test_top_dstate.py); after
N READs are answered, every further READ is held. The rest is hung_mount.py's runner: CMD is
timed to its exit and the end of its output (with --term-after, SIGTERM is sent that long
after the first read is held, i.e. once the command is stuck however slow the machine, and
"signal_to_exit" timed), then the held reads are answered (EIO), the
mount goes, and the processes CMD left behind must not stay stuck. `run_stalled` prints and
returns the same JSON as hung_mount.run_hung, plus "answered" (READs answered before the
stall).
"""
from __future__ import annotations

import argparse
import ctypes
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

from hung_mount import PR_SET_CHILD_SUBREAPER, light_fuse_server_import, time_command


def run_stalled(mount: str, answer: int, argv: list[str], *, term_after: float | None = None,
                cap: float = 60.0) -> dict:
    runner = [sys.executable, str(Path(__file__)), "--cap", str(cap), "--mount", mount,
              "--answer", str(answer)]
    if term_after is not None:
        runner += ["--term-after", str(term_after)]
    runner += ["--", *argv]
    proc = subprocess.run(["unshare", "-m", "--propagation", "private", *runner],
                          capture_output=True, text=True, timeout=cap + 60,
                          env={**os.environ, "COLUMNS": "200"})
    assert proc.returncode == 0, f"runner failed ({proc.returncode}): {proc.stderr[-3000:]}"
    return json.loads(proc.stdout)


def _stalling_fuse_class():
    light_fuse_server_import()
    from test_top_dstate import READ, MiniFuse

    class StallingFuse(MiniFuse):
        """MiniFuse that stalls by itself after answering `answer` READs."""

        def __init__(self, mountpoint: str, answer: int):
            self.left = answer
            self.answered = 0
            super().__init__(mountpoint)

        def _handle(self, opcode: int, unique: int, node: int, body: bytes) -> None:
            if opcode == READ and not self.stalled.is_set():
                if self.left <= 0:
                    self.stall()
                else:
                    self.left -= 1
                    self.answered += 1
            super()._handle(opcode, unique, node, body)

        def release(self) -> None:
            self.left = 1 << 62           # answer (EIO) the held reads, and every later one
            super().release()

        @property
        def held_total(self) -> int:      # what hung_mount.time_command counts
            with self.lock:
                return len(self.held)

    return StallingFuse


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mount", required=True)
    parser.add_argument("--answer", type=int, required=True)
    parser.add_argument("--cap", type=float, default=60.0)
    parser.add_argument("--term-after", type=float)
    parser.add_argument("argv", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    argv = args.argv[1:] if args.argv[:1] == ["--"] else args.argv
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    fuse = _stalling_fuse_class()(args.mount, args.answer)
    result = time_command(argv, [fuse], signal.SIGTERM, args.term_after, args.cap, "held")
    result["answered"] = fuse.answered
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
