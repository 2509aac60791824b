"""A sample in which a source did not answer (the sampler's child timed out on a loaded host)
is no evidence that a finding cleared: the live findings of the rules that read that source
stay as they were, their `since` kept, and end only when a sample that saw the source no
longer raises them. Before, every active finding ended at such a sample and began again at
the next, so a recording showed a fill that ended and restarted mid-fill."""
from __future__ import annotations

import dataclasses

import pytest

from inspector.health.live.engine import LiveRules
from inspector.live.filesystems import FsUse
from inspector.live.sampler import rates
from inspector.live.worker import unknown_counters
from inspector.roots.host import HostRoot
from live_host import T0, LiveHost

GIB = 1 << 30
KEY = ("live.fs.time_to_full", "/data")


@pytest.fixture
def base(tmp_path):
    host = LiveHost(tmp_path / "root")
    session = host.session()
    host.step(session)
    return host.step(session).sample


def filling(base, i: int):
    """/data at 10 % and 1 GiB a second more: full in about 90 s."""
    data = FsUse("/data", "xfs", "/dev/vdb", "252:16", 100 * GIB, (10 + i) * GIB,
                 (90 - i) * GIB, 1.0)
    return dataclasses.replace(base, wall=T0 + 10 + i, filesystems=[data],
                               filesystems_wall=T0 + 10 + i, fs_devices={"/data": "vdb"})


def blind(wall: float):
    """What the rules get when the sampler did not answer: every source unknown."""
    gone = unknown_counters(HostRoot("/"), "the sampler timed out after 2 s")
    sample = rates(dataclasses.replace(gone, mono=gone.mono - 1, wall=wall - 1), gone)
    return dataclasses.replace(sample, wall=wall)


def active(found):
    return {(lf.finding.code, lf.finding.subject): lf for lf in found if lf.active}


def test_an_unanswered_sample_ends_no_finding_and_keeps_its_since(base):
    rules = LiveRules()
    for i in range(8):
        found = rules.update(filling(base, i))
    since = active(found)[KEY].since
    found = rules.update(blind(T0 + 18))
    assert KEY in active(found) and active(found)[KEY].since == since
    assert not [lf for lf in found if not lf.active]         # nothing ended
    found = rules.update(filling(base, 9))
    assert active(found)[KEY].since == since                  # the same finding goes on


def test_a_sample_that_sees_the_source_still_ends_it(base):
    rules = LiveRules()
    for i in range(8):
        rules.update(filling(base, i))
    rules.update(blind(T0 + 18))
    freed = FsUse("/data", "xfs", "/dev/vdb", "252:16", 100 * GIB, GIB, 99 * GIB, 1.0)
    found = rules.update(dataclasses.replace(base, wall=T0 + 19, filesystems=[freed],
                                             filesystems_wall=T0 + 19))
    assert KEY not in active(found)
    ended = [lf for lf in found if not lf.active and lf.key == KEY]
    assert len(ended) == 1 and ended[0].ended == T0 + 19
