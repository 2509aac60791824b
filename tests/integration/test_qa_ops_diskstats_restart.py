"""QA (live view): md0 stopped and re-assembled (or a disk removed and rescanned under the
same name and major:minor) starts its /proc/diskstats counters from 0. `top` took the drop for
a 32-bit wrap: ~4.29e9 reads in one interval, r/s in the billions. It is a new device (rates
from the next interval); a genuine wrap from just under 2^32 still counts as a wrap."""
from inspector.live.diskstats import disk_rates, parse_diskstats


def line(name, maj, mnr, rd, rsec, wr, wsec, io_ms):
    return f"{maj} {mnr} {name} {rd} 0 {rsec} {rd} {wr} 0 {wsec} {wr} 0 {io_ms} {io_ms}"


def test_reassembled_md_is_new_not_a_wrap():
    prev = parse_diskstats("\n".join([line("sda", 8, 0, 50_000, 400_000, 9_000, 72_000, 900),
                                      line("md0", 9, 0, 991_042, 8_085_456, 317_289, 2_538_224,
                                           0)]))
    cur = parse_diskstats("\n".join([line("sda", 8, 0, 50_100, 400_800, 9_010, 72_080, 950),
                                     line("md0", 9, 0, 40, 320, 0, 0, 0)]))
    rates, changes = disk_rates(prev, cur, 1.0)
    assert [r.name for r in rates] == ["sda"], [(r.name, r.r_s) for r in rates]
    assert changes.appeared == ["md0"]


def test_a_real_32_bit_wrap_is_still_a_wrap():
    prev = parse_diskstats(line("sda", 8, 0, 2**32 - 10, 800, 0, 0, 2**32 - 200))
    cur = parse_diskstats(line("sda", 8, 0, 90, 1600, 0, 0, 300))
    rates, changes = disk_rates(prev, cur, 1.0)
    assert [r.name for r in rates] == ["sda"] and rates[0].r_s == 100.0
    assert not changes.appeared
