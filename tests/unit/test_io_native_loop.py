"""The IO probe's C request loop (probes/io/_ioloop.c): built and used by default, its contract
(offsets, latency slots, stop time, failures, bounds), its interval figures (equal to the
Python ones), and what it is for: another busy Python thread of the process (the TUI's) must
not show as IO latency."""
import asyncio
import ctypes
import errno
import json
import mmap
import os
import subprocess
import sys
import threading
import time
from array import array
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import inspector_bin
from inspector.probes.io import latency as io_latency
from inspector.probes.io.latency import IoConfig, IoLatencyProbe
from inspector.probes.io.stats import IntervalPart
from inspector.probes.io.target import open_target

# The two tests marked serial time things (a stop within wall-clock bounds, CPU busy time
# against wall time): alone, after the parallel part of `make test`. The others time nothing

# None when the extension is not built: then the tests that call it fail, none is skipped
_ioloop = io_latency._ioloop


def test_the_c_loop_is_built_and_times_runs_by_default(data_file):
    # a build without it would pass every other test on the Python loop: fail here instead
    assert io_latency._ioloop is not None, "probes/io/_ioloop.c was not built (no compiler?)"
    with open_target(data_file) as target:
        res = asyncio.run(IoLatencyProbe(target, IoConfig(count=50)).run_to_end())
        assert res.loop == "c" and res.summary_json()["loop"] == "c"
        # an injected clock (seconds here, not monotonic_ns) keeps the run on the Python loop
        injected = IoConfig(count=50,
                            clock=time.monotonic)  # type: ignore[arg-type]  # any injected clock
        assert not io_latency.uses_native_loop(injected)
        forced = asyncio.run(IoLatencyProbe(target, IoConfig(count=50, native=False))
                             .run_to_end())
        assert forced.loop == "python" and forced.requests == 49


def _burst(fd, offsets, *, size=4096, buf=None, ops=None, first=0, count=None, lat=None,
           lat_pos=0, stop_at=1 << 62, flags=0, stop=None):
    buf = buf if buf is not None else mmap.mmap(-1, 4096)
    lat = lat if lat is not None else array("q", bytes(8 * 16))
    count = len(offsets) - first if count is None else count
    stop = stop if stop is not None else bytearray(1)
    return _ioloop.burst(fd, buf, size, offsets, ops, first, count, lat, lat_pos, stop_at,
                         flags, stop), buf, lat


def test_burst_reads_the_offsets_given_and_stores_latencies_in_the_slots(data_file):
    data = Path(data_file).read_bytes()
    fd = os.open(data_file, os.O_RDONLY)
    try:
        offsets = array("Q", [0, 8192, 4096 * 7, 4096 * 3])
        lat = array("q", [-1] * 8)
        before = time.monotonic_ns()
        (ran, t1, writes, err, nbytes), buf, lat = _burst(fd, offsets, first=1, count=3,
                                                          lat=lat, lat_pos=2)
        assert (ran, writes, err, nbytes) == (3, 0, 0, 4096)
        assert before < t1 <= time.monotonic_ns()           # CLOCK_MONOTONIC, in ns
        assert lat[:2].tolist() == [-1, -1] and lat[5:].tolist() == [-1, -1, -1]
        assert all(0 < v < 1e9 for v in lat[2:5])
        assert buf[:4096] == data[4096 * 3:4096 * 4]          # the last offset was read last
    finally:
        os.close(fd)


def test_burst_stops_after_the_request_that_reaches_stop_at(data_file):
    fd = os.open(data_file, os.O_RDONLY)
    try:
        (ran, t1, *_), _, _ = _burst(fd, array("Q", [0] * 10), stop_at=0)
        assert ran == 1
        soon = time.monotonic_ns() + 2_000_000
        (ran, t1, *_), _, lat = _burst(fd, array("Q", [0] * 16), stop_at=soon)
        assert 1 <= ran <= 16 and (t1 >= soon or ran == 16)
    finally:
        os.close(fd)


@pytest.mark.serial
def test_burst_stops_before_the_next_request_once_the_stop_byte_is_set(data_file):
    """stop() sets a byte the C loop reads between requests, GIL released: a burst can last
    until the next tick and still end at once."""
    fd = os.open(data_file, os.O_RDONLY)
    try:
        (ran, t1, *_), _, _ = _burst(fd, array("Q", [0] * 4), stop=bytearray(b"\1"))
        assert (ran, t1) == (0, 0)
        # a burst of seconds of page-cache reads, stopped from another thread after 0.2 s
        stop = bytearray(1)
        many = array("Q", [0]) * 5_000_000
        slots = array("q", bytes(8 * len(many)))
        timer = threading.Timer(0.2, stop.__setitem__, (0, 1))
        t = time.monotonic()
        timer.start()
        (ran, *_), _, _ = _burst(fd, many, lat=slots, stop_at=time.monotonic_ns() + 10**10,
                                 stop=stop)
        assert 0.15 < time.monotonic() - t < 2 and 0 < ran < len(many)
    finally:
        os.close(fd)


def test_burst_reports_short_reads_and_errors_of_the_request_that_failed(tmp_path):
    path = tmp_path / "short.bin"
    path.write_bytes(os.urandom(6000))
    fd = os.open(path, os.O_RDONLY)
    try:
        (ran, t1, _, err, nbytes), _, _ = _burst(fd, array("Q", [0, 0, 4096, 0]))
        assert (ran, err, nbytes) == (2, 0, 6000 - 4096) and t1 > 0
    finally:
        os.close(fd)
    (ran, _, _, err, nbytes), _, _ = _burst(fd, array("Q", [0]))      # fd closed now
    assert (ran, err, nbytes) == (0, errno.EBADF, -1)


def test_burst_refuses_out_of_range_arguments(data_file):
    fd = os.open(data_file, os.O_RDONLY)
    try:
        offsets = array("Q", [0, 4096])
        for kwargs in ({"count": 3}, {"first": 1, "count": 2}, {"lat": array("q", [0]),
                                                               "count": 2},
                       {"lat_pos": 15, "count": 2}, {"size": 8192}, {"size": 0},
                       {"flags": _ioloop.MIXED, "ops": b"\0"}, {"stop": bytearray()}):
            with pytest.raises(ValueError, match="out of range"):
                _burst(fd, offsets, **kwargs)
        with pytest.raises(TypeError):
            _burst(fd, [0, 4096])                         # offsets must be a uint64 buffer
    finally:
        os.close(fd)


def test_burst_writes_and_mixes_only_where_told(tmp_path):
    path = tmp_path / "scratch.bin"
    path.write_bytes(bytes(4 * 4096))
    fd = os.open(path, os.O_RDWR)
    try:
        buf = mmap.mmap(-1, 4096)
        buf.write(b"\xab" * 4096)
        (ran, _, writes, err, _), _, _ = _burst(fd, array("Q", [4096]), buf=buf,
                                                flags=_ioloop.WRITE)
        assert (ran, writes, err) == (1, 1, 0)
        buf.seek(0)
        buf.write(b"\xcd" * 4096)
        # write, read (the buffer now holds block 1: 0xab), write that at block 3
        (ran, _, writes, _, _), _, _ = _burst(fd, array("Q", [0, 4096, 12288]), buf=buf,
                                              ops=b"\1\0\1", flags=_ioloop.MIXED)
        assert (ran, writes) == (3, 2)
        (ran, *_), _, _ = _burst(fd, array("Q", [0, 4096]), flags=_ioloop.FADVISE)
        assert ran == 2
    finally:
        os.close(fd)
    content = path.read_bytes()
    assert content[:4096] == b"\xcd" * 4096 and content[4096:8192] == b"\xab" * 4096
    assert content[8192:12288] == bytes(4096) and content[12288:] == b"\xab" * 4096


def _hold_the_gil(stop: threading.Event) -> None:
    # a call through ctypes.PyDLL keeps the GIL: like a C extension or a long builtin call
    # in another thread, deterministic even on a loaded machine (sleeping needs no CPU)
    usleep = ctypes.PyDLL(None).usleep
    while not stop.is_set():
        usleep(HOLD_US)


HOLD_US = 50_000


def _run_beside_a_gil_holder(path: str, native: bool):
    stop = threading.Event()
    holder = threading.Thread(target=_hold_the_gil, args=(stop,), daemon=True)
    holder.start()
    try:
        with open_target(path, direct=False) as target:
            target.cached = True           # page-cache hits: ~1-2 us each, whatever the disk
            res = asyncio.run(IoLatencyProbe(target, IoConfig(deadline=0.6, native=native))
                              .run_to_end())
    finally:
        stop.set()
        holder.join()
    assert res.error is None and res.requests > 0
    return res


@pytest.mark.serial
def test_another_thread_holding_the_gil_does_not_show_as_io_latency(data_file):
    """The Python loop reads its second clock only once it has the GIL back: with another
    thread holding it, page-cache reads are timed at the length of that hold. The C loop
    times them as what they are."""
    Path(data_file).read_bytes()                       # in the page cache
    native = _run_beside_a_gil_holder(data_file, native=True)
    python = _run_beside_a_gil_holder(data_file, native=False)
    # the control: the Python loop counts the holds as latency: most of its run time
    assert python.busy_ns > 0.5 * python.wall_ns, (python.busy_ns, python.wall_ns)
    assert python.latency.max_ns > HOLD_US * 1000 * 0.8, python.latency
    # the C loop's requests are timed while the other thread holds the GIL, without it
    assert native.busy_ns < 0.5 * native.wall_ns, (native.busy_ns, native.wall_ns)
    assert native.latency.max_ns < HOLD_US * 1000 * 0.8, native.latency
    assert native.latency.avg_ns < 50_000, native.latency


def test_the_cli_says_when_the_python_loop_times_the_run(data_file):
    """Installed without a compiler, the probe still runs, on the Python loop, and says so."""
    hide = ("import sys; sys.modules['inspector.probes.io._ioloop'] = None; "
            "from inspector.cli import main; sys.exit(main(sys.argv[1:]))")
    human = subprocess.run([sys.executable, "-c", hide, "probe", "io", data_file, "-c", "20"],
                           capture_output=True, text=True, timeout=60)
    assert human.returncode == 0, human.stderr
    assert "note: requests timed by the Python loop" in human.stderr
    assert "--- " in human.stdout and "min/avg/max/mdev" in human.stdout
    as_json = subprocess.run([sys.executable, "-c", hide, "probe", "io", data_file, "-c", "20",
                              "--json"], capture_output=True, text=True, timeout=60)
    doc = json.loads(as_json.stdout)
    assert doc["summary"]["loop"] == "python" and doc["summary"]["requests"] == 19
    assert any("Python loop" in note for note in doc["notes"])
    built = subprocess.run([inspector_bin(), "probe", "io", data_file, "-c", "20", "--json"],
                           capture_output=True, text=True, timeout=60)
    doc = json.loads(built.stdout)
    assert doc["summary"]["loop"] == "c" and not any("Python loop" in n for n in doc["notes"])


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=(1 << 62) // 9000), min_size=1,
                max_size=9000))
def test_c_part_equals_the_python_figures(values):
    """An interval part from the C loop's part() is the one IntervalPart.of computes in
    Python: sum, min, max, the k largest (descending) and the sorted subsample."""
    chunk = array("q", values)
    assert IntervalPart.of(chunk, _ioloop.part) == IntervalPart.of(chunk)


def test_c_part_refuses_what_it_cannot_summarize():
    for args in ((array("q"), 2, 1), (array("q", [1]), 0, 1), (array("q", [1]), 1, 0),
                 (b"\0" * 12, 1, 1)):
        with pytest.raises(ValueError):
            _ioloop.part(*args)
