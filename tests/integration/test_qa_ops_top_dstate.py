"""QA (live view): a process that is in D at every sample because it does one slow IO after
another is progressing, not stuck. The kernel's hung-task detector tells the two apart by the
task's context switches; so must `inspector top` before it warns "in D state for 30 s".

Real components: a FUSE filesystem (the minimal server of test_top_dstate) whose every READ is
answered after 0.12 s, a read-only loop device on its file, and dd reading 4 KiB at a time with
O_DIRECT from the loop device, so dd waits in the block layer (D) for each read and runs for
microseconds between them. (A FUSE wait itself is interruptible, S: hence the loop device.)"""
from __future__ import annotations

import subprocess
import time

from conftest import require_root
from inspector.host import HostRoot
from inspector.live import LiveSampler
from inspector.live.procs import dstate_findings
from test_top_dstate import MiniFuse, _state, _wait_for

READ_DELAY = 0.12


class SlowFuse(MiniFuse):
    """Every reply that carries read data comes READ_DELAY seconds late."""

    def _reply(self, unique: int, payload: bytes = b"", error: int = 0) -> None:
        if len(payload) >= 4096:
            time.sleep(READ_DELAY)
        super()._reply(unique, payload, error)


def test_one_slow_io_after_another_is_not_a_stuck_task(tmp_path):
    require_root()
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    fuse = SlowFuse(str(mnt))
    dd = loop = None
    try:
        loop = subprocess.run(["losetup", "--find", "--show", "--read-only",
                               str(mnt / "disk.img")], capture_output=True, text=True,
                              check=True, timeout=30).stdout.strip()
        dd = subprocess.Popen(["dd", f"if={loop}", "of=/dev/null", "bs=4096", "iflag=direct"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        _wait_for(lambda: _state(dd.pid) == "D", 10, "dd to enter D state")
        sampler = LiveSampler(HostRoot("/"), process_io=False)
        seen = []
        for _ in range(8):
            ours = [d for d in sampler.sample().dstate if d.pid == dd.pid]
            seen += ours
            time.sleep(0.3)
        assert dd.poll() is None, "dd finished early: the reads were not slow"
        # in D at (nearly) every sample: before the fix its "time in D" grew to 2 s and more
        assert len(seen) >= 5, seen
        assert max(d.seconds for d in seen) < 1.0, [round(d.seconds, 2) for d in seen]
        # and the 30 s warning rule, applied with a short threshold, says nothing
        assert not dstate_findings(seen, threshold=1.0)
    finally:
        if dd is not None:
            dd.kill()
            dd.wait(timeout=10)
        if loop:
            subprocess.run(["losetup", "-d", loop], check=False)
        fuse.close()
