"""memcached probe parts without a server: keys per protocol.txt, fast latency recording,
counter checks, ramp steps and knee, address parsing, reply parsing on a fake transport."""
from __future__ import annotations

import asyncio
import math
from array import array

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from inspector.probes.latency import LatencyRecorder
from inspector.probes.memcached.engine import Engine, LoadConnection
from inspector.probes.memcached.latency import record_array, sorted_percentiles
from inspector.probes.memcached.probe import MemcachedLoad, ProbeError
from inspector.probes.memcached.ramp import McRampStep, find_knee, ramp_steps
from inspector.probes.memcached.stats import ServerStats, compare
from inspector.probes.memcached.target import parse_address as parse_server
from inspector.probes.memcached.workload import SizeRange, Workload, make_key


# --- keys and values ---------------------------------------------------------------------------
def test_keys_are_valid_unique_and_sized():
    wl = Workload(5000, SizeRange(20, 60), SizeRange(50, 5000))
    assert len(set(wl.keys)) == 5000
    for key in wl.keys:
        assert 20 <= len(key) <= 60
        assert all(33 <= b < 127 for b in key)       # no space, no control characters
    for i in (0, 4999):
        req = wl.set_request(i)
        head, body = req.split(b"\r\n", 1)
        verb, key, flags, exptime, n = head.split(b" ")
        assert verb == b"set" and key == wl.keys[i] and int(n) == wl.value_sizes[i]
        assert len(body) == int(n) + 2 and body.endswith(b"\r\n")
        assert wl.get_requests[i] == b"get " + key + b"\r\n"


def test_key_of_250_bytes_and_too_small_keys():
    import random
    assert len(make_key(123456, 250, random.Random(1))) == 250
    with pytest.raises(ValueError):
        make_key(10**9, 3, random.Random(1))


def test_large_workloads_join_set_requests_per_send(monkeypatch):
    import inspector.probes.memcached.workload as w
    monkeypatch.setattr(w, "PREENCODE_BUDGET", 1000)
    wl = Workload(50, SizeRange(10, 10), SizeRange(100, 100))
    assert wl.set_requests is None
    assert wl.set_request(3).endswith(b"\r\n") and len(wl.set_request(3)) == len(b"set  0 0 100\r\n") + 10 + 102


@pytest.mark.parametrize("text,expected", [("40", (40, 40)), ("20-60", (20, 60)), (" 7 ", (7, 7))])
def test_size_range_parse(text, expected):
    r = SizeRange.parse(text, "--key-size", 1, 250)
    assert (r.lo, r.hi) == expected


@pytest.mark.parametrize("text", ["0", "251", "60-20", "abc", "1-2-3"])
def test_size_range_rejects(text):
    with pytest.raises(ValueError):
        SizeRange.parse(text, "--key-size", 1, 250)


def test_load_validation():
    with pytest.raises(ProbeError):
        MemcachedLoad(execute_number=5, duration_s=1).validate()
    with pytest.raises(ProbeError):
        MemcachedLoad(test="delete").validate()  # type: ignore[arg-type]  # refused: no such test
    assert MemcachedLoad().effective_execute_number == 10000
    assert MemcachedLoad(duration_s=3).effective_execute_number is None
    assert MemcachedLoad(execute_number=7).effective_key_count == 7


# --- latency bookkeeping -----------------------------------------------------------------------
@settings(max_examples=25, deadline=None)
@given(st.lists(st.integers(min_value=1, max_value=10**11), min_size=1, max_size=300))
def test_record_array_equals_record_many(values):
    a, b = LatencyRecorder(), LatencyRecorder()
    a.record_many(values)
    record_array(b, array("q", values))
    assert b.summary() == a.summary()
    qs = (1, 25, 75, 95, 99.99)
    assert b.summary(qs) == a.summary(qs)


def test_record_array_clamps_like_record_many():
    a, b = LatencyRecorder(), LatencyRecorder()
    values = [0, 5, 10**13]
    a.record_many(values)
    record_array(b, array("q", values))
    assert b.summary() == a.summary()


@given(st.lists(st.integers(min_value=1, max_value=10**9), min_size=1, max_size=200))
def test_sorted_percentiles_are_nearest_rank(values):
    got = sorted_percentiles(array("q", values))
    ordered = sorted(values)
    for q in (50, 90, 99, 99.9):
        assert got[f"p{q:g}"] == ordered[max(1, math.ceil(q / 100 * len(values))) - 1]
    assert got["max"] == ordered[-1]


# --- server counter checks ---------------------------------------------------------------------
def stats(**kw):
    return ServerStats({"pid": 1, **kw})


def test_counter_check_exact_and_mismatch():
    out = compare(stats(cmd_set=10, cmd_get=0, get_hits=0, get_misses=0),
                  stats(cmd_set=110, cmd_get=55, get_hits=50, get_misses=5),
                  {"cmd_set": 100, "cmd_get": 60}, {"cmd_set": 100, "cmd_get": 60})
    by = {c.counter: c for c in out.checks}
    assert by["cmd_set"].ok and by["cmd_set"].server_delta == 100
    assert by["cmd_get"].ok is False and "55" in by["cmd_get"].note
    assert out.mismatches == [by["cmd_get"]]
    assert out.deltas["get_hits+get_misses"] == 55


def test_counter_check_more_than_sent_blames_other_clients():
    out = compare(stats(cmd_set=0), stats(cmd_set=150), {"cmd_set": 100}, {"cmd_set": 100})
    assert out.checks[0].ok is False and "other clients" in out.checks[0].note


def test_counter_check_unanswered_range_and_unknown():
    out = compare(stats(cmd_set=0), stats(cmd_set=98), {"cmd_set": 100}, {"cmd_set": 97})
    assert out.checks[0].ok and "3 request(s) unanswered" in out.checks[0].note
    out = compare(stats(cmd_set=0), ServerStats(None, "stats: could not connect"),
                  {"cmd_set": 100}, {"cmd_set": 100})
    assert out.checks[0].ok is None and "could not connect" in out.checks[0].note


# --- ramp ----------------------------------------------------------------------------------------
def test_ramp_steps():
    assert ramp_steps(32, 4096) == [32, 64, 128, 256, 512, 1024, 2048, 4096]
    assert ramp_steps(32, 3000) == [32, 64, 128, 256, 512, 1024, 2048, 3000]
    assert ramp_steps(32, 10) == [10]


def step(n, p99, errors=None):
    return McRampStep(n, n, 0.0, 1.0, 1000, 1000.0, p99 // 2, p99, p99, errors or {}, {}, 0, 0, 1)


def test_knee_on_p99_growth_or_first_errors():
    steps = [step(32, 1000), step(64, 1900), step(128, 4100), step(256, 5000, {"timeout": 2})]
    named, p99_knee, err, reason = find_knee(steps)
    assert (named, p99_knee, err) == (128, 128, 256)
    assert "2.2x from 64 to 128" in reason
    named, _, err, reason = find_knee([step(32, 1000), step(64, 1100, {"too_many_connections": 3})])
    assert named == err == 64 and "too_many_connections x3" in reason
    assert find_knee([step(32, 1000), step(64, 2000)])[0] is None      # exactly 2x is not a knee


# --- addresses -----------------------------------------------------------------------------------
@pytest.mark.parametrize("text,expected", [
    ("10.0.0.1", ("10.0.0.1", 11211)), ("cache:11311", ("cache", 11311)),
    ("[::1]:11212", ("::1", 11212)), ("::1", ("::1", 11211)), ("[fe80::1]", ("fe80::1", 11211))])
def test_parse_server(text, expected):
    assert parse_server(text) == expected


@pytest.mark.parametrize("text", ["host:0", "host:x", "[::1", ":11211", "h:70000"])
def test_parse_server_rejects(text):
    with pytest.raises(ProbeError):
        parse_server(text)


# --- reply parsing on a fake transport -----------------------------------------------------------
class FakeTransport(asyncio.Transport):
    def __init__(self):
        super().__init__()
        self.written = []
        self.aborted = False

    def write(self, data):
        self.written.append(data)

    def abort(self):
        self.aborted = True

    def get_extra_info(self, name, default=None):
        return default


def make_conn(set_ratio, limit=100):
    async def build():
        wl = Workload(4, SizeRange(10, 10), SizeRange(5, 5))
        eng = Engine(wl, set_ratio, limit)
        conn = LoadConnection(eng, 0, limit)
        conn.connection_made(FakeTransport())
        eng.conns.append(conn)
        eng.active = 1
        eng.start()
        return eng, conn
    eng, conn = asyncio.run(build())
    eng.call_soon = lambda callback: None     # the loop is gone: flush_writes by hand
    return eng, conn


def test_get_reply_split_anywhere_is_reassembled():
    eng, conn = make_conn(0.0)
    key = eng.workload.keys[0]
    reply = b"VALUE " + key + b" 0 5\r\nabcde\r\nEND\r\n"
    for cut in range(1, len(reply)):
        conn.data_received(reply[:cut])
        conn.data_received(reply[cut:])
    assert len(eng.lat_get) == len(reply) - 1 and eng.get_hits == len(reply) - 1
    assert not eng.errors and not conn.dead


def test_set_replies_and_error_lines():
    eng, conn = make_conn(1.0)
    conn.data_received(b"STO")
    conn.data_received(b"RED\r\n")
    conn.data_received(b"SERVER_ERROR out of memory storing object\r\n")
    conn.data_received(b"NOT_STORED\r\n")
    assert len(eng.lat_set) == 1 and eng.failed_set == 2
    assert eng.errors == {"server_error": 1, "not_stored": 1}
    assert not conn.dead and eng.sent_set == 4
    conn.data_received(b"ERROR Too many open connections\r\n")
    assert conn.dead and conn.transport.aborted
    assert eng.errors["too_many_connections"] == 1


def test_garbage_reply_drops_the_connection():
    eng, conn = make_conn(0.0)
    conn.data_received(b"VALUE k 0 notanumber\r\nxx\r\nEND\r\n")
    assert conn.dead and eng.errors == {"protocol": 1}


def test_next_requests_are_written_together_after_the_replies():
    eng, conn = make_conn(1.0)
    first = list(conn.transport.written)
    conn.data_received(b"STORED\r\n")
    assert conn.transport.written == first and eng.outbox == [conn]   # queued, not yet written
    eng.flush_writes()
    assert conn.transport.written == first + [eng.workload.set_requests[1]] and not eng.outbox
    assert 0 < conn.sent_at < (1 << 62)
    conn.data_received(b"STORED\r\n")
    eng.close()
    eng.flush_writes()                      # closed meanwhile: nothing more is written
    assert len(conn.transport.written) == 2


def test_closed_loop_stops_at_the_execute_number():
    eng, conn = make_conn(1.0, limit=3)
    for _ in range(3):
        conn.data_received(b"STORED\r\n")
    assert eng.sent_set == 3 and len(eng.lat_set) == 3
    assert conn.finished and eng.done.is_set() and not eng.errors
    conn.data_received(b"STORED\r\n")     # a reply nobody asked for: the stream is out of step
    assert eng.errors == {"protocol": 1} and conn.dead
