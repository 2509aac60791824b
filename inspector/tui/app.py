"""InspectorApp: modes for the six screens, the collection loop, live sampling and probe runs.

Data flow is one way: worker threads (collection, sampling) and probe threads post messages;
the app keeps the latest state and asks the *visible* screen to show it. Collections chain:
the next one is scheduled by a one-shot timer after the previous one finished, so they never
overlap, and each runs under a hard timeout so a hung collector shows "timed out" while keys
keep working.

The host is read in child processes (tui.discovery, tui.live.LiveProcess), waited for by daemon
threads of ours with a deadline: a read the kernel never answers (a hung FUSE or NFS mount)
names its section or source on the screen and leaves a stuck thread in a child, never here,
so q, Ctrl-C and SIGTERM always end the process. (Not the event loop's thread workers: asyncio
joins those when the app exits.)
"""
from __future__ import annotations

import asyncio
import os
import signal
import threading
import time
from collections.abc import Callable
from functools import partial
from typing import Any

from textual.app import App
from textual.binding import Binding
from textual.command import Hit, Hits, Provider
from textual.message import Message
from textual.screen import Screen
from textual.timer import Timer

from inspector.health.live.session import hypervisor_of
from inspector.model import Report
from inspector.probes.request import KINDS
from inspector.report.collect import DEFAULT_TIMEOUT
from inspector.report.sections import load
from inspector.roots.bounded import TimedOut, WorkerFailed, run_bounded
from inspector.roots.host import HostRoot
from inspector.tui import garbage
from inspector.tui import live as live_source
from inspector.tui.base import InspectorScreen
from inspector.tui.discovery import PATIENCE, DiscoveryProcess
from inspector.tui.messages import LiveSampled, ProbeFinished, ProbeProgress, ReportCollected
from inspector.tui.modes import MODES
from inspector.tui.probes.runs import ProbeManager
from inspector.tui.trends import Trends

DEFAULT_REFRESH = 30.0       # seconds between discovery collections (live host)
DEFAULT_LIVE_INTERVAL = 1.0  # seconds between live samples (iostat-like rates)
DEFAULT_COLLECT_TIMEOUT = DEFAULT_TIMEOUT   # per section, like `inspector report`
EXIT_WATCHDOG_S = 4.0        # after SIGHUP/SIGTERM the process is gone within this, whatever hangs
EXIT_SIGNALS = (signal.SIGHUP, signal.SIGTERM)
HANGUP_PROBE_GRACE_S = 1.0   # after SIGHUP, for the probe processes to stop (0.1-0.2 s here)

Collector = Callable[[HostRoot], Report]
# ids of Inspector's bindings start with the screen or dialog they belong to
OWN_BINDING_PREFIXES = ("app.", "screen.", "overview.", "storage.", "probes.", "dns.", "net.",
                        "virt.", "help.", "confirm.", "text.", "history.")


class InspectorCommands(Provider):
    """Command palette: every screen, every probe, refresh and help."""

    def _entries(self) -> list[tuple[str, Callable[[], Any], str]]:
        app: InspectorApp = self.app  # type: ignore[assignment]
        entries: list[tuple[str, Callable[[], Any], str]] = [
            (f"Screen: {mode.title}", partial(app.switch_mode, mode.name), f"key {i}")
            for i, mode in enumerate(MODES, 1)]
        for kind, info in KINDS.items():
            entries.append((f"Probe: start {info.title} probe",
                            partial(app.open_probe_form, kind), "opens the form"))
        entries += [("Probes: stop all", app.action_stop_all_probes, "key S"),
                    ("Probes: recorded history chart", app.open_history, "key h on Probes"),
                    ("Refresh discovery now", app.action_refresh_now, "key r"),
                    ("Help: keys", app.action_help, "key ?")]
        return entries

    async def discover(self) -> Hits:
        for title, callback, help_text in self._entries():
            yield Hit(1.0, title, callback, help=help_text)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for title, callback, help_text in self._entries():
            score = matcher.match(title)
            if score > 0:
                yield Hit(score, matcher.highlight(title), callback, help=help_text)


class DiscoveryInterim(Message):
    """The first collection as it stands after tui.discovery.PATIENCE: `pending` sections
    have not answered yet (Unknown in the report, saying so)."""

    def __init__(self, report: Report, pending: list[str], at: float):
        super().__init__()
        self.report, self.pending, self.at = report, pending, at


class InspectorApp(App):
    CSS_PATH = "app.tcss"
    TITLE = "Inspector"
    COMMANDS = App.COMMANDS | {InspectorCommands}
    BINDINGS = [
        *[Binding(str(i), f"switch_mode('{mode.name}')", mode.title, show=False,
                  id=f"screen.{mode.name}")
          for i, mode in enumerate(MODES, 1)],
        Binding("r", "refresh_now", "Refresh", id="app.refresh"),
        Binding("S", "stop_all_probes", "Stop probes", id="app.stop_all"),
        Binding("question_mark", "help", "Help", key_display="?", id="app.help"),
        Binding("escape", "back", "Back", show=False, id="app.back"),
        Binding("q", "quit", "Quit", id="app.quit"),
        Binding("ctrl+c", "quit", "Quit", show=False, priority=True, id="app.interrupt"),
    ]

    def __init__(self, root: HostRoot, *, collector: Collector | None = None,
                 refresh: float = DEFAULT_REFRESH, live_interval: float = DEFAULT_LIVE_INTERVAL,
                 collect_timeout: float = DEFAULT_COLLECT_TIMEOUT,
                 sampler: Any = None, clock: Callable[[], float] = time.time,
                 history_db: str | None = None, probe_requests: list | None = None,
                 discovery: DiscoveryProcess | None = None):
        super().__init__()
        self.root = root
        self.history_db = history_db   # None: the default the recorder and `history` use
        # None: discovery in a child process (tui.discovery), forked now, before the UI's
        # threads exist (or given, forked before Textual was imported: tui.readers); a
        # collector given here (tests) runs in a thread of this process
        self.collector = collector
        self.discovery = (None if collector is not None else discovery if discovery is not None
                          else DiscoveryProcess(root, collect_timeout))
        self.refresh_interval = refresh
        self.live_interval = live_interval
        self.collect_timeout = collect_timeout
        self.clock = clock
        self.report: Report | None = None
        self.collect_error: str | None = None
        self.collecting = False
        self.waiting_for: list[str] = []   # sections the first collection still waits for
        self.collections = 0
        self.last_collected: float | None = None
        self.live_sample: Any = None
        self.live_error: str | None = None
        self.trends = Trends()     # the last minutes of every live figure, for every screen
        # sampler=False turns live sampling off (tests); None builds the real one
        self.sampler = (None if sampler is False else
                        sampler if sampler is not None else live_source.make_sampler(root))
        self.probes = ProbeManager(self.post_message)
        self._collect_timer: Timer | None = None
        self._live_timer: Timer | None = None
        self.exit_signal: int | None = None        # SIGHUP/SIGTERM that ends the session
        self._previous_handlers: dict[int, Any] = {}
        self._terminal_watch: threading.Event | None = None   # lifecycle.watch_terminal
        self.run_returned = threading.Event()   # set by the caller once run() has returned
        self.pending_probe_form: tuple[str, str | None] | None = None
        # `inspector --probe SPEC`: started by the Probes screen (the form's rules) at launch
        self.pending_probe_requests: list = list(probe_requests or [])

    # ------------------------------------------------------------------ modes
    def on_mount(self) -> None:
        for mode in MODES:     # a screen's module is imported on its first visit
            self.add_mode(mode.name, partial(_make_screen, mode.screen))
        self.switch_mode("probes" if self.pending_probe_requests else "overview")
        self._install_signal_handlers()
        if not self.is_headless and self._previous_handlers:
            from inspector.tui import lifecycle
            self._terminal_watch = lifecycle.watch_terminal(getattr(self._driver, "fileno", 1))
        # first paint first: discovery and sampling start once the first frame is out, so
        # their threads do not compete with it for the GIL
        self.call_after_refresh(self.collect_now)
        if self.sampler is not None:
            self.call_after_refresh(self.sample_live)

    def _install_signal_handlers(self) -> None:
        """SIGHUP (ssh dropped, terminal closed) and SIGTERM: stop probes and leave cleanly.

        Plain Python handlers, not the event loop's: Python runs them in the main thread between
        two bytecodes, even while one handler of the loop never returns (a screen that spun on
        its own Resize events did: it never yielded, so a loop signal callback waited forever
        and the TUI outlived its terminal at 100 % CPU). Put back when the app unmounts."""
        if threading.current_thread() is not threading.main_thread():
            return
        loop = asyncio.get_running_loop()
        for sig in EXIT_SIGNALS:
            previous = signal.getsignal(sig)
            signal.signal(sig, lambda signum, _frame: self._on_exit_signal(signum, loop))
            self._previous_handlers[sig] = previous

    def _restore_signal_handlers(self) -> None:
        for sig, previous in self._previous_handlers.items():
            if previous is not None:
                signal.signal(sig, previous)
        self._previous_handlers.clear()

    def _on_exit_signal(self, sig: int, loop: asyncio.AbstractEventLoop) -> None:
        """In the main thread, wherever it was: nothing here may wait on the event loop."""
        from inspector.tui import lifecycle
        if self.exit_signal is not None:
            lifecycle.leave_now(128 + sig)   # a second signal: no more waiting
            return
        self.exit_signal = sig
        if sig == signal.SIGHUP and not self.is_headless:
            self._leave_for_hangup()
            return
        if not self.is_headless:
            # if the event loop cannot finish the exit (it is wedged), leave anyway
            threading.Thread(target=self._exit_watchdog, args=(128 + sig,), daemon=True,
                             name="exit-watchdog").start()
        loop.call_soon_threadsafe(self._exit_for_signal)

    def _exit_watchdog(self, code: int) -> None:
        from inspector.tui import lifecycle
        if not self.run_returned.wait(EXIT_WATCHDOG_S):
            lifecycle.leave_now(code)

    def _leave_for_hangup(self) -> None:
        """The terminal is gone (ssh dropped, tmux killed): Textual's writer thread dies on EIO
        and its orderly exit then blocks on the writer's full queue until the watchdog, with
        nothing left to draw. Stop the probes (each ends the CLI's way, its temporary file
        removed), end every child and leave now."""
        from inspector.tui import lifecycle
        self.probes.stop_all(timeout=HANGUP_PROBE_GRACE_S)
        self._close_readers()
        driver = self._driver
        lifecycle.restore_terminal(getattr(driver, "fileno", 0), 2,
                                   getattr(driver, "attrs_before", None))
        lifecycle.leave_now(128 + signal.SIGHUP)

    def _exit_for_signal(self) -> None:
        self.probes.stop_all(timeout=2.0)
        self._close_readers()
        if not self.is_headless:  # a test's process has children that are not ours to end
            from inspector.tui import lifecycle
            lifecycle.terminate_children(grace=0.5)
        self.exit(return_code=128 + (self.exit_signal or 0))

    # ------------------------------------------------------------------ collection
    def collect_now(self) -> None:
        if self.collecting:
            return
        if self._collect_timer is not None:
            self._collect_timer.stop()
            self._collect_timer = None
        self.collecting = True
        self._refresh_screen()
        self._collect_worker()

    def _collect_worker(self) -> None:
        threading.Thread(target=self._collect, daemon=True, name="discovery").start()

    def _collect(self) -> None:
        start = time.perf_counter()
        report, error = None, None
        try:
            if self.collector is not None:
                collector = self.collector
                report = _printable(run_bounded(lambda: collector(self.root),
                                                self.collect_timeout))
            elif self.discovery is not None:   # escaped in the child (tui.discovery)
                first = self.report is None
                report = self.discovery.collect(PATIENCE if first else None, self._interim)
        except TimedOut as exc:
            error = f"discovery {exc}"
        except WorkerFailed as exc:
            error = f"discovery failed: {exc}"
        except Exception as exc:
            error = f"discovery failed: {type(exc).__name__}: {exc}"
        self.post_message(ReportCollected(report, error, time.perf_counter() - start,
                                          self.clock()))

    def _interim(self, report: Report, pending: list[str]) -> None:
        self.post_message(DiscoveryInterim(report, pending, self.clock()))

    def on_discovery_interim(self, message: DiscoveryInterim) -> None:
        if not self.collecting:
            return
        self.report, self.waiting_for = message.report, message.pending
        self.last_collected = message.at
        self._name_the_vm_layer(message.report)
        self._refresh_screen()

    def on_report_collected(self, message: ReportCollected) -> None:
        self.collecting = False
        self.waiting_for = []
        self.collections += 1
        self.collect_error = message.error
        if message.report is not None:
            self.report = message.report
            self.last_collected = message.at
            self._name_the_vm_layer(message.report)
        self._refresh_screen()
        if self.collections == 1 and not self.is_headless:   # tests share their process
            self.call_after_refresh(garbage.settle)       # what exists now lives on
        # chained one-shot timer: the next collection starts only after this one ended;
        # a capture does not change, so it is collected once.
        if self.root.live and self.refresh_interval > 0:
            self._collect_timer = self.set_timer(self.refresh_interval, self.collect_now)

    def _name_the_vm_layer(self, report: Report) -> None:
        """The live steal finding names the VM layer discovery found ("kvm (...)"); a virt
        section that did not answer this time leaves the layer already known."""
        set_hypervisor = getattr(self.sampler, "set_hypervisor", None)
        virt = report.section("virt")
        if set_hypervisor is not None and isinstance(getattr(virt, "layers", None), list):
            set_hypervisor(hypervisor_of(virt))

    # ------------------------------------------------------------------ live sampling
    def sample_live(self) -> None:
        threading.Thread(target=self._sample, daemon=True, name="live sample").start()

    def _sample(self) -> None:
        sampler = self.sampler
        if sampler is None:
            return
        try:
            if getattr(sampler, "bounded", False):   # LiveProcess: bounded by its child
                sample = sampler.sample()
            else:
                sample = run_bounded(sampler.sample, max(1.0, self.live_interval * 2))
            self.post_message(LiveSampled(sample))
        except TimedOut as exc:
            self.post_message(LiveSampled(None, f"live sampling {exc}"))
        except Exception as exc:
            self.post_message(LiveSampled(None, f"live sampling failed: {exc}"))

    def on_live_sampled(self, message: LiveSampled) -> None:
        # no sample and no error: a sampler priming its counters (a new child after one
        # that did not answer): the last figures are not current
        priming = message.sample is None and message.error is None
        self.live_error = message.error or (
            "live sampling restarted: rates need a second sample"
            if priming and self.live_sample is not None else None)
        if message.sample is not None:
            self.live_sample = message.sample
            self.trends.push(message.sample)
        screen = self.screen
        if isinstance(screen, InspectorScreen):
            screen.show_live(self.live_sample, self.live_error)
        # the first sample only primes the counters: the first rates follow half a second later
        self._live_timer = self.set_timer(0.5 if priming else self.live_interval,
                                          self.sample_live)

    # ------------------------------------------------------------------ probes
    def on_probe_progress(self, message: ProbeProgress) -> None:
        self._show_stop_key()
        run = self.probes.progress(message)     # applied to its run here, on the UI thread
        screen = self.screen  # other screens repaint from the run when they resume
        if run is not None and isinstance(screen, InspectorScreen):
            screen.show_probe_update(message.run_id)

    def on_probe_finished(self, message: ProbeFinished) -> None:
        run = self.probes.finish(message)   # the UI's own priority back once none runs
        if run is not None:
            if run.error:
                self.notify(f"{run.title} failed: {run.error}", severity="error")
            else:
                self.notify(f"{run.title} {run.state}")
        screen = self.screen
        if isinstance(screen, InspectorScreen):
            screen.show_probe_finished(message.run_id)
        self._refresh_screen()  # the status line counts running probes
        self._show_stop_key()

    _stop_key_shown = False

    def _show_stop_key(self) -> None:
        """S (stop all probes) in the footer while a probe runs, not otherwise."""
        running = bool(self.probes.active())
        if running != self._stop_key_shown:
            self._stop_key_shown = running
            self.refresh_bindings()

    def open_probe_form(self, kind: str, target: str | None = None) -> None:
        # the probes screen may not be composed yet (first visit): it applies the pending
        # prefill when it mounts or resumes
        self.pending_probe_form = (kind, target)
        from inspector.tui.probes.screen import ProbesScreen
        if self.current_mode == "probes" and isinstance(self.screen, ProbesScreen):
            self.screen.apply_pending()   # already there: no resume event will apply it
        else:
            self.switch_mode("probes")

    def action_stop_all_probes(self) -> None:
        active = self.probes.active()
        for run in active:
            run.stop()
        if active:
            self.notify(f"stopping {len(active)} probe(s)")

    # ------------------------------------------------------------------ screens
    def _refresh_screen(self) -> None:
        screen = self.screen
        if isinstance(screen, InspectorScreen):
            screen.show_state()

    def status_line(self) -> str:
        source = "live" if self.root.live else f"capture {os.path.basename(self.root.label.rstrip('/'))}"
        if self.collect_error:
            state = self.collect_error
        elif self.report is None and (self.collecting or self.collections == 0):
            state = "collecting..."
        elif self.report is None:
            state = "no data"
        elif self.root.live and self.last_collected is not None:
            state = f"discovered {time.strftime('%H:%M:%S', time.localtime(self.last_collected))}"
            if self.waiting_for:
                state += f" (no answer yet from {', '.join(self.waiting_for)})"
            elif self.collecting:
                state += " (refreshing)"
        elif remote := getattr(self.sampler, "remote", None):   # --ssh: a capture, live too
            state = f"live over ssh {remote}"
        else:
            state = "capture: no live data"
        active = len(self.probes.active())
        probes = f" · {active} probe(s) running" if active else ""
        return f"{source} · {state}{probes}"

    def action_refresh_now(self) -> None:
        self.collect_now()
        self.notify("refreshing discovery" if self.root.live else "re-reading capture")

    def action_help(self) -> None:
        from inspector.tui.screen_help import HelpScreen
        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen(self.help_rows()))

    def help_rows(self) -> list[tuple[str, str, str]]:
        """(keys, description, where) from the active bindings: help is never hand-written.
        Only Inspector's own bindings (they all carry an id): the cursor keys of a tree or a
        table, focus cycling and the like are how widgets work, not Inspector's keys."""
        rows: dict[tuple[str, str], list] = {}   # one row per action, all of its keys
        for active in self.active_bindings.values():
            binding = active.binding
            if not binding.description or not (binding.id or "").startswith(OWN_BINDING_PREFIXES):
                continue
            display = binding.key_display or self.get_key_display(binding)
            row = rows.setdefault((binding.action, binding.description),
                                  [[], binding.description, self.help_place(active.node)])
            if display not in row[0]:
                row[0].append(display)
        return [(", ".join(keys), description, where) for keys, description, where in rows.values()]

    def help_place(self, node: Any) -> str:
        """Where a key acts, in the help's words: everywhere, a screen's tab title, or the
        widget's own HELP_TITLE ("findings list"), never a class name."""
        if node is self:
            return "everywhere"
        own = getattr(node, "HELP_TITLE", None)
        if isinstance(own, str):
            return own
        screen = node if isinstance(node, Screen) else getattr(node, "screen", None)
        mode = getattr(screen, "MODE", "")
        return next((m.title for m in MODES if m.name == mode), "this screen")

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "stop_all_probes":     # shown (and acting) only while a probe runs
            return bool(self.probes.active())
        return True

    def open_history(self) -> None:
        from inspector.tui.screen_history import HistoryScreen
        if self.history_db is None:
            from inspector.record.history import default_db_path
            self.history_db = default_db_path()
        if not isinstance(self.screen, HistoryScreen):
            self.push_screen(HistoryScreen(self.history_db))

    def action_back(self) -> None:  # type: ignore[override]  # Textual awaits it or not
        if len(self.screen_stack) > 1:
            self.pop_screen()
        elif self.current_mode != "overview":
            self.switch_mode("overview")

    async def action_quit(self) -> None:
        self.probes.stop_all(timeout=3.0)
        self.exit()

    def on_unmount(self) -> None:
        if self._terminal_watch is not None:
            self._terminal_watch.set()
        self.probes.stop_all(timeout=2.0)
        self._close_readers()
        self._restore_signal_handlers()

    def _close_readers(self) -> None:
        """End the children that read the host (one stuck in the kernel stays behind, holding
        nothing of ours)."""
        for reader in (self.discovery, self.sampler):
            close = getattr(reader, "close", None)
            if close is not None:
                close()


def _make_screen(ref: str) -> Screen:
    return load(ref)()


def _printable(report: Report) -> Report:
    # a device model or hostname carrying escape sequences (a hostile or broken capture) must
    # not drive the operator's terminal: \xNN from here on
    from inspector.render.findings import printable
    return printable(report)
