"""`inspector tui`: open the terminal UI (also what `inspector` with no command does)."""
from __future__ import annotations

import argparse
import os
import sys

from inspector.commands import SUMMARIES
from inspector.commands.common import (
    CliError,
    Duration,
    add_root_argument,
    exit_epilog,
    path_argument,
    root_from_args,
)

REFRESH = Duration(maximum=86400)
LIVE_INTERVAL = Duration(maximum=3600)
PROBE_SECONDS = Duration(maximum=86400)
DEFAULT_PROBE_SECONDS = 10.0    # the form's default


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("tui", help=SUMMARIES["tui"],
                       epilog="Without a terminal (a pipe, cron, TERM=dumb) the report is printed "
                              "instead. " + exit_epilog(ok="quit"))
    add_root_argument(p)
    p.add_argument("--refresh", type=REFRESH, default=None, metavar="DURATION",
                   help=f"time between discovery refreshes on a live host (default 30s, "
                        f"{REFRESH.bounds})")
    p.add_argument("--live-interval", type=LIVE_INTERVAL, default=None, metavar="DURATION",
                   help=f"time between live samples (default 1s, {LIVE_INTERVAL.bounds})")
    p.add_argument("--db", metavar="FILE", default=None, type=path_argument,
                   help="history database for the Probes screen's history chart (h); "
                        "default: the one `inspector record` and `inspector history` use")
    p.add_argument("--at", metavar="TIME", default=None,
                   help="open the timeline `record --samples` recorded in --db at TIME "
                        "(2025-03-14 03:10, 03:10, 2h ago; on the recorded host's clock): the "
                        "panels show the recorded figures, [ ] { } < > move through time")
    add_probe_arguments(p)
    p.set_defaults(func=run)


def add_probe_arguments(parser: argparse.ArgumentParser) -> None:
    """`--probe SPEC` (repeatable) and `--probe-seconds`: the Probes screen opens with those
    runs started, after the form's checks and confirmations. Also accepted without the `tui`
    command (`inspector --probe io:/var/lib/mysql`), so a runbook can say just that."""
    from inspector.probes.request import SPEC_HELP
    parser.add_argument("--probe", action="append", default=argparse.SUPPRESS, metavar="SPEC",
                        help=f"start this probe on the Probes screen ({SPEC_HELP}; repeatable)")
    parser.add_argument("--probe-seconds", type=PROBE_SECONDS, default=argparse.SUPPRESS,
                        metavar="DURATION",
                        help=f"time bound of each --probe run (default 10s, "
                             f"{PROBE_SECONDS.bounds})")


def probe_requests(args: argparse.Namespace) -> list:
    """The --probe specs as requests (CliError for a bad one, before the TUI starts)."""
    from inspector.probes.base import ProbeError
    from inspector.probes.request import parse_spec
    specs = getattr(args, "probe", None) or []
    seconds = getattr(args, "probe_seconds", None) or DEFAULT_PROBE_SECONDS
    if not specs and getattr(args, "probe_seconds", None) is not None:
        raise CliError("--probe-seconds needs --probe SPEC")
    try:
        return [parse_spec(spec, duration=seconds) for spec in specs]
    except ProbeError as exc:
        raise CliError(str(exc)) from None


def no_terminal_reason() -> str | None:
    """Why the TUI cannot run here, or None: its frames would land in a pipe or a file
    (`inspector | less`, cron, ssh host inspector > out), or the terminal cannot draw them."""
    if not sys.stdout.isatty():
        return "stdout is not a terminal"
    if os.environ.get("TERM", "") == "dumb":
        return "TERM=dumb"
    return None


def print_report(args: argparse.Namespace, why: str) -> int:
    print(f"inspector: {why}: printing the report instead of the TUI "
          "(`inspector report` says the same; `inspector report --json` for scripts)",
          file=sys.stderr)
    from inspector.commands import report
    return report.run(argparse.Namespace(root=getattr(args, "root", None), json=False,
                                         section=None, diagnose=False, timeout=15.0))


def run(args: argparse.Namespace) -> int:
    requests = probe_requests(args)
    why = no_terminal_reason()
    at = getattr(args, "at", None)     # the bare `inspector` has no --at
    if why is not None and at is not None:
        raise CliError(f"--at needs the terminal UI ({why}); for a script use "
                       "`inspector top --db FILE --from TIME`")
    if why is not None:
        if requests:        # a report would silently drop the probes that were asked for
            raise CliError(f"--probe needs the terminal UI ({why}); for a script use "
                           "`inspector snapshot --probe SPEC` or `inspector probe ...`")
        return print_report(args, why)
    from inspector.tui.lifecycle import limit_malloc_arenas
    limit_malloc_arenas()   # before any thread exists
    root = root_from_args(args)
    readers = None
    if at is None:      # the children fork before Textual is imported (inspector.tui.readers)
        from inspector.tui.readers import start_readers
        readers = start_readers(root)
    from inspector.tui.lifecycle import skip_tls
    skip_tls()          # before Textual imports asyncio: 3.5 MB less (lifecycle.skip_tls)
    from inspector.tui.app import DEFAULT_LIVE_INTERVAL, DEFAULT_REFRESH, InspectorApp
    refresh = args.refresh or DEFAULT_REFRESH
    live_interval = args.live_interval or DEFAULT_LIVE_INTERVAL
    history_db = getattr(args, "db", None)
    app: InspectorApp
    if at is not None:            # a recorded timeline (inspector.tui.recorded_app)
        from inspector.tui.recorded_app import recorded_app
        from inspector.tui.timeline import TimelineError
        try:
            app = recorded_app(root, at, refresh=refresh, live_interval=live_interval,
                               history_db=history_db, probe_requests=requests)
        except TimelineError as exc:
            raise CliError(str(exc), status=exc.status) from None
    else:
        discovery, sampler = readers if readers is not None else (None, None)
        app = InspectorApp(root, refresh=refresh, live_interval=live_interval,
                           history_db=history_db, probe_requests=requests,
                           discovery=discovery, sampler=sampler)
    app.run()
    app.run_returned.set()
    code = int(app.return_code or 0)
    import threading
    stuck = [t for t in threading.enumerate()
             if t is not threading.current_thread() and t.is_alive() and not t.daemon]
    if app.exit_signal is not None or stuck:
        # the terminal went away, or a worker thread is stuck (a hung disk): the interpreter
        # would wait for it at exit; end the children and leave now instead
        from inspector.tui.lifecycle import leave_now
        leave_now(code)
    return code
