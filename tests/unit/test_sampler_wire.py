"""A live sample crosses from the sampler's child to the caller pickled (inspector.roots.bounded):
its per-process records (ProcStat, ProcIo) go as the class and a tuple of their fields
(inspector.live.worker), which comes back equal, smaller and faster than copyreg's generic
reduction of a slotted class, compared in the same run."""
from __future__ import annotations

import copyreg
import pickle
import time
import timeit

import inspector.live.worker  # noqa: F401  (registers the reductions)
from inspector.live.procs import ProcIo, ProcStat
from inspector.live.sampler import LiveSampler
from inspector.roots.host import HostRoot


def _generic(obj: object) -> bytes:
    """`obj` pickled with the default reduction of ProcStat and ProcIo."""
    classes: tuple[type, ...] = (ProcStat, ProcIo)
    saved = [(cls, copyreg.dispatch_table.pop(cls)) for cls in classes]
    try:
        return pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    finally:
        for cls, reduction in saved:
            copyreg.dispatch_table[cls] = reduction


def test_a_sample_comes_back_equal_and_smaller_and_faster():
    sampler = LiveSampler(HostRoot("/"))
    sampler.sample()
    time.sleep(0.2)
    counters = sampler.sample()
    assert isinstance(counters.procs, dict) and len(counters.procs) > 5
    ours = pickle.dumps(counters, protocol=pickle.HIGHEST_PROTOCOL)
    assert pickle.loads(ours) == counters
    generic = _generic(counters)
    assert pickle.loads(generic) == counters
    assert len(ours) < 0.9 * len(generic), (len(ours), len(generic))
    procs = counters.procs
    fast = min(timeit.repeat(lambda: pickle.dumps(procs, protocol=5), number=20, repeat=5))
    slow = min(timeit.repeat(lambda: _generic(procs), number=20, repeat=5))
    assert fast < slow, (fast, slow)


def test_every_field_survives_including_unknowns():
    stat = ProcStat(7, "a (b)", "D", 123, threads=3, tgid=5, flags=0x200000, majflt=9,
                    cpu_ticks=11, rss_kib=12, uid=None, swap_kib=None, read_bytes=1,
                    write_bytes=None)
    assert pickle.loads(pickle.dumps(stat)) == stat
    assert pickle.loads(pickle.dumps(ProcIo(1, 2))) == ProcIo(1, 2)
