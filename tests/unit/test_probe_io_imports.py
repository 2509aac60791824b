"""`inspector.commands.probe_io` registers its parser without loading the probe machinery
(asyncio, hdrh, worker threads): `inspector --help` and other commands do not pay for it."""
import random
import subprocess
import sys

from inspector.probes.latency import LatencyRecorder

HEAVY = ("asyncio", "hdrh", "inspector.probes.io.latency", "inspector.probes.io.target",
         "inspector.probes.io.stats", "inspector.roots.host")


def test_importing_probe_io_loads_no_probe_machinery():
    code = ("import sys, argparse, inspector.commands.probe_io as m\n"
            "p = argparse.ArgumentParser(); m.register(p.add_subparsers())\n"
            f"print(' '.join(n for n in {HEAVY!r} if n in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=30).stdout.split()
    # inspector.roots.host comes with commands.common (CliError); the rest must stay unloaded
    assert [n for n in out if n != "inspector.roots.host"] == [], out


def test_histogram_buckets_match_hdrh_recorded_iterator():
    # buckets() reads the counts array directly (the iterator is ~0.2 s per call)
    rng = random.Random(2)
    for _ in range(4):
        rec = LatencyRecorder()
        for _ in range(rng.randrange(1, 2000)):
            rec.record(int(rng.lognormvariate(rng.uniform(3, 20), 1.5)) + 1)
        slow = [(int(i.value_iterated_to), int(i.count_at_value_iterated_to))
                for i in rec.hist.get_recorded_iterator() if i.count_at_value_iterated_to]
        assert rec.buckets() == slow
    assert LatencyRecorder().buckets() == []
