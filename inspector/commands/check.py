"""`inspector check`: a Nagios/Icinga plugin, or a Checkmk local check with --checkmk.

One status line ("INSPECTOR CRITICAL - ..."), the findings as long text, perfdata after `|`.
Exit 0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN. What is decided, and how it is printed, is
inspector.outputs.check; this module is the command line and the time budget."""
from __future__ import annotations

import argparse
import sys
import time
from typing import TYPE_CHECKING

from inspector import __version__
from inspector.commands import SUMMARIES
from inspector.commands.common import (
    COLLECTOR_TIMEOUT,
    CliError,
    Duration,
    add_root_argument,
    root_from_args,
)
from inspector.commands.report import parse_sections
from inspector.outputs.check import (
    THRESHOLD_METRICS,
    ThresholdError,
    checkmk_lines,
    evaluate,
    nagios_lines,
    parse_thresholds,
    plugin_text,
)
from inspector.report.collect import build_report_forked

if TYPE_CHECKING:
    from inspector.config import LiveThresholds
    from inspector.live.findings import LiveFinding

# --timeout bounds the whole check (under check_nrpe's default 10 s socket timeout). The
# collectors run in parallel in a child process and get what is left after these margins: for
# the child to answer, and for the interpreter's start-up before this module was imported
# (not measured by the check; tests/bench/bench_costs.py prints it), the rules, printing and
# exit.
CHECK_TIMEOUT = 8.0
LIVE_DURATION = Duration(maximum=3600)
LIVE_INTERVAL = 1.0
CHILD_MARGIN = 0.25
OUTPUT_MARGIN = 0.5

RANGES_HELP = """\
thresholds: -w/--warn and -c/--crit take METRIC=RANGE in the Nagios range format:
  steal=5           alert outside 0..5 (above 5)    load1='~:10'   alert above 10
  md_degraded=1:3   alert outside 1..3              unknown=@1:5   alert inside 1..5
  dns_first_loss=2: alert below 2
metrics: steal (percent of CPU time stolen since boot), load1 (1-minute load average),
dns_first_loss (seconds a blackholed first nameserver adds), md_degraded (missing md members),
crit/warn/unknown (findings at that level), live_crit/live_warn (live findings, --live).

--live DURATION samples the host for that long first (1 s apart) and adds the live findings
(CPU saturation, a saturated disk, tasks in D, memory pressure, a filling filesystem ...)
to the status, the long text and perfdata (live_crit, live_warn, live_samples); one that
ended during the run counts at the worst level it reached. --timeout then defaults to
DURATION + 8 s: raise check_nrpe's -t to match.

--ignore PATTERN (glob, repeatable) drops findings an operator has accepted: it matches a
finding's code (net.offload.*, old DNS codes too), its subject as shown (eth0, resolver) or
SUBJECT.CODE ('resolver.*': everything about the resolver). A pattern that matches no finding
is said on stderr.

exit status: 0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN (usage mistakes too, with the reason on
stdout); with --checkmk the status is in each line (the agent ignores the exit status)."""


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("check", help=SUMMARIES["check"],
                       description="Check the host's findings and a few metrics against "
                                   "thresholds, as a monitoring plugin.",
                       epilog=RANGES_HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_root_argument(p)
    p.add_argument("-w", "--warn", action="append", default=[], metavar="METRIC=RANGE",
                   help=f"warning threshold ({', '.join(THRESHOLD_METRICS)}; see below)")
    p.add_argument("-c", "--crit", action="append", default=[], metavar="METRIC=RANGE",
                   help="critical threshold")
    p.add_argument("--ignore", action="append", default=[], metavar="PATTERN",
                   help="ignore findings whose code, subject or SUBJECT.CODE matches (glob)")
    p.add_argument("--section", action="append", metavar="NAME", help="limit to some sections")
    p.add_argument("--live", type=LIVE_DURATION, default=0.0, metavar="DURATION",
                   help=f"sample the host this long and include the live findings "
                        f"({LIVE_DURATION.bounds}; default 0: discovery only)")
    p.add_argument("-t", "--timeout", type=COLLECTOR_TIMEOUT, default=None,
                   metavar="DURATION",
                   help=f"bound on the whole check ({COLLECTOR_TIMEOUT.bounds}; default "
                        f"{CHECK_TIMEOUT:g}s, plus --live: a hung "
                        "collector still gets an UNKNOWN line out before check_nrpe's 10 s "
                        "socket timeout, which would read CRITICAL)")
    p.add_argument("--checkmk", action="store_true",
                   help="Checkmk local check lines: the host, then one service per section")
    p.add_argument("-V", "--version", action="version",
                   version=f"inspector check (live-inspector {__version__})")
    p.monitoring_plugin = True   # usage mistakes exit 3 UNKNOWN (see OneLineErrorParser)
    # the budget counts from here, the parser being built as the command starts (a module-level
    # time would be the first invocation's when main() runs more than once in one process)
    p.set_defaults(func=run, started=time.monotonic())


def run(args: argparse.Namespace) -> int:
    if args.timeout is None:
        args.timeout = CHECK_TIMEOUT + args.live
    try:
        thresholds = _live_thresholds() if args.live else None
        warn, crit = parse_thresholds(args.warn), parse_thresholds(args.crit)
        sections = parse_sections(args.section)
        # a --root on a hung mount: the UNKNOWN line still goes out within --timeout
        root = root_from_args(args, timeout=max(
            0.1, args.timeout - (time.monotonic() - args.started) - OUTPUT_MARGIN),
            deadline=args.started + args.timeout - OUTPUT_MARGIN)    # unpacking included
    except (CliError, ThresholdError) as exc:
        _unknown(args, plugin_text(str(exc)))
        return 3
    try:
        return _check(args, root, sections, warn, crit, thresholds)
    except Exception as exc:
        # an uncaught error would exit 1, which Nagios reads as WARNING: say UNKNOWN and why
        import traceback
        traceback.print_exc()
        _unknown(args, "internal error: " + plugin_text(f"{type(exc).__name__}: {exc}"))
        return 3


def _live_thresholds() -> LiveThresholds:
    """inspector.toml's thresholds of the live rules; a bad file is a CliError."""
    # here, not at the top: the config's parser and the live sampler serve --live only
    from inspector.config import ConfigError, load_config
    try:
        return load_config().live
    except ConfigError as exc:
        raise CliError(str(exc)) from None


def _unknown(args: argparse.Namespace, reason: str) -> None:
    if args.checkmk:
        print(f'3 "Inspector" - {reason}')
    else:
        print(f"INSPECTOR UNKNOWN - {reason}")


def _check(args: argparse.Namespace, root, sections, warn: dict, crit: dict,
           thresholds: LiveThresholds | None) -> int:
    live: list[LiveFinding] | None = None
    samples = 0
    if thresholds is not None:    # --live
        from inspector.health.live.session import sample_for
        budget = args.timeout - (time.monotonic() - args.started) - OUTPUT_MARGIN
        live, samples = sample_for(root, min(args.live, max(0.0, budget - 1.0)), thresholds,
                                   LIVE_INTERVAL)
    left = args.timeout - (time.monotonic() - args.started) - OUTPUT_MARGIN
    collectors = max(0.05, round(left - CHILD_MARGIN, 1))
    report = build_report_forked(root, sections, timeout=collectors,
                                 grace=max(0.05, left - collectors))
    if live is not None:
        _name_the_hypervisor(live, report)
    result = evaluate(report, warn, crit, args.ignore, live, samples)
    for pattern in result.unmatched_ignores:
        print(f"inspector check: --ignore {pattern!r} matched no finding's code, subject or "
              "SUBJECT.CODE", file=sys.stderr)
    for line in (checkmk_lines(result) if args.checkmk else nagios_lines(result)):
        print(line)
    return result.status


def _name_the_hypervisor(live: list[LiveFinding], report) -> None:
    """The steal finding names the layer discovery found."""
    from inspector.health.live.session import hypervisor_of
    layer = hypervisor_of(report.section("virt"))
    if layer:
        for lf in live:
            if lf.finding.code == "live.cpu.steal":
                lf.finding.message = lf.finding.message.replace(
                    "the hypervisor (layer not known to this view)", layer)
