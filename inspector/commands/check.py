"""`inspector check`: a Nagios/Icinga plugin.

One status line ("INSPECTOR CRITICAL - ..."), the findings as long text, perfdata after `|`.
Exit 0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN (could not check: bad --root, every section
unknown, a section not collected or an unknown-level finding with nothing worse than
WARNING). Thresholds on perfdata metrics:
`--warn steal=5 --crit steal=20` (a value above the threshold raises the status);
`--ignore CODE` (glob) drops findings an operator has accepted."""
from __future__ import annotations

import argparse
import fnmatch
import math
import time

from inspector.collect import build_report_forked
from inspector.commands.common import (COLLECTOR_TIMEOUT, CliError, add_root_argument,
                                       root_from_args)
from inspector.commands.report import parse_sections
from inspector.metrics import _is_unknown, collect_metrics, section_up
from inspector.model import Level, to_jsonable

STATUS_NAMES = {0: "OK", 1: "WARNING", 2: "CRITICAL", 3: "UNKNOWN"}
# --timeout bounds the whole check (under check_nrpe's default 10 s socket timeout). The
# collectors run in parallel in a child process and get what is left after these margins: for
# the child to answer, and for the interpreter's start-up before this module was imported
# (0.1-0.3 s, not measured), the rules, printing and exit.
CHECK_TIMEOUT = 8.0
CHILD_MARGIN = 0.25
OUTPUT_MARGIN = 0.5
_STARTED = time.monotonic()    # imported at start-up, tens of milliseconds after exec
# Short names accepted by --warn/--crit, mapped to perfdata labels.
THRESHOLD_METRICS = {
    "steal": "steal_pct", "crit": "crit", "warn": "warn", "unknown": "unknown",
    "dns_first_loss": "dns_first_loss_s", "md_degraded": "md_degraded",
    "load1": "load1",
}


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("check", help="Nagios/Icinga plugin: status line, perfdata, exit 0/1/2/3")
    add_root_argument(p)
    p.add_argument("--warn", action="append", default=[], metavar="METRIC=VALUE",
                   help=f"warning threshold on a metric ({', '.join(THRESHOLD_METRICS)}; "
                        "steal is the percent of CPU time stolen since boot, load1 the 1-minute "
                        "load average, crit/warn/unknown count findings)")
    p.add_argument("--crit", action="append", default=[], metavar="METRIC=VALUE",
                   help="critical threshold on a metric")
    p.add_argument("--ignore", action="append", default=[], metavar="CODE",
                   help="ignore findings whose code matches (glob, e.g. net.offload.*)")
    p.add_argument("--section", action="append", metavar="NAME", help="limit to some sections")
    p.add_argument("--timeout", type=COLLECTOR_TIMEOUT, default=CHECK_TIMEOUT, metavar="DURATION",
                   help=f"bound on the whole check ({COLLECTOR_TIMEOUT.bounds}; default "
                        f"{CHECK_TIMEOUT:g}s: a hung "
                        "collector still gets an UNKNOWN line out before check_nrpe's 10 s "
                        "socket timeout, which would read CRITICAL)")
    p.monitoring_plugin = True   # usage mistakes exit 3 UNKNOWN (see OneLineErrorParser)
    p.set_defaults(func=run)


def parse_thresholds(values: list[str]) -> dict[str, float]:
    out = {}
    for value in values:
        name, sep, number = value.partition("=")
        if not sep or name not in THRESHOLD_METRICS:
            raise CliError(f"bad threshold {value!r}: use METRIC=VALUE with METRIC one of "
                           f"{', '.join(THRESHOLD_METRICS)}", status=3)
        try:
            limit = float(number)
        except ValueError:
            raise CliError(f"bad threshold {value!r}: {number!r} is not a number", status=3) from None
        if not math.isfinite(limit):   # nan never compares above: a threshold that never fires
            raise CliError(f"bad threshold {value!r}: must be a finite number", status=3)
        out[THRESHOLD_METRICS[name]] = limit
    return out


def plugin_text(text: str) -> str:
    """Text safe in plugin output: '|' starts perfdata for Nagios/Icinga (on the status line
    and in the long text), so a NIC named eth|0 or a vendor tool's message with a pipe would
    cut the status and turn the rest into garbage perfdata; newlines would split a finding."""
    return " ".join(text.replace("|", "/").split())


def md_degraded_total(doc: dict) -> float | None:
    """Missing members over all md arrays; None (unknown, never 0) when storage was not
    collected, the md state could not be read, or any array's degraded count is unknown."""
    storage = doc.get("sections", {}).get("storage")
    if not section_up("storage", storage):
        return None
    arrays = storage.get("md")
    if not isinstance(arrays, dict) or _is_unknown(arrays):
        return None
    total = 0.0
    for md in arrays.values():
        degraded = md.get("degraded") if isinstance(md, dict) else None
        if isinstance(degraded, bool) or not isinstance(degraded, (int, float)):
            return None
        total += degraded
    return total


def perfdata(report, findings) -> dict[str, tuple[float, str]]:
    """label -> (value, unit); a value that is unknown is left out, never written as 0."""
    data: dict[str, tuple[float, str]] = {
        "crit": (sum(f.level == Level.CRIT for f in findings), ""),
        "warn": (sum(f.level == Level.WARN for f in findings), ""),
        "unknown": (sum(f.level == Level.UNKNOWN for f in findings), ""),
    }
    doc = to_jsonable(report)
    for s in collect_metrics(doc):
        if s.name == "cpu_steal_ratio":
            data["steal_pct"] = (round(s.value * 100, 2), "%")
        elif s.name == "resolver_first_server_loss_seconds":
            data["dns_first_loss_s"] = (s.value, "s")
        elif s.name == "load_average" and s.labels.get("period") in ("1m", "1"):
            data["load1"] = (s.value, "")
    if (degraded := md_degraded_total(doc)) is not None:
        data["md_degraded"] = (degraded, "")
    return data


def run(args: argparse.Namespace) -> int:
    try:
        warn, crit = parse_thresholds(args.warn), parse_thresholds(args.crit)
        sections = parse_sections(args.section)
        root = root_from_args(args)
    except CliError as exc:
        print(f"INSPECTOR UNKNOWN - {plugin_text(str(exc))}")
        return 3
    try:
        return _check(args, root, sections, warn, crit)
    except Exception as exc:
        # an uncaught error would exit 1, which Nagios reads as WARNING: say UNKNOWN and why
        import traceback
        traceback.print_exc()
        print(f"INSPECTOR UNKNOWN - internal error: "
              f"{plugin_text(f'{type(exc).__name__}: {exc}')}")
        return 3


def _check(args: argparse.Namespace, root, sections, warn: dict, crit: dict) -> int:
    left = args.timeout - (time.monotonic() - _STARTED) - OUTPUT_MARGIN
    collectors = max(0.05, round(left - CHILD_MARGIN, 1))
    report = build_report_forked(root, sections, timeout=collectors,
                                 grace=max(0.05, left - collectors))
    from inspector.render.findings import printable   # no escape sequences into a terminal
    findings = [printable(f) for f in report.findings
                if not any(fnmatch.fnmatch(f.code or "", pat) for pat in args.ignore)]
    data = perfdata(report, findings)
    status = 0
    reasons = []
    for f in findings:
        if f.level == Level.CRIT:
            status = 2
        elif f.level == Level.WARN and status < 2:
            status = 1
    unknown_subjects = sorted(label for label in {**warn, **crit} if label not in data)
    for label, limit in crit.items():
        if label in data and data[label][0] > limit:
            status = 2
            reasons.append(f"{label}={data[label][0]:g} > {limit:g}")
    for label, limit in warn.items():
        if label in data and data[label][0] > limit:
            status = max(status, 1)
            reasons.append(f"{label}={data[label][0]:g} > {limit:g}")
    doc_sections = to_jsonable(report).get("sections", {})
    # every section timed out, failed, or lacks its primary input: nothing was checked
    all_unknown = not any(section_up(name, value) for name, value in doc_sections.items())
    # a section that hung or failed was not checked: its disks may be what is wrong, so the
    # check is UNKNOWN (not OK, nor only WARNING); CRITICAL still wins (severity order)
    not_collected = any((f.code or "").endswith(".not_collected") for f in findings)
    if status < 2 and (all_unknown or unknown_subjects or not_collected):
        status = 3       # a thresholded subject we could not read is not OK (nor only WARN)
        reasons += [f"{label} unknown" for label in unknown_subjects]
    elif status == 0 and any(f.level == Level.UNKNOWN for f in findings):
        status = 3
    top = [f for f in findings if f.level in (Level.CRIT, Level.WARN, Level.UNKNOWN)]
    if top:
        summary = "; ".join(plugin_text(f"{f.subject}: {f.message}") for f in top[:3])
        if len(top) > 3:
            summary += f"; and {len(top) - 3} more"
    elif all_unknown:
        summary = "nothing could be collected"
    else:
        summary = "no problems found"
    if all_unknown and top:
        summary = "nothing could be collected: " + summary
    if reasons:
        summary = ", ".join(reasons) + ("; " + summary if top else "")
    perf = " ".join(
        f"{label}={value:g}{unit};{_t(warn.get(label))};{_t(crit.get(label))};;"
        for label, (value, unit) in data.items())
    print(f"INSPECTOR {STATUS_NAMES[status]} - {summary} | {perf}")
    for f in top:
        print(plugin_text(f"[{f.level.label.upper()}] {f.subject}: {f.message}"
                          + (f" ({f.code})" if f.code else "")))
    return status


def _t(value: float | None) -> str:
    return "" if value is None else f"{value:g}"
