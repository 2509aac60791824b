"""`inspector --ssh HOST top` and `inspector --ssh HOST` (the TUI): the live view of a host
over one ssh connection (inspector.remote.live), discovery from the capture taken first."""
from __future__ import annotations

import argparse
import threading

from inspector.commands.common import CliError
from inspector.remote.ssh import SshError, Target
from inspector.roots.host import HostRoot

FRAME_TIMEOUT_MIN_S = 3.0      # a frame's round trip on a slow link or a loaded host


def _stream(target: Target, capture: HostRoot, interval: float, read_timeout: float):
    from inspector.remote.live import LiveStream
    from inspector.remote.streamed_root import RemoteSampler, StreamedRoot
    try:
        stream = LiveStream(target)
    except SshError as exc:
        raise CliError(str(exc)) from None
    root = StreamedRoot(stream, capture,
                        frame_timeout=max(FRAME_TIMEOUT_MIN_S, min(interval, 10.0)))
    return RemoteSampler(root, read_timeout=read_timeout)


def run_top(args: argparse.Namespace, target: Target, capture: HostRoot) -> int:
    from inspector.commands import top, top_replay
    from inspector.live.sampler import READ_TIMEOUT
    if top_replay.wants_replay(args):
        raise CliError("--ssh samples the host live; --db, --from and --to read a recording "
                       "here")
    thresholds = top.live_thresholds()
    sampler = _stream(target, capture, args.interval,
                      min(READ_TIMEOUT, max(0.25, args.interval / 2)))
    try:
        return top._loop(sampler, args, thresholds)
    except KeyboardInterrupt:
        return 0          # Ctrl-C is how a live view ends
    except BrokenPipeError:
        return 0
    finally:
        sampler.close()


def run_tui(args: argparse.Namespace, target: Target, capture: HostRoot) -> int:
    """The TUI on the capture (discovery, read once: `r` re-reads it) with live panels fed
    over ssh. Probes stay off: they would run here."""
    from inspector.config import ConfigError, LiveThresholds, load_config
    from inspector.tui.app import DEFAULT_LIVE_INTERVAL, DEFAULT_REFRESH, InspectorApp
    from inspector.tui.lifecycle import limit_malloc_arenas
    from inspector.tui.live import LiveFeed
    if getattr(args, "at", None) is not None:
        raise CliError("--ssh samples the host live; --at reads a recording here")
    limit_malloc_arenas()
    live_interval = args.live_interval or DEFAULT_LIVE_INTERVAL
    try:
        thresholds = load_config().live
    except ConfigError:
        thresholds = LiveThresholds()
    sampler = _stream(target, capture, live_interval, min(1.0, live_interval))

    class RemoteFeed(LiveFeed):
        bounded = True        # its one wait, the frame, has a deadline
        remote = target.destination     # the header says where the live figures come from

        def close(self) -> None:
            sampler.close()

    feed = RemoteFeed(sampler.sample, thresholds)
    app = InspectorApp(capture, refresh=args.refresh or DEFAULT_REFRESH,
                       live_interval=live_interval, history_db=getattr(args, "db", None),
                       probe_requests=[], sampler=feed)
    try:
        app.run()
    finally:
        feed.close()
    app.run_returned.set()
    code = int(app.return_code or 0)
    stuck = [t for t in threading.enumerate()
             if t is not threading.current_thread() and t.is_alive() and not t.daemon]
    if app.exit_signal is not None or stuck:
        from inspector.tui.lifecycle import leave_now
        leave_now(code)
    return code
