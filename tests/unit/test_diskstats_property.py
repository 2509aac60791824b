"""Property tests for the /proc/diskstats parser: arbitrary or truncated input gives a result
or a DiskstatsParseError, never another exception; well-formed input round-trips."""
from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from inspector.live.diskstats import DiskstatsParseError, parse_diskstats
from inspector.live.sampler import LiveSampler

counter = st.integers(min_value=0, max_value=2**64 - 1)
name = st.text(alphabet="abcdefghlmnopsvx0123456789-", min_size=1, max_size=8)


@st.composite
def diskstats_line(draw):
    n = draw(st.sampled_from([11, 15, 17]))
    values = draw(st.lists(counter, min_size=n, max_size=n))
    return (draw(st.integers(0, 4095)), draw(st.integers(0, 2**20)), draw(name), values)


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=400))
def test_arbitrary_text_gives_result_or_parse_error(text):
    try:
        disks = parse_diskstats(text)
    except DiskstatsParseError as exc:
        assert "/proc/diskstats line" in str(exc)
    else:
        assert isinstance(disks, dict)


@settings(max_examples=100, deadline=None)
@given(st.lists(diskstats_line(), min_size=1, max_size=8, unique_by=lambda t: t[2]))
def test_well_formed_lines_round_trip(lines):
    text = "\n".join(f"{maj:4d} {mnr:7d} {nm} " + " ".join(map(str, vals))
                     for maj, mnr, nm, vals in lines)
    disks = parse_diskstats(text)
    assert list(disks) == [nm for _, _, nm, _ in lines]
    for maj, mnr, nm, vals in lines:
        d = disks[nm]
        assert (d.major, d.minor, d.rd_ios, d.time_in_queue) == (maj, mnr, vals[0], vals[10])
        assert (d.dc_ios is not None) == (len(vals) >= 15)
        assert (d.fl_ios is not None) == (len(vals) == 17)


@settings(max_examples=100, deadline=None)
@given(st.lists(diskstats_line(), min_size=1, max_size=5, unique_by=lambda t: t[2]),
       st.data())
def test_truncated_read_gives_result_or_parse_error(lines, data):
    text = "\n".join(f"{maj} {mnr} {nm} " + " ".join(map(str, vals))
                     for maj, mnr, nm, vals in lines)
    cut = data.draw(st.integers(0, len(text)))
    try:
        disks = parse_diskstats(text[:cut])
    except DiskstatsParseError:
        return
    # a cut that still parses kept whole lines (or cut inside the last number)
    assert len(disks) <= len(lines)


@settings(max_examples=60, deadline=None)
@given(st.binary(max_size=300))
def test_sampler_turns_garbage_file_into_unknown(tmp_path_factory, blob):
    root_dir = tmp_path_factory.mktemp("garbage")
    (root_dir / "proc").mkdir()
    (root_dir / "proc" / "diskstats").write_bytes(blob)
    from inspector.roots.host import HostRoot
    snap = LiveSampler(HostRoot(str(root_dir))).sample()   # must not raise
    assert isinstance(snap.disks, dict) or "diskstats" in snap.disks.reason
