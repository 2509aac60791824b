"""LiveChart: nice bounds, sticky scale, one styled run per plot row, markers above the area."""
from __future__ import annotations

from textual.app import App

from inspector.widgets.chart import LiveChart, compact_number, nice_ceil, sticky_scale
from inspector.widgets.histogram import log_bins


def test_nice_ceil_and_sticky_scale():
    assert [nice_ceil(v) for v in (0.7, 1, 1.2, 3, 7, 12, 450)] == [1, 1, 2, 5, 10, 20, 500]
    assert sticky_scale(None, 3) == 5
    assert sticky_scale(5, 6) == 10          # grows at once
    assert sticky_scale(10, 5) == 10         # stays while the data is within 40%..100%
    assert sticky_scale(10, 4.5) == 10
    assert sticky_scale(10, 1.5) == 2        # shrinks only when everything is far below
    assert compact_number(1500) == "1.5k" and compact_number(25_000_000) == "25M"


class ChartApp(App):
    def compose(self):
        yield LiveChart("t", series=("p50", "max"), unit="ms", id="c")


async def test_one_styled_run_per_row_and_labelled_axis():
    app = ChartApp()
    async with app.run_test(size=(60, 12)) as pilot:
        chart = app.query_one(LiveChart)
        for i in range(100):
            chart.push(float(i % 10), float(i % 10) * 2)
        await pilot.pause()
        height = chart.size.height
        lines = [chart.render_line(y) for y in range(height)]
        for strip in lines:
            segments = [s for s in strip if s.text]
            assert len(segments) <= 2          # axis label + one plot run
        text = ["".join(s.text for s in strip) for strip in lines]
        assert text[0].strip().startswith("20┤")  # sticky nice top bound of max=18
        assert text[-1].lstrip().startswith("0 ms┤")
        assert any("█" in t for t in text) and any("•" in t for t in text)
        assert chart.scale == 20


def test_histogram_bins_keep_every_count():
    buckets = [(1000 * 2 ** i, i + 1) for i in range(20)]
    bins = log_bins(buckets, 6)
    assert len(bins) == 6
    assert sum(c for _, c in bins) == sum(c for _, c in buckets)
    assert bins[-1][0] == buckets[-1][0]
