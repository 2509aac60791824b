"""`inspector top`: live rates like iostat -x and vmstat, one plain-text block per interval
(devices, NICs, CPU, D-state and top IO processes), for slow SSH links and scripts."""
from __future__ import annotations

import argparse
import os
import shutil
import sys
import time

from inspector.commands import SUMMARIES, top_replay
from inspector.commands.common import (
    CliError,
    Duration,
    add_root_argument,
    add_schema_argument,
    exit_epilog,
    non_negative_int,
    print_json,
    root_from_args,
)
from inspector.config import ConfigError, LiveThresholds, load_config
from inspector.documents.kinds import stamped
from inspector.health.live.session import LiveSession
from inspector.live import since_boot
from inspector.live.sampler import READ_TIMEOUT, Rates
from inspector.live.text import format_block, format_single
from inspector.live.worker import SamplerProcess
from inspector.model import to_jsonable
from inspector.outputs.ignore import split_ignored
from inspector.roots.host import HostRoot

INTERVAL = Duration(maximum=86400)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("top", help=SUMMARIES["top"],
                       description="Print one block per interval: CPU split (with steal and "
                                   "iowait), iostat -x per device, NIC rates, processes in D "
                                   "state, the top IO and CPU processes, and the live "
                                   "findings (what is wrong right now, since when, and who "
                                   "does it; thresholds in inspector.toml). Ctrl-C stops.",
                       epilog=exit_epilog(ok="done, or stopped by Ctrl-C (how a live view "
                                             "ends)"))
    p.add_argument("--interval", type=INTERVAL, default=1.0, metavar="DURATION",
                   help=f"time between samples (default 1s, {INTERVAL.bounds})")
    p.add_argument("--count", type=non_negative_int, default=0, metavar="N",
                   help=f"stop after N intervals (default 0: until Ctrl-C; "
                        f"{non_negative_int.bounds})")
    p.add_argument("--json", action="store_true", help="one JSON object per line per interval")
    add_schema_argument(p, "top", "each --json line")
    p.add_argument("--all", action="store_true", help="also list devices with no IO")
    p.add_argument("--wide", action="store_true",
                   help="every iostat -x column even when the terminal is narrower")
    p.add_argument("--ignore", action="append", default=[], metavar="PATTERN",
                   help="leave out live findings whose code, subject or SUBJECT.CODE matches "
                        "(glob, as `check --ignore`)")
    add_root_argument(p)
    top_replay.add_arguments(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if top_replay.wants_replay(args):
        try:
            return top_replay.run_replay(args, _width(args))
        except BrokenPipeError:
            return 0
    root = root_from_args(args)
    thresholds = live_thresholds()
    # the reads happen in a child process, each source bounded: a /proc/diskstats that never
    # answers (a hung lxcfs) is named in the block, and Ctrl-C or --count still end top
    sampler = SamplerProcess(root, read_timeout=min(READ_TIMEOUT, max(0.25, args.interval / 2)))
    try:
        if not root.live:
            return _single(sampler, args)
        return _loop(sampler, args, thresholds, root)
    except KeyboardInterrupt:
        return 0          # Ctrl-C is how a live view ends: no message, no traceback
    except BrokenPipeError:
        return 0
    finally:
        sampler.close()


def _width(args: argparse.Namespace) -> int | None:
    """The terminal's width (COLUMNS first, as the shell sets it); None (every column, fixed
    layout for awk) when writing to a pipe with no COLUMNS, or with --wide."""
    if args.wide:
        return None
    try:
        columns = int(os.environ.get("COLUMNS", ""))
        return columns if columns > 0 else None
    except ValueError:
        pass
    if sys.stdout.isatty():
        return shutil.get_terminal_size().columns
    return None


def _single(sampler: SamplerProcess, args: argparse.Namespace) -> int:
    snap = sampler.sample()
    since = since_boot(snap)
    if args.json:
        print_json(stamped("inspector-top-boot", {
            "source": snap.source, "samples": 1,
            "note": "rates need two samples; since_boot holds averages since boot",
            "snapshot": to_jsonable(snap), "since_boot": to_jsonable(since)}), indent=None)
    else:
        sys.stdout.write(format_single(snap, since, width=_width(args)))
    return 0


def live_thresholds() -> LiveThresholds:
    """The live rules' thresholds from the configuration file; CliError for a bad one."""
    try:
        return load_config().live
    except ConfigError as exc:
        raise CliError(str(exc)) from None


def _loop(sampler: SamplerProcess, args: argparse.Namespace, thresholds: LiveThresholds,
          root: HostRoot | None = None) -> int:
    """`root`: where the steal finding looks up the VM layer (live roots only)."""
    session = LiveSession(sampler.sample, thresholds)
    looked_up = root is None or not root.live
    start = session.step().counters.mono
    done = 0
    while not args.count or done < args.count:
        # fixed-rate schedule: the output does not drift by the sampling cost
        delay = start + (done + 1) * args.interval - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        r = session.step().sample
        assert r is not None            # every step after the first has a sample
        if not looked_up and root is not None and any(
                lf.finding.code == "live.cpu.steal" for lf in r.live_findings):
            looked_up = True            # the steal finding names the layer from the next one
            session.set_hypervisor(_hypervisor(root))
        _ignore(r, args.ignore)
        if args.json:
            print_json(stamped("inspector-top", to_jsonable(r)), indent=None)
        else:
            if done:
                sys.stdout.write("\n")
            sys.stdout.write(format_block(r, show_idle=args.all, width=_width(args)))
        sys.stdout.flush()
        done += 1
    return 0


def _hypervisor(root: HostRoot) -> str | None:
    """The VM layer virt discovery finds (about 0.1 s, in a bounded child); None if none."""
    from inspector.health.live.session import hypervisor_of
    from inspector.report.collect import build_report_forked
    try:
        return hypervisor_of(build_report_forked(root, ["virt"], timeout=3).section("virt"))
    except Exception:       # no name is better than no top
        return None


def _ignore(r: Rates, patterns: list[str]) -> None:
    if patterns:
        r.live_findings = [lf for lf in r.live_findings
                           if split_ignored([lf.finding], patterns)[0]]
