"""A live `capture` with /proc/loadavg hung (a silent FUSE file over it): the sampler waited
for every first-round source before starting the reads that need one of them, so the sysfs
walk and the kernel log began at the deadline: the capture blamed /sys/block and /dev/kmsg
("timed out after 0 s") and kept 231 of 508 sys/ entries. Now only /proc/loadavg is blamed
and sys/block is in the capture. The real binary, in a private mount namespace."""
from __future__ import annotations

import tarfile

import pytest

from conftest import inspector_bin, require_root, run_bin
from hung_mount import run_hung

pytestmark = [pytest.mark.root, pytest.mark.slow]


@pytest.fixture(autouse=True)
def _root():
    require_root()


def _names(path) -> list[str]:
    with tarfile.open(path) as tar:
        return tar.getnames()


def test_a_hung_loadavg_is_the_only_live_source_blamed(tmp_path):
    whole = tmp_path / "whole.tar.gz"
    assert run_bin("capture", "-o", str(whole), timeout=120).returncode == 0
    hung = tmp_path / "hung.tar.gz"
    res = run_hung(["/proc/loadavg"], [inspector_bin(), "capture", "-o", str(hung),
                                       "--timeout", "2"], cap=60)
    assert not res["hung"] and res["held"] >= 1 and res["stuck_after_release"] == 0, res
    assert res["status"] == 0, res
    live = [line for line in res["stderr"].splitlines() if line.startswith("warning: live ")]
    assert live and all(line.startswith("warning: live /proc/loadavg not collected")
                        for line in live), res["stderr"]
    assert "/sys/block" not in res["stderr"] and "timed out after 0 s" not in res["stderr"]
    names = _names(hung)
    assert any(n.startswith("sys/block/") for n in names), "no sys/block in the capture"
    block = [n for n in _names(whole) if n.startswith("sys/block/")]
    assert len([n for n in names if n.startswith("sys/block/")]) >= len(block) * 0.9
