"""The overview's live headline: groups move to the next line instead of being cut."""
from inspector.tui.live import DiskRate, LiveView, NicRate
from inspector.tui.summaries import headline


def view() -> LiveView:
    return LiveView(interval=2.0,
                    disks=[DiskRate("nvme0n1p3", 93.4, 12.5), DiskRate("sda", 1.0, 0.2)],
                    nics=[NicRate("enp129s0f1", 123e6, 45e6, stalled=True),
                          NicRate("bond0.1203", 99e6, 1e6)],
                    iowait=31.2, steal=12.0)


def test_headline_fits_80_columns_and_keeps_groups_whole():
    text = headline(view(), None, 78)
    lines = text.plain.split("\n")
    assert len(lines) >= 2 and all(len(line) <= 78 for line in lines), lines
    # every figure is there, each group whole on one line
    for group in ("disk nvme0n1p3 93.4% util 12.5 ms await", "cpu iowait 31.2% steal 12.0%",
                  "enp129s0f1 rx 123.0 MB/s tx 45.0 MB/s STALLED",
                  "bond0.1203 rx 99.0 MB/s tx 1.0 MB/s"):
        assert any(group in line for line in lines), (group, lines)


def test_headline_without_width_is_one_line():
    assert "\n" not in headline(view(), None).plain
    wide = headline(view(), None, 200).plain
    assert "\n" not in wide and "bond0.1203" in wide
