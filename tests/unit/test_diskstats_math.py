"""Synthetic /proc/diskstats sequences: 14/18/20 fields, counter wraps, devices coming and
going, md members far busier than their array."""
from __future__ import annotations

import pytest

from inspector.live.diskstats import (
    DiskInfo,
    DiskstatsParseError,
    counter_delta,
    device_rates,
    disk_rates,
    parse_diskstats,
)
from inspector.model import Unknown

# 4.18+ has 18 fields, 5.5+ 20; before that 14.
LINE20 = "   8       0 sda {} 0 {} {} {} 0 {} {} 0 {} {} {} 0 {} {} {} {}"


def line(name="sda", maj=8, mnr=0, rd=0, rdm=0, rsec=0, rms=0, wr=0, wrm=0, wsec=0, wms=0,
         inflight=0, io_ms=0, queue_ms=0, extra=()):
    fields = [maj, mnr, name, rd, rdm, rsec, rms, wr, wrm, wsec, wms, inflight, io_ms, queue_ms,
              *extra]
    return " ".join(str(f) for f in fields)


def test_14_18_20_field_kernels_parse_with_optional_counters():
    text = "\n".join([
        line("sda", rd=10),                                        # 14 fields (< 4.18)
        line("sdb", mnr=16, rd=20, extra=(1, 2, 3, 4)),            # 18 fields (4.18 .. 5.4)
        line("sdc", mnr=32, rd=30, extra=(1, 2, 3, 4, 5, 6)),      # 20 fields (5.5+)
    ])
    disks = parse_diskstats(text)
    assert disks["sda"].rd_ios == 10 and disks["sda"].dc_ios is None and disks["sda"].fl_ios is None
    assert disks["sdb"].dc_ios == 1 and disks["sdb"].dc_ticks == 4 and disks["sdb"].fl_ios is None
    assert disks["sdc"].fl_ios == 5 and disks["sdc"].fl_ticks == 6


def test_iostat_formulas_on_a_known_interval():
    prev = parse_diskstats(line(rd=1000, rdm=10, rsec=8000, rms=500, wr=2000, wrm=40, wsec=32000,
                                wms=4000, io_ms=1000, queue_ms=4500,
                                extra=(10, 0, 800, 30, 100, 50)))["sda"]
    cur = parse_diskstats(line(rd=1200, rdm=30, rsec=9600, rms=700, wr=2500, wrm=90, wsec=40000,
                               wms=5000, inflight=3, io_ms=1500, queue_ms=5700,
                               extra=(20, 5, 1800, 60, 140, 70)))["sda"]
    r = device_rates(prev, cur, 2.0)
    assert (r.r_s, r.w_s, r.d_s, r.f_s) == (100.0, 250.0, 5.0, 20.0)
    assert (r.rkB_s, r.wkB_s, r.dkB_s) == (400.0, 2000.0, 250.0)      # sectors / 2 / s
    assert (r.rrqm_s, r.wrqm_s, r.drqm_s) == (10.0, 25.0, 2.5)
    assert r.r_await == 1.0 and r.w_await == 2.0 and r.d_await == 3.0 and r.f_await == 0.5
    assert r.rareq_sz == 4.0 and r.wareq_sz == 8.0 and r.dareq_sz == 50.0   # kB per request
    assert r.aqu_sz == pytest.approx(0.6)      # 1200 weighted ms / 2000 ms
    assert r.util == pytest.approx(25.0)       # 500 busy ms / 2000 ms
    assert r.in_flight == 3


def test_util_capped_at_100_like_iostat_and_idle_awaits_are_zero():
    prev = parse_diskstats(line(io_ms=0))["sda"]
    cur = parse_diskstats(line(io_ms=1500))["sda"]
    r = device_rates(prev, cur, 1.0)
    assert r.util == 100.0
    assert r.r_await == 0.0 and r.rareq_sz == 0.0


def test_older_kernel_reports_discard_and_flush_as_unknown():
    prev = parse_diskstats(line(rd=1))["sda"]
    cur = parse_diskstats(line(rd=2))["sda"]
    r = device_rates(prev, cur, 1.0)
    assert isinstance(r.d_s, Unknown) and "4.18" in r.d_s.reason
    assert isinstance(r.f_s, Unknown) and "5.5" in r.f_s.reason


def test_32_bit_counter_wrap():
    # millisecond fields were printed from 32-bit values (and everything on 32-bit kernels)
    assert counter_delta(2**32 - 100, 50) == 150
    prev = parse_diskstats(line(rd=2**32 - 10, rms=2**32 - 1000, io_ms=2**32 - 200))["sda"]
    cur = parse_diskstats(line(rd=90, rms=1000, io_ms=300))["sda"]
    r = device_rates(prev, cur, 1.0)
    assert r.r_s == 100.0
    assert r.r_await == 20.0            # 2000 ms over 100 reads
    assert r.util == 50.0               # 500 ms busy of 1000


def test_64_bit_counter_wrap():
    assert counter_delta(2**64 - 5, 5) == 10
    prev = parse_diskstats(line(wr=2**64 - 100, wsec=2**64 - 800))["sda"]
    cur = parse_diskstats(line(wr=400, wsec=3200))["sda"]
    r = device_rates(prev, cur, 1.0)
    assert r.w_s == 500.0 and r.wkB_s == 2000.0


def test_devices_appearing_vanishing_and_replaced():
    prev = parse_diskstats("\n".join([line("sda", rd=10), line("loop0", 7, 0, rd=5),
                                      line("sdb", 8, 16, rd=1)]))
    cur = parse_diskstats("\n".join([line("sda", rd=20), line("sdc", 8, 32, rd=7),
                                     line("sdb", 65, 0, rd=2)]))      # sdb now another device
    rates, changes = disk_rates(prev, cur, 1.0)
    assert [r.name for r in rates] == ["sda"]
    assert rates[0].r_s == 10.0
    assert changes.appeared == ["sdc", "sdb"]
    assert changes.vanished == ["loop0"]


def test_saturated_member_under_idle_md_is_flagged():
    prev = parse_diskstats("\n".join([line("sda1", 8, 1), line("sdb1", 8, 17),
                                      line("md0", 9, 0)]))
    cur = parse_diskstats("\n".join([
        line("sda1", 8, 1, rd=50, io_ms=100),
        line("sdb1", 8, 17, rd=900, rms=40000, io_ms=990, queue_ms=40000),
        line("md0", 9, 0, rd=950),          # md does not account busy time: looks idle
    ]))
    topo = {"md0": DiskInfo("md0", "md", members=["sda1", "sdb1"]),
            "sda1": DiskInfo("sda1", "part", parent="sda"),
            "sdb1": DiskInfo("sdb1", "part", parent="sdb")}
    rates, _ = disk_rates(prev, cur, 1.0, topo)
    md0 = next(r for r in rates if r.name == "md0")
    assert md0.util == 0.0
    assert md0.members == ["sda1", "sdb1"]
    assert md0.busy_members == ["sdb1"]
    assert next(r for r in rates if r.name == "sdb1").parent == "sdb"


def test_balanced_members_are_not_flagged():
    prev = parse_diskstats("\n".join([line("sda", 8, 0), line("sdb", 8, 16), line("md0", 9, 0)]))
    cur = parse_diskstats("\n".join([line("sda", 8, 0, io_ms=600), line("sdb", 8, 16, io_ms=620),
                                     line("md0", 9, 0, io_ms=610)]))
    topo = {"md0": DiskInfo("md0", "md", members=["sda", "sdb"])}
    rates, _ = disk_rates(prev, cur, 1.0, topo)
    assert next(r for r in rates if r.name == "md0").busy_members == []


@pytest.mark.parametrize("text, fragment", [
    ("8 0 sda 1 2 3", "got 6"),
    (line().replace(" 0 0 0", " 0 x 0", 1), "non-numeric"),
    (line(rd=-1), "negative"),
    (line() + "\n" + line(), "duplicate"),
])
def test_malformed_input_names_the_line(text, fragment):
    with pytest.raises(DiskstatsParseError, match=fragment):
        parse_diskstats(text)


def test_real_kernel_line_from_this_kind_of_machine():
    text = ("   7       0 loop0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n"
            " 254       0 vda 74868 7384 2115042 9379 6956 12676 777936 4240 0 7112 14073 4180 3 "
            "83616 388 1149 64\n")
    disks = parse_diskstats(text)
    vda = disks["vda"]
    assert (vda.major, vda.minor, vda.rd_ios, vda.wr_sectors, vda.fl_ticks) == (254, 0, 74868,
                                                                               777936, 64)
