"""The TUI on a recorded timeline (`inspector tui --db FILE --at TIME`): the same screens, with
the live panels (overview, storage, network) fed from `record --samples`' intervals instead of
the live sampler, and keys that move through time.

- `[` `]` one interval back or forward, `{` `}` an hour, `<` `>` the previous or next marker
  (a recorded check that was not OK, a probe run);
- the status line says which moment is shown (on the recorded host's clock), and maps the whole
  recording in one line: ▲ recorded findings, ◆ probe runs, ┃ the cursor;
- the findings are the recorder's check at or before the cursor (what `record` found then);
  the device tree and NIC list come from discovery of the host as it is now (`--root` for a
  capture), so the recorded figures land on the rows of the same names.
"""
from __future__ import annotations

import dataclasses

from textual.binding import Binding

from inspector.model import Report
from inspector.tui.app import DiscoveryInterim, InspectorApp
from inspector.tui.messages import LiveSampled, ReportCollected
from inspector.tui.timeline import RecordedTimeline

STRIP_CELLS = 32


class RecordedApp(InspectorApp):
    BINDINGS = [
        Binding("left_square_bracket", "timeline(-1)", "Earlier", key_display="[",
                id="app.timeline_back"),
        Binding("right_square_bracket", "timeline(1)", "Later", key_display="]",
                id="app.timeline_forward"),
        Binding("left_curly_bracket", "timeline_hours(-1)", "-1 h", key_display="{",
                show=False, id="app.timeline_hour_back"),
        Binding("right_curly_bracket", "timeline_hours(1)", "+1 h", key_display="}",
                show=False, id="app.timeline_hour_forward"),
        Binding("less_than_sign", "timeline_marker(-1)", "Previous marker", key_display="<",
                show=False, id="app.timeline_marker_back"),
        Binding("greater_than_sign", "timeline_marker(1)", "Next marker", key_display=">",
                show=False, id="app.timeline_marker_forward"),
    ]

    def __init__(self, root, timeline: RecordedTimeline, **options):
        # the timeline stands where the live sampler would: the screens see a sampler, its
        # figures and trends; nothing samples the host
        super().__init__(root, sampler=timeline, **options)
        self.timeline = timeline
        self.discovered: Report | None = None      # discovery as it came, before its findings
        self._shown_check: object = ()             # the check whose findings self.report has

    # ------------------------------------------------------------------ the cursor
    def sample_live(self) -> None:
        """Show the interval at the cursor (called once at start; the keys call it after)."""
        self.trends = self.timeline.trends()
        self.post_message(LiveSampled(self.timeline.view()))

    # Textual also calls the base class's handler of a message unless prevent_default():
    # these replace InspectorApp's (which would push trends and schedule the next sample) or
    # call it themselves once

    def on_live_sampled(self, message: LiveSampled) -> None:
        message.prevent_default()
        self.live_sample, self.live_error = message.sample, message.error
        screen = self.screen
        if hasattr(screen, "show_live"):
            screen.show_live(self.live_sample, self.live_error)
        self._apply_recorded_findings()

    def _moved(self) -> None:
        self.sample_live()

    def action_timeline(self, steps: int) -> None:
        if self.timeline.move(steps):
            self._moved()
        else:
            self.notify("start of the recording" if steps < 0 else "end of the recording")

    def action_timeline_hours(self, hours: int) -> None:
        if self.timeline.move_by(3600.0 * hours):
            self._moved()
        else:
            self.notify("start of the recording" if hours < 0 else "end of the recording")

    def action_timeline_marker(self, direction: int) -> None:
        marker = self.timeline.to_marker(direction)
        if marker is None:
            self.notify("no recorded finding or probe run " +
                        ("before this" if direction < 0 else "after this"))
            return
        self.notify(f"{'finding' if marker.kind == 'finding' else 'probe run'}: {marker.label}")
        self._moved()

    # ------------------------------------------------------------------ findings
    def on_report_collected(self, message: ReportCollected) -> None:
        message.prevent_default()
        if message.report is not None:
            self.discovered = message.report
            self._shown_check = ()
            message.report = self._with_recorded_findings(message.report)
        super().on_report_collected(message)

    def on_discovery_interim(self, message: DiscoveryInterim) -> None:
        message.prevent_default()
        self.discovered = message.report
        message.report = self._with_recorded_findings(message.report)
        super().on_discovery_interim(message)

    def _with_recorded_findings(self, report: Report) -> Report:
        self._shown_check = self.timeline.check_at()
        return dataclasses.replace(report, findings=self.timeline.findings_at())

    def _apply_recorded_findings(self) -> None:
        """After a move: the findings of the check now in force (a new report object only
        when that check changed: screens rebuild their tables on a new report)."""
        if self.discovered is not None and self.timeline.check_at() is not self._shown_check:
            self.report = self._with_recorded_findings(self.discovered)
        self._refresh_screen()

    # ------------------------------------------------------------------ status
    def status_line(self) -> str:
        t = self.timeline
        check = t.check_at()
        found = ("no recorded check before this" if check is None
                 else f"findings of {t.clock(check['ts'])}: worst {check['worst']}")
        here = "".join(f" · {m.label}" for m in t.markers_here()[:2])
        return (f"recorded {t.when()} · {t.position + 1}/{len(t.ids)} "
                f"{t.strip(STRIP_CELLS)} · {found}{here} · [ ] {{ }} < > move")

    def on_unmount(self) -> None:
        super().on_unmount()
        self.timeline.close()


def recorded_app(root, at: str, *, history_db: str | None, **options) -> RecordedApp:
    """The app on the timeline of `history_db` (default: the recorder's) at `at`;
    TimelineError (one line, its exit status) for a database that cannot be read or holds no
    samples."""
    from inspector.record.history import default_db_path
    path = history_db or default_db_path()
    timeline = RecordedTimeline.open(path, at)
    return RecordedApp(root, timeline, history_db=path, **options)
