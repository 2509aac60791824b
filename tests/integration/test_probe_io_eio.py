"""A target that starts failing with EIO mid-run, for real: a FUSE filesystem (the minimal
server of test_top_dstate) whose READs are answered with EIO once told to. Every probe request
reaches the server (O_DIRECT, or buffered with the range dropped before each request), so the
first request after the switch fails: the probe must name it, stop, and keep what it measured.
Both request loops (C and Python) and the real binary are checked."""
from __future__ import annotations

import asyncio
import re
import subprocess
import threading

import pytest

from conftest import inspector_bin, require_root
from inspector.probes.io.latency import IoConfig, IoLatencyProbe
from inspector.probes.io.target import open_target
from test_top_dstate import MiniFuse

FAILED = re.compile(r"read failed at offset (\d+) \(request (\d+)\): EIO Input/output error")


class FailingFuse(MiniFuse):
    """Serves /disk.img until `failing` is set; then every READ is answered with EIO."""

    def __init__(self, mountpoint: str):
        self.failing = threading.Event()
        super().__init__(mountpoint)

    def _reply(self, unique: int, payload: bytes = b"", error: int = 0) -> None:
        if self.failing.is_set() and len(payload) >= 4096:       # a READ's data
            payload, error = b"", -5                              # -EIO
        super()._reply(unique, payload, error)


@pytest.fixture
def failing_fs(tmp_path):
    require_root()
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    fuse = FailingFuse(str(mnt))
    try:
        yield fuse, str(mnt / "disk.img")
    finally:
        fuse.close()


@pytest.mark.parametrize("native", [True, False], ids=["c_loop", "python_loop"])
def test_eio_mid_run_names_the_request_and_keeps_partial_results(failing_fs, native):
    fuse, path = failing_fs

    async def run():
        with open_target(path) as target:
            probe = IoLatencyProbe(target, IoConfig(deadline=10, native=native))
            async for sample in probe:
                if sample.t >= 0.3:
                    fuse.failing.set()
            return probe.result
    res = asyncio.run(run())
    assert res.loop == ("c" if native else "python")
    m = FAILED.search(res.error or "")
    assert m, res.error
    # the failing request is the one after everything counted (warm-up included)
    assert int(m[2]) == res.total_requests + 1 and int(m[1]) % 4096 == 0
    assert res.requests > 10 and res.wall_ns < 5e9 and not res.interrupted
    assert sum(s.requests for s in res.samples) == res.requests
    assert res.samples[-1].error == res.error


def test_cli_exits_1_with_the_failure_and_the_summary(failing_fs):
    fuse, path = failing_fs
    proc = subprocess.Popen([inspector_bin(), "probe", "io", path, "-w", "10"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    first = proc.stdout.readline()               # an interval line: the run is on
    assert "iops" in first, first
    fuse.failing.set()
    out, err = proc.communicate(timeout=15)
    assert proc.returncode == 1, (out, err)
    assert FAILED.search(err) and "(partial results kept)" in err, err
    assert re.search(r"^[\d.]+(?: [kMG])? requests completed in ", out, re.M), out
    assert "min/avg/max/mdev" in out
