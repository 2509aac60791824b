"""The Probes screen (issues 20, 26): panels follow their run (its end, another run, a resize),
every key lands where the operator meant it (a field types only while edited, Enter opens the
kind's list, the focus stays in the form), fast typing lands in order (a burst with Tab), each
kind keeps its own values, a target is checked for its kind before any confirmation."""
from __future__ import annotations

import gc
import os
import re
import unicodedata

import psutil
from textual import events
from textual.pilot import Pilot
from textual.widgets import Checkbox, DataTable, Input, Select, Static

from dns_responders import Responder
from inspector.probes.base import ProbeKind
from inspector.tui.app import InspectorApp
from inspector.tui.fields import EditField
from inspector.tui.probes.runs import ProbeRequest
from inspector.tui.probes.screen import ProbesScreen, RunPanel
from inspector.tui.screen_help import ConfirmScreen
from inspector.widgets.histogram import LatencyHistogram
from inspector.widgets.probe_chart import LatencyChart
from memcached_server import free_port
from test_pilot import capture_app, confirmation, current, start_run, wait_for


async def goto_probes(app: InspectorApp, pilot: Pilot[None]) -> ProbesScreen:
    await pilot.press("6")
    await wait_for(pilot, lambda: type(app.screen).__name__ == "ProbesScreen")
    # shown: the form opens on its target (focused once the screen has refreshed)
    await wait_for(pilot, lambda: app.screen.query_one("#probe-target", Input).has_focus)
    return current(app, ProbesScreen)


def recorded_notes(app) -> list[str]:
    notes: list[str] = []
    notify = app.notify

    def record(message, *args, **kw):
        notes.append(str(message))
        return notify(message, *args, **kw)
    app.notify = record
    return notes


def panel_text(app, panel: str) -> str:
    table = app.screen.query_one(f"#{panel} .run-table", Static)
    return "\n".join(table.render_line(y).text for y in range(table.size.height))


def burst(app, *keys: str) -> None:
    """Keys delivered together, as a laggy SSH link delivers them: each is queued before the
    app has handled the one before (Pilot.press waits for idle between keys)."""
    for key in keys:
        char = key if len(key) == 1 else None
        if key == "tab":
            char = "\t"
        elif len(key) == 1 and not key.isalnum():
            key = unicodedata.name(key).lower().replace(" ", "_")
        event = events.Key(key, char)
        event.set_sender(app)
        app._driver.send_message(event)


async def test_a_panel_follows_its_run_to_the_end_and_across_resizes(tmp_path):
    target = tmp_path / "probe.bin"
    target.write_bytes(os.urandom(4 << 20))
    fast, slow = Responder("127.0.0.1", 0, "ok"), Responder("127.0.0.2", 0, "ok", delay=0.02)
    app = capture_app()
    try:
        async with app.run_test(size=(120, 40)) as pilot:
            await goto_probes(app, pilot)
            # long enough that the first interval, however late a loaded box delivers it, comes
            # while the run is still going
            io = start_run(app, ProbeRequest(ProbeKind.IO, str(target), duration=4))
            panel = app.screen.query_one("#panel-a", RunPanel)
            await wait_for(pilot, lambda: io.last is not None)
            await wait_for(pilot, lambda: re.search(r"state\s+running", panel_text(app, "panel-a")))
            live_title = app.screen.query_one("#panel-a LatencyHistogram").border_title
            assert live_title and "≈ live" in live_title
            # the run ends while the panel shows it: state, figures and histogram follow at
            # once, with nothing re-selected
            await wait_for(pilot, lambda: not io.active)
            await wait_for(pilot, lambda: re.search(r"state\s+done", panel_text(app, "panel-a")))
            text = panel_text(app, "panel-a")
            assert io.state == "done" and re.search(r"state\s+done", text), text
            hist = app.screen.query_one("#panel-a LatencyHistogram", LatencyHistogram)
            assert hist.border_title == "histogram: whole run"
            assert io.summary is not None and hist._buckets == io.summary.histogram
            # the runs table and the panel agree on the whole run's figures (exact now)
            row = app.screen.query_one("#runs", DataTable).get_row_at(0)
            assert re.search(rf"ops\s+\d+\s+{row[4]}\b", text), (row, text)
            assert str(row[7]) in text and "≈" not in str(row[7])     # run p99

            # another run attached to the same panel: nothing of the first one is left
            dns = start_run(app, ProbeRequest(
                ProbeKind.DNS, f"{fast.server},{slow.server}", duration=2))
            assert panel.run is dns
            assert app.screen.query_one("#panel-a LatencyChart", LatencyChart).p50 == []
            assert hist._buckets is None
            await wait_for(pilot, lambda: dns.last is not None or not dns.active, timeout=10)
            assert dns.last is not None, (dns.state, dns.error)
            # resizes (several, narrow and wide) redraw the attached run, never the previous
            for size in ((80, 24), (200, 50), (100, 30)):
                await pilot.resize_terminal(*size)
                await wait_for(pilot, lambda size=size: app.screen.size == size)
                chart = app.screen.query_one("#panel-a LatencyChart", LatencyChart)
                assert chart.border_title and chart.border_title.startswith(f"A: #{dns.run_id} DNS")
                assert hist._buckets != io.summary.histogram
                assert chart.p50 == [i.p50_ns for i in dns.intervals]
            await wait_for(pilot, lambda: not dns.active)
            assert dns.state == "done", dns.error
            assert dns.summary is not None and hist._buckets == dns.summary.histogram
            await wait_for(pilot, lambda: re.search(r"state\s+done", panel_text(app, "panel-a")))
    finally:
        fast.close()
        slow.close()


def kind_shown(screen) -> str:
    """The kind the form shows: its fields follow once the screen has handled the change."""
    return str(screen._kind)


def mode_of(app) -> str:
    return getattr(app.screen, "MODE", type(app.screen).__name__)


async def test_each_key_on_the_form_lands_where_it_was_meant():
    """Digits, q, Enter on the kind and Tab, one at a time, with where each went: a focused
    field types nothing until Enter starts its edit (issue 26: `1`-`6` and `q` were typed
    into the target, Enter on the kind started a probe, a chosen kind took the focus away)."""
    app = capture_app()
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await goto_probes(app, pilot)
        kind = screen.query_one("#probe-kind", Select)
        target = screen.query_one("#probe-target", EditField)
        seconds = screen.query_one("#probe-seconds", EditField)
        assert target.has_focus and not target.editing and target.value == "/tmp"
        await pilot.press("1")                      # a screen key: the overview, nothing typed
        await wait_for(pilot, lambda: mode_of(app) == "overview")
        await pilot.press("6")
        await wait_for(pilot, lambda: mode_of(app) == "probes" and target.has_focus)
        assert target.value == "/tmp"
        await pilot.press("enter")                  # on purpose: the edit starts
        assert target.editing and target.has_focus
        await pilot.press("ctrl+u", "/", "s", "r", "v", "q", "1")   # typed, all of them
        assert target.value == "/srvq1" and mode_of(app) == "probes" and app.return_code is None
        await pilot.press("tab")                    # the edit goes on in the next field
        assert seconds.has_focus and seconds.editing and not target.editing
        await pilot.press("ctrl+u", "4", "2")
        assert seconds.value == "42"
        await pilot.press("escape")                 # the edit ends, the focus stays
        assert seconds.has_focus and not seconds.editing
        await pilot.press("shift+tab", "shift+tab")     # not editing: the focus only moves
        assert kind.has_focus and not target.editing
        await pilot.press("enter")                  # opens the kind's list, starts nothing
        await wait_for(pilot, lambda: kind.expanded)
        assert app.probes.runs == []
        await pilot.press("down", "enter")          # memcached, chosen from the list
        await wait_for(pilot, lambda: kind.value == "memcached" and not kind.expanded)
        # still in the form: the kind has the focus once its closing list has given it back
        await wait_for(pilot, lambda: kind.has_focus)
        assert target.value == "127.0.0.1:11211"    # memcached's own target
        await pilot.press("tab")
        assert target.has_focus and not target.editing
        await pilot.press("5")                      # a screen key again, nothing typed
        await wait_for(pilot, lambda: mode_of(app) == "dns")
        await pilot.press("6")
        await wait_for(pilot, lambda: mode_of(app) == "probes")
        assert target.value == "127.0.0.1:11211" and app.probes.runs == []
        await pilot.press("q")                      # quits from the form
        await wait_for(pilot, lambda: app._exit, timeout=5)


async def test_keys_sent_in_one_burst_with_tab_land_in_order():
    app = capture_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await goto_probes(app, pilot)
        target = app.screen.query_one("#probe-target", Input)
        seconds = app.screen.query_one("#probe-seconds", Input)
        assert target.has_focus                     # the form opens on its target
        target.value = ""
        seconds.value = ""
        burst(app, "enter", "/", "t", "m", "p", "x", "backspace", "tab", "7", "tab", "ctrl+u",
              "3", "enter")
        await wait_for(pilot, lambda: confirmation(app), timeout=5)
        # Enter started with what the burst typed before it
        body = confirmation(app)
        assert body and "on /tmp for at most 7 s" in body and "3 workers" in body, body
        await pilot.press("n")
        await wait_for(pilot, lambda: type(app.screen).__name__ == "ProbesScreen")
        assert target.value == "/tmp" and seconds.value == "7"
        # a field's own keys act in order too (ctrl+u once cleared the 3 typed after it)
        assert app.screen.query_one("#probe-concurrency", Input).value == "3"
        # a digit typed in an edited field is a digit, not a screen switch
        assert type(app.screen).__name__ == "ProbesScreen"


async def test_each_kind_keeps_its_values_and_targets_are_checked_before_confirming(tmp_path):
    app = capture_app()
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await goto_probes(app, pilot)
        notes = recorded_notes(app)
        kind = screen.query_one("#probe-kind", Select)
        field = {n: screen.query_one(f"#probe-{n}", Input)
                 for n in ("target", "seconds", "concurrency")}
        field["target"].value, field["seconds"].value = str(tmp_path), "7"
        def values() -> list[str]:
            return [f.value for f in field.values()]

        def refused_because(why: str) -> bool:
            return bool(notes) and why in notes[-1]
        kind.value = "memcached"
        await wait_for(pilot, lambda: values() == ["127.0.0.1:11211", "10", "4"])
        field["target"].value = "/dev/loop3"        # left over from the IO form
        await pilot.press("s")
        await wait_for(pilot, lambda: refused_because("not a memcached address"))
        assert not isinstance(app.screen, ConfirmScreen) and app.probes.runs == []
        kind.value = "io"
        await wait_for(pilot, lambda: values() == [str(tmp_path), "7", "1"])
        kind.value = "memcached"
        await wait_for(pilot, lambda: kind_shown(screen) == "memcached")
        assert field["target"].value == "/dev/loop3"    # memcached's own, as left

        # a write probe needs a directory: refused before any confirmation
        kind.value = "io"
        await wait_for(pilot, lambda: kind_shown(screen) == "io")
        afile = tmp_path / "data.bin"
        afile.write_bytes(b"x" * 8192)
        field["target"].value = str(afile)
        screen.query_one("#probe-write", Checkbox).value = True
        field["target"].focus()
        await pilot.press("s")
        await wait_for(pilot, lambda: refused_because("needs a directory"))
        assert not isinstance(app.screen, ConfirmScreen) and app.probes.runs == []
        screen.query_one("#probe-write", Checkbox).value = False

        # DNS: a file without nameservers (glibc would query 127.0.0.1) and a device
        kind.value = "dns"
        await wait_for(pilot, lambda: field["concurrency"].disabled)
        empty = tmp_path / "resolv.conf"
        empty.write_text("search example.com\n")
        for target, why in ((str(empty), "names no nameserver"),
                            ("/dev/null", "not a resolv.conf file")):
            field["target"].value = target
            field["target"].focus()
            await pilot.press("s")
            await wait_for(pilot, lambda why=why: refused_because(why))
        assert app.probes.runs == []
        # no message names an exception class
        assert not [n for n in notes if re.search(r"\b[A-Z]\w*(Error|Exception)\b", n)], notes


async def test_n_and_enter_in_one_burst_start_a_run_and_n_is_a_letter_in_the_target(tmp_path):
    """`n` Enter sent together from the runs table (a laggy link, a busy UI) starts the next
    run: `n` edits the target, Enter ends the edit and starts (it once went to the runs table,
    starting nothing)."""
    target = tmp_path / "probe.bin"
    target.write_bytes(os.urandom(1 << 20))
    app = capture_app()
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await goto_probes(app, pilot)
        screen.query_one("#probe-target", Input).value = str(target)
        screen.query_one("#probe-seconds", Input).value = "0.2"
        screen.query_one("#runs", DataTable).focus()
        await wait_for(pilot, lambda: screen.query_one("#runs", DataTable).has_focus)
        for count in (1, 2):
            burst(app, "n", "enter")
            await wait_for(pilot, lambda count=count: len(app.probes.runs) == count, timeout=5)
            run = app.probes.runs[-1]
            await wait_for(pilot, lambda run=run: not run.active, timeout=15)
            assert run.state == "done", run.error
            assert screen.query_one("#runs", DataTable).has_focus
        # in the target, n is typed (/dev/nvme0n1), the form stays where it is
        target_field = screen.query_one("#probe-target", EditField)
        target_field.value = "/dev/"
        target_field.start_editing()
        burst(app, "n", "v", "m", "e", "0", "n", "1")
        await wait_for(pilot, lambda: target_field.value == "/dev/nvme0n1")
        assert target_field.has_focus


async def test_an_edit_ended_before_its_start_was_heard_stays_ended(tmp_path):
    """On a loaded host the target's 'editing' message reached the screen after the Enter
    that ended the edit: the screen took the target for edited again, so the next `n` was
    refused and its Enter fell on the runs table (the fifty-runs tmux test stopped at run 16).
    Here `n` and Enter act before any message is handled."""
    target = tmp_path / "probe.bin"
    target.write_bytes(os.urandom(1 << 20))
    app = capture_app()
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await goto_probes(app, pilot)
        screen.query_one("#probe-target", Input).value = str(target)
        screen.query_one("#probe-seconds", Input).value = "0.2"
        screen.query_one("#runs", DataTable).focus()
        await wait_for(pilot, lambda: screen.query_one("#runs", DataTable).has_focus)
        # the target's messages as a loaded host delivered them: 'editing' after the Enter,
        # 'not editing' at once (before the runs table took the focus)
        field = screen.query_one("#probe-target", EditField)
        held: list = []

        def post(message) -> bool:
            if not isinstance(message, EditField.EditingChanged):
                return post_now(message)
            if message.editing:
                held.append(message)
            else:
                screen.on_edit_field_editing_changed(message)
            return True
        post_now, field.post_message = field.post_message, post  # type: ignore[method-assign]
        screen.action_new()
        screen.action_field_enter()
        for message in held:
            screen.on_edit_field_editing_changed(message)
        await wait_for(pilot, lambda: len(app.probes.runs) == 1, timeout=5)
        field.post_message = post_now  # type: ignore[method-assign]
        await wait_for(pilot, lambda: not app.probes.runs[0].active)
        await pilot.pause()         # the edit's deferred stop and the run's end handled
        assert held and screen._edited is None, screen._edited
        burst(app, "n", "enter")                # the next run starts as the first did
        await wait_for(pilot, lambda: len(app.probes.runs) == 2, timeout=5)
        await wait_for(pilot, lambda: not app.probes.runs[1].active, timeout=15)


async def test_focus_changes_leave_no_widgets_behind():
    """Each focus change recomposes the footer; the keys it replaces must go (Textual's Footer
    kept them in its watcher list, and StylesCache's lru_cache kept their rendered lines:
    ~0.7 MB of the TUI per probe run, issue 20)."""
    from textual._styles_cache import StylesCache
    from textual.widgets._footer import FooterKey

    def alive(kind: type) -> int:
        gc.collect()
        return sum(1 for o in gc.get_objects() if isinstance(o, kind))

    app = capture_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await goto_probes(app, pilot)
        keys, caches = alive(FooterKey), alive(StylesCache)
        runs = app.screen.query_one("#runs", DataTable)
        target = app.screen.query_one("#probe-target", EditField)
        # 20 recomposes: a footer kept per recompose leaves ~29 keys each (291 over the 15
        # allowed, with the fix undone), so more rounds would only cost time
        for _ in range(10):                 # the runs table, the target: 20 recomposes
            await pilot.press("escape", "escape")   # the edit ends, then the form is left
            await wait_for(pilot, lambda: runs.has_focus)
            await pilot.press("n")
            await wait_for(pilot, lambda: target.has_focus and target.editing)
        await pilot.pause()         # the last footer's recompose handled
        # one footer's worth of keys may be on its way out; 20 footers' worth was kept
        assert alive(FooterKey) <= keys + 15, (keys, alive(FooterKey))
        assert alive(StylesCache) <= caches + 15, (caches, alive(StylesCache))


async def test_a_memcached_run_the_server_refuses_shows_its_error_count():
    """No interval ever comes from a run whose connections are refused: its error count is
    the summary's (the refusal), not the last interval's nothing (issue 26: `err 0`)."""
    app = capture_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await goto_probes(app, pilot)
        run = start_run(app, ProbeRequest(ProbeKind.MEMCACHED,
                                                    f"127.0.0.1:{free_port()}", duration=2))
        await wait_for(pilot, lambda: not run.active)
        assert run.state == "failed" and "refused" in (run.error or ""), (run.state, run.error)
        assert run.last is None and run.errors >= 1
        table = app.screen.query_one("#runs", DataTable)
        await wait_for(pilot, lambda: str(table.get_row_at(0)[3]) == str(run.errors))
        assert re.search(rf"errors\s+{run.errors}\b", panel_text(app, "panel-a"))


async def test_no_defunct_child_while_the_tui_runs(tmp_path):
    """Each check of a target (a stat, a resolv.conf read) is a forked child, and so is each
    run: all reaped while the TUI goes on (a `<defunct>` child stayed until quit, issue 26)."""
    conf = tmp_path / "resolv.conf"
    conf.write_text("nameserver 127.0.0.9\noptions timeout:1 attempts:1\n")
    me = psutil.Process()
    # children of this worker from tests before this one (an xdist worker runs many) are not
    # the TUI's: only those forked from here on count
    before = {child.pid for child in me.children()}

    def defunct() -> list:
        found = []
        for child in me.children():
            if child.pid in before:
                continue
            try:        # a child may end between the listing and its status
                if child.status() == psutil.STATUS_ZOMBIE:
                    found.append(child.pid)
            except psutil.NoSuchProcess:
                pass
        return found
    app = capture_app()
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await goto_probes(app, pilot)
        screen.confirm_and_start(ProbeRequest(ProbeKind.IO, str(tmp_path / "missing"), 1))
        screen.confirm_and_start(ProbeRequest(ProbeKind.DNS, str(conf), 1))
        await wait_for(pilot, lambda: app.probes.runs and not app.probes.runs[0].active,
                       timeout=15)
        assert len(app.probes.runs) == 1            # the missing target was refused first
        # reaped while the TUI goes on: the reader thread waits for the process after its
        # stream ends, which a loaded machine delays; a child left until quit never goes
        await wait_for(pilot, lambda: defunct() == [], timeout=10)
