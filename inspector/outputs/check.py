"""What `inspector check` decides and prints, apart from its command line: thresholds in the
Nagios range format, the findings an operator ignores, the status of a report, perfdata, and
the two outputs (a Nagios/Icinga plugin's text, a Checkmk local check's lines).

Ranges (https://www.monitoring-plugins.org/doc/guidelines.html#THRESHOLDFORMAT): `10` alerts
outside 0..10, `10:` below 10, `~:10` above 10, `10:20` outside 10..20, `@10:20` inside it.

Status: CRITICAL for a crit finding or a --crit range hit; else UNKNOWN when part of the host
went unchecked (a section not collected, nothing collected, a thresholded value unknown); else
WARNING for a warn finding or a --warn range hit; else UNKNOWN for unknown findings; else OK
(inspector.outputs.metrics.plugin_status, the rule the Prometheus health_status follows too)."""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from inspector.health import sort_findings
from inspector.model import Finding, Level, Report, to_jsonable
from inspector.outputs.ignore import (  # noqa: F401  (re-exported: the command prints with them)
    ignore_keys,
    plugin_text,
    split_ignored,
)
from inspector.outputs.metrics import (
    _is_unknown,
    collect_metrics,
    plugin_status,
    section_up,
    went_unchecked,
)
from inspector.text.escapes import printable

if TYPE_CHECKING:   # inspector.live's package imports every sampler: `check` without --live has none
    from inspector.live.findings import LiveFinding

STATUS_NAMES = {0: "OK", 1: "WARNING", 2: "CRITICAL", 3: "UNKNOWN"}
# Short names accepted by --warn/--crit, mapped to perfdata labels.
THRESHOLD_METRICS = {
    "steal": "steal_pct", "crit": "crit", "warn": "warn", "unknown": "unknown",
    "dns_first_loss": "dns_first_loss_s", "md_degraded": "md_degraded",
    "load1": "load1", "live_crit": "live_crit", "live_warn": "live_warn",
}
SHOWN_IN_STATUS_LINE = 3       # findings named on the status line; the rest are "and N more"


class ThresholdError(ValueError):
    """A --warn/--crit argument that is not METRIC=RANGE; the message is one line."""


_NUMBER = re.compile(r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?")


@dataclass(frozen=True)
class NagiosRange:
    start: float          # -inf for "~"
    end: float            # inf when left out ("10:")
    inside: bool = False  # "@": alert inside start..end instead of outside
    text: str = ""        # as given: perfdata repeats it

    @classmethod
    def parse(cls, text: str) -> NagiosRange:
        body = text.strip()
        inside = body.startswith("@")
        if inside:
            body = body[1:]
        if not body:
            raise ThresholdError("empty range")
        start_text, sep, end_text = body.rpartition(":")
        if not sep:
            start_text = ""
        start = -math.inf if start_text == "~" else _number(start_text, 0.0)
        end = math.inf if sep and not end_text else _number(end_text, None)
        if start > end:
            raise ThresholdError(f"{text!r}: the start {start:g} is above the end {end:g}")
        return cls(start, end, inside, text.strip())

    def alerts(self, value: float) -> bool:
        outside = value < self.start or value > self.end
        return not outside if self.inside else outside

    def violation(self, label: str, value: float) -> str:
        """Why `value` alerts, for the status line: 'steal_pct=12 > 5'."""
        if self.inside:
            return f"{label}={value:g} in @{self.text.lstrip('@')}"
        if value > self.end:
            return f"{label}={value:g} > {self.end:g}"
        return f"{label}={value:g} < {self.start:g}"

    @property
    def upper_bound(self) -> float | None:
        """The limit when the range only alerts above it (`10`, `~:10`), else None."""
        if self.inside or self.start not in (0, -math.inf) or math.isinf(self.end):
            return None
        return self.end


def _number(text: str, default: float | None) -> float:
    if text == "" and default is not None:
        return default
    if _NUMBER.fullmatch(text):
        value = float(text)
        if math.isfinite(value):
            return value
    try:
        finite = math.isfinite(float(text))
    except ValueError:
        finite = True
    if not finite:   # nan never compares: a threshold that could never fire
        raise ThresholdError(f"{text!r} must be a finite number")
    raise ThresholdError(f"{text!r} is not a number")


def parse_thresholds(values: list[str]) -> dict[str, NagiosRange]:
    """METRIC=RANGE arguments -> perfdata label -> range; ThresholdError otherwise."""
    out = {}
    for value in values:
        name, sep, range_text = value.partition("=")
        if not sep or name not in THRESHOLD_METRICS:
            raise ThresholdError(f"bad threshold {value!r}: use METRIC=RANGE with METRIC one of "
                                 f"{', '.join(THRESHOLD_METRICS)}")
        try:
            out[THRESHOLD_METRICS[name]] = NagiosRange.parse(range_text)
        except ThresholdError as exc:
            raise ThresholdError(f"bad threshold {value!r}: {exc}") from None
    return out


# ------------------------------------------------------------------------------ ignoring
# ------------------------------------------------------------------------------ evaluation
@dataclass
class Perf:
    value: float
    unit: str = ""
    warn: NagiosRange | None = None
    crit: NagiosRange | None = None


@dataclass
class SectionStatus:
    status: int
    problems: list[Finding] = field(default_factory=list)
    collected: bool = True


@dataclass
class CheckResult:
    status: int
    summary: str                  # the status line's text after "INSPECTOR STATUS - "
    problems: list[Finding]       # crit, unknown and warn findings, as shown
    perfdata: dict[str, Perf]
    unmatched_ignores: list[str]  # --ignore patterns that matched no finding
    sections: dict[str, SectionStatus]


# Which section a finding's code belongs to (the prefix before its first dot), for the
# Checkmk services; a code not listed counts in the overall service only.
SECTION_OF_PREFIX = {
    **dict.fromkeys(("storage", "drives", "block", "dm", "md", "drive", "fio", "hio", "nvme",
                     "smart"), "storage"),
    "net": "net", "dns": "dns", "cpu": "cpu", "virt": "virt",
}


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


def perfdata(doc: dict, findings: list[Finding]) -> dict[str, Perf]:
    """label -> Perf; a value that is unknown is left out, never written as 0."""
    data = {
        "crit": Perf(sum(f.level == Level.CRIT for f in findings)),
        "warn": Perf(sum(f.level == Level.WARN for f in findings)),
        "unknown": Perf(sum(f.level == Level.UNKNOWN for f in findings)),
    }
    for s in collect_metrics(doc):
        if s.name == "cpu_steal_ratio":
            data["steal_pct"] = Perf(round(s.value * 100, 2), "%")
        elif s.name == "resolver_first_server_loss_seconds":
            data["dns_first_loss_s"] = Perf(s.value, "s")
        elif s.name == "load_average" and s.labels.get("period") in ("1m", "1"):
            data["load1"] = Perf(s.value)
    if (degraded := md_degraded_total(doc)) is not None:
        data["md_degraded"] = Perf(degraded)
    return data


def live_for_check(live: list[LiveFinding]) -> list[Finding]:
    """The live findings of a `check --live` run as findings: those still active as they
    are, those that ended during the run at the worst level they reached (an OOM kill in the
    middle of the run is still news to the monitoring)."""
    out = []
    for lf in live:
        f = lf.as_finding()
        if not lf.active:
            f = replace(f, level=lf.worst)
        out.append(f)
    return out


def evaluate(report: Report, warn: dict[str, NagiosRange], crit: dict[str, NagiosRange],
             ignore: list[str], live: list[LiveFinding] | None = None,
             live_samples: int = 0) -> CheckResult:
    """`live`: the live findings of `check --live` (active and ended), judged and ignored
    like discovery's; their counts go to perfdata as live_crit, live_warn."""
    doc = to_jsonable(report)
    every = list(report.findings)
    if live is not None:
        every = sort_findings(every + live_for_check(live))
    kept, unmatched = split_ignored(every, ignore)
    findings = [printable(f) for f in kept]     # no escape sequences into a terminal
    data = perfdata(doc, findings)
    if live is not None:
        mine = [f for f in findings if (f.code or "").startswith("live.")]
        data["live_crit"] = Perf(sum(f.level == Level.CRIT for f in mine))
        data["live_warn"] = Perf(sum(f.level == Level.WARN for f in mine))
        data["live_samples"] = Perf(live_samples)
    for label, perf in data.items():
        perf.warn, perf.crit = warn.get(label), crit.get(label)
    levels = {f.level.label for f in findings}
    reasons = []
    for limits, level in ((crit, "crit"), (warn, "warn")):
        for label, limit in limits.items():
            if label in data and limit.alerts(data[label].value):
                levels.add(level)
                reasons.append(limit.violation(label, data[label].value))
    sections = doc.get("sections", {})
    # every section timed out, failed, or lacks its primary input: nothing was checked
    all_unknown = not any(section_up(name, value) for name, value in sections.items())
    unknown_subjects = sorted(label for label in {**warn, **crit} if label not in data)
    status = plugin_status(levels, went_unchecked((f.code or "" for f in findings), sections)
                           or bool(unknown_subjects))
    if status == 3:
        reasons += [f"{label} unknown" for label in unknown_subjects]
    problems = [f for f in findings if f.level in (Level.CRIT, Level.WARN, Level.UNKNOWN)]
    return CheckResult(status, _summary(problems, reasons, all_unknown), problems, data,
                       unmatched, _section_statuses(sections, problems))


def _summary(problems: list[Finding], reasons: list[str], all_unknown: bool) -> str:
    if problems:
        summary = _named(problems)
    elif all_unknown:
        summary = "nothing could be collected"
    else:
        summary = "no problems found"
    if all_unknown and problems:
        summary = "nothing could be collected: " + summary
    if reasons:
        summary = ", ".join(reasons) + ("; " + summary if problems else "")
    return summary


def _named(problems: list[Finding]) -> str:
    text = "; ".join(plugin_text(f"{f.subject}: {f.message}")
                     for f in problems[:SHOWN_IN_STATUS_LINE])
    if len(problems) > SHOWN_IN_STATUS_LINE:
        text += f"; and {len(problems) - SHOWN_IN_STATUS_LINE} more"
    return text


def section_of(finding: Finding) -> str | None:
    return SECTION_OF_PREFIX.get((finding.code or "").partition(".")[0])


def _section_statuses(sections: dict, problems: list[Finding]) -> dict[str, SectionStatus]:
    out = {}
    for name, section in sections.items():
        mine = [f for f in problems if section_of(f) == name]
        collected = section_up(name, section)
        status = plugin_status({f.level.label for f in mine}, not collected)
        out[name] = SectionStatus(status, mine, collected)
    return out


# ------------------------------------------------------------------------------ output
def nagios_lines(result: CheckResult) -> list[str]:
    """The status line with perfdata after '|', then one line per problem (the long text)."""
    perf = " ".join(
        f"{label}={p.value:g}{p.unit};{_range(p.warn)};{_range(p.crit)};;"
        for label, p in result.perfdata.items())
    lines = [f"INSPECTOR {STATUS_NAMES[result.status]} - {result.summary} | {perf}"]
    lines += [_problem_line(f) for f in result.problems]
    return lines


def _range(limit: NagiosRange | None) -> str:
    return "" if limit is None else limit.text


def _problem_line(f: Finding) -> str:
    return plugin_text(f"[{f.level.label.upper()}] {f.subject}: {f.message}"
                       + (f" ({f.code})" if f.code else ""))


CHECKMK_SERVICE = "Inspector"


def checkmk_lines(result: CheckResult) -> list[str]:
    """Checkmk local check lines (the agent's <<<local>>> section): `STATUS "SERVICE" METRICS
    TEXT`, one service for the whole host with the perfdata, then one per section ("Inspector
    storage" ...), so each can be acknowledged on its own. Further lines of a service's text
    are joined with a literal \\n, which Checkmk shows as its long output."""
    metrics = "|".join(_checkmk_metric(label, p) for label, p in result.perfdata.items()) or "-"
    lines = [_checkmk_line(result.status, CHECKMK_SERVICE, metrics, result.summary,
                           result.problems)]
    for name, section in result.sections.items():
        if section.problems:
            text = _named(section.problems)
        elif not section.collected:
            text = f"{name} not checked: its input is missing or could not be read"
        else:
            text = "no problems found"
        lines.append(_checkmk_line(section.status, f"{CHECKMK_SERVICE} {name}", "-", text,
                                   section.problems))
    return lines


def _checkmk_metric(label: str, p: Perf) -> str:
    """name=value;warn;crit: Checkmk's levels are plain upper limits, so a range with a lower
    bound or '@' gives no level (the status is ours anyway)."""
    levels = [limit.upper_bound if limit else None for limit in (p.warn, p.crit)]
    text = f"{label}={p.value:g}"
    if any(v is not None for v in levels):
        text += ";" + ";".join("" if v is None else f"{v:g}" for v in levels)
    return text


def _checkmk_line(status: int, service: str, metrics: str, text: str,
                  problems: list[Finding]) -> str:
    parts = [plugin_text(text)] + [_problem_line(f) for f in problems]
    # a literal backslash-n in a host's text would start a line of its own in the long output
    return f'{status} "{service}" {metrics} ' + "\\n".join(
        part.replace("\\n", "/n") for part in parts)
