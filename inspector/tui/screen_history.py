"""History: a recorded probe's latency (p50/p99/max), ops/s and throughput (MiB/s, when its
runs carry it) over time, from the database `inspector record --probe ...` fills and
`inspector history` reads (same path, same `--db`).

Reached from the Probes screen with `h`. The left list holds every recorded probe spec
(kind:target and its run count); the charts show the highlighted one, one point per recorded
run, oldest left; `t` turns them into the hour-of-day table, then the per-day one, then back
(the table `inspector history --by hour|day` prints). The database is read by a forked child
(inspector.roots.bounded), waited for by a daemon thread with a deadline: a large file or a busy
recorder never blocks the keys, and a database on a mount that never answers says so after
READ_TIMEOUT_S instead of leaving a thread stuck in the kernel, which would keep the TUI from
exiting.
"""
from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import Screen
from textual.widgets import Footer, OptionList, Static
from textual.widgets.option_list import Option

from inspector.probes.bounded_ask import ask_bounded
from inspector.record.history_table import render_buckets
from inspector.text.escapes import visible
from inspector.widgets.chart import LiveChart

VIEWS = ("charts", "hour", "day")       # what `t` cycles through
READ_TIMEOUT_S = 10.0                   # a read of the history database, in its child
HUNG = "(a hung filesystem? look for processes in D state)"


@dataclass
class HistoryPoint:
    ts: float
    tz_offset_s: int
    primary_ms: float | None      # p50 when the run recorded it, else the mean
    p99_ms: float | None
    max_ms: float | None
    ops_per_s: float | None
    error: str | None
    mib_s: float | None = None    # throughput, when the run carries it


def _ms(us) -> float | None:
    return None if us is None else us / 1000.0


def history_points(rows: list[dict]) -> tuple[list[HistoryPoint], str]:
    """Chart points from HistoryDB.runs() rows, and the name of the primary series: "p50"
    when every run stored one (recorded runs keep their full summary), else "avg" (an
    imported ioping log has a mean, no median)."""
    from inspector.record.history import MIB, run_bytes_per_s
    points, medians = [], 0
    for row in rows:
        p50_us = None
        detail = row.get("detail")
        if isinstance(detail, str) and detail:
            try:
                detail = json.loads(detail)
            except ValueError:
                detail = None
        if isinstance(detail, dict):
            summary = detail["summary"] if isinstance(detail.get("summary"), dict) else detail
            p50_us = summary.get("p50_us")
        medians += p50_us is not None
        throughput = run_bytes_per_s(row)
        points.append(HistoryPoint(row["ts"], row.get("tz_offset_s") or 0,
                                   _ms(p50_us if p50_us is not None else row.get("lat_avg_us")),
                                   _ms(row.get("lat_p99_us")), _ms(row.get("lat_max_us")),
                                   row.get("ops_per_s"), row.get("error"),
                                   None if throughput is None else throughput / MIB))
    return points, ("p50" if points and medians == len(points) else "avg")


class HistoryUnreadable(Exception):
    """The database could not be read, or did not answer: one line for the operator."""


def read_history(db_path: str, what: str, args: tuple = (),
                 timeout: float = READ_TIMEOUT_S) -> Any:
    """HistoryDB(db_path).targets() ("targets") or .runs(*args) ("runs"), read in a forked
    child under `timeout`; HistoryUnreadable otherwise."""
    from inspector.record.history import HistoryDB, HistoryError  # imported here, not in the child
    from inspector.roots.bounded import TimedOut, WorkerFailed

    def in_child() -> tuple:
        try:
            with HistoryDB(db_path, create=False) as db:
                return "ok", (db.targets() if what == "targets" else db.runs(*args))
        except (HistoryError, OSError) as exc:
            return "error", str(exc)
    try:
        status, value = ask_bounded(in_child, timeout)
    except TimedOut:
        raise HistoryUnreadable(f"{db_path}: no answer after {timeout:g} s {HUNG}") from None
    except WorkerFailed as exc:
        raise HistoryUnreadable(f"{db_path}: cannot be read ({exc})") from None
    if status == "error":
        raise HistoryUnreadable(value)
    return value


def local_time(ts: float, offset: int) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.gmtime(ts + offset))


class HistoryScreen(Screen):
    """Pushed over the Probes screen; Esc goes back."""
    BINDINGS = [Binding("escape,h", "close", "Back", id="history.close"),
                Binding("r", "reload", "Reload", id="history.reload"),
                Binding("t", "table", "Hour/day table", id="history.table")]

    def __init__(self, db_path: str):
        super().__init__()
        self.db_path = db_path
        self.specs: list[tuple[str, str, int]] = []
        self.spec: tuple[str, str] | None = None
        self.points: list[HistoryPoint] = []
        self.rows: list[dict] = []
        self.view = "charts"
        self._latest: dict[str, int] = {}     # the newest read of each kind: only it is shown

    def compose(self) -> ComposeResult:
        yield Static(Text(f" History  {self.db_path}", style="bold", no_wrap=True,
                          overflow="ellipsis"), id="history-title", classes="line")
        with Horizontal(id="history-main"):
            yield OptionList(id="history-specs")
            with Vertical(id="history-charts"):
                yield LiveChart("latency", series=("p50", "p99", "max"), unit="ms",
                                id="history-latency", placeholder="reading the history...")
                yield LiveChart("ops/s", series=("ops/s",), id="history-ops",
                                placeholder="reading the history...")
                throughput = LiveChart("MiB/s", series=("MiB/s",), unit="MiB/s",
                                       id="history-throughput")
                throughput.styles.height, throughput.styles.min_height = "1fr", 4
                throughput.display = False          # only for runs that carry a throughput
                yield throughput
                yield Static(id="history-table")
                yield Static(id="history-range", classes="line")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#history-specs", OptionList).focus()
        self.load_specs()

    # ------------------------------------------------------------------ reading (a child)
    def load_specs(self) -> None:
        self._read("targets", (), self._show_specs)

    def load_runs(self, probe: str, target: str) -> None:
        self._read("runs", (probe, target),
                   lambda rows: self._show_runs((probe, target), rows))

    def _read(self, what: str, args: tuple, show: Callable[[Any], None]) -> None:
        """read_history from a daemon thread (never one the event loop joins at exit); the
        answer is shown unless a newer read of the same kind was asked for since."""
        ticket = self._latest[what] = self._latest.get(what, 0) + 1

        def in_thread() -> None:
            try:
                answer, value = show, read_history(self.db_path, what, args, READ_TIMEOUT_S)
            except HistoryUnreadable as exc:
                answer, value = self._no_history, str(exc)
            if self._latest.get(what) == ticket:
                try:
                    self.app.call_from_thread(answer, value)
                except RuntimeError:     # the app has ended meanwhile
                    pass
        threading.Thread(target=in_thread, daemon=True, name=f"history {what}").start()

    # ------------------------------------------------------------------ showing (UI thread)
    def _no_history(self, reason: str) -> None:
        text = (f"{reason}\n(`inspector record --probe io:PATH` records runs; "
                f"`inspector tui --db FILE` opens another database)")
        for chart in self.query(LiveChart):
            chart.clear("no recorded history")
        self.query_one("#history-range", Static).update(Text(text, style="yellow"))

    def _show_specs(self, specs: list[tuple[str, str, int]]) -> None:
        self.specs = specs
        options = self.query_one("#history-specs", OptionList)
        options.clear_options()
        if not specs:
            self._no_history(f"{self.db_path}: no recorded probe runs yet")
            return
        options.add_options([Option(f"{probe}:{target} ({count})", id=f"{probe}:{target}")
                             for probe, target, count in specs])
        options.highlighted = 0

    def on_option_list_option_highlighted(self, event: OptionList.OptionHighlighted) -> None:
        if event.option_index is not None and event.option_index < len(self.specs):
            probe, target, _ = self.specs[event.option_index]
            self.load_runs(probe, target)

    def _show_runs(self, spec: tuple[str, str], rows: list[dict]) -> None:
        self.spec, self.rows = spec, rows
        self.points, primary = history_points(rows)
        latency = self.query_one("#history-latency", LiveChart)
        ops = self.query_one("#history-ops", LiveChart)
        throughput = self.query_one("#history-throughput", LiveChart)
        name = f"{spec[0]}:{spec[1]}"
        for chart in (latency, ops, throughput):
            chart.clear("no runs")
        latency.rename_series((primary, "p99", "max"))
        latency.border_title = f"{name} latency per run"
        ops.border_title = f"{name} ops/s per run"
        throughput.border_title = f"{name} MiB/s per run"
        latency.extend([(p.primary_ms, p.p99_ms, p.max_ms) for p in self.points])
        ops.extend([(p.ops_per_s,) for p in self.points])
        throughput.extend([(p.mib_s,) for p in self.points])
        self._show_view()
        line = Text(no_wrap=True, overflow="ellipsis")
        if self.points:
            first, last = self.points[0], self.points[-1]
            errors = sum(1 for p in self.points if p.error)
            line.append(f"{len(self.points)} runs  {local_time(first.ts, first.tz_offset_s)} → "
                        f"{local_time(last.ts, last.tz_offset_s)} (local time of each run)")
            if errors:
                line.append(f"  {errors} failed", style="bold red")
            if primary == "avg":
                line.append("  mean latency: these runs stored no median", style="grey62")
        self.query_one("#history-range", Static).update(line)

    def _show_view(self) -> None:
        """The charts, or the hour-of-day / per-day table of the highlighted spec's runs."""
        from inspector.record.history import aggregate
        charts = self.view == "charts"
        has_throughput = any(p.mib_s is not None for p in self.points)
        self.query_one("#history-latency", LiveChart).display = charts
        self.query_one("#history-ops", LiveChart).display = charts
        self.query_one("#history-throughput", LiveChart).display = charts and has_throughput
        table = self.query_one("#history-table", Static)
        table.display = not charts
        if not charts and self.spec is not None:
            offsets = sorted({r.get("tz_offset_s") or 0 for r in self.rows})
            table.update(render_buckets(visible(f"{self.spec[0]}:{self.spec[1]}"),
                                        aggregate(self.rows, self.view), self.view, offsets))

    def action_table(self) -> None:
        self.view = VIEWS[(VIEWS.index(self.view) + 1) % len(VIEWS)]
        self._show_view()

    def action_reload(self) -> None:
        self.load_specs()

    def action_close(self) -> None:
        self.app.pop_screen()
