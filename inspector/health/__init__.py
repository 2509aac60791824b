"""Health rules: the report model in, findings (level, subject, message, evidence, advice) out.

One module per subject, each with `rules(report) -> Iterable[Finding]`; inspector.report.sections
lists which sets judge which section. A set that fails yields one UNKNOWN finding naming the
failure instead of hiding the others."""
from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import NamedTuple

from inspector.model import Finding, Level, Report, Unknown


class RuleSet(NamedTuple):
    name: str                                       # subject and code prefix when the set fails
    rules: Callable[[Report], Iterable[Finding]]


def evaluate(report: Report, rule_sets: Iterable[RuleSet]) -> list[Finding]:
    # A section that could not be collected at all is itself a finding: "no findings" must
    # never be printed for a host we did not manage to look at.
    findings: list[Finding] = [
        Finding(Level.UNKNOWN, name, f"{name} not collected: {section.reason}",
                advice=_not_collected_advice(name, section.reason),
                code=f"{name}.not_collected")
        for name, section in report.sections.items() if isinstance(section, Unknown)]
    for name, rules in rule_sets:
        try:
            findings.extend(rules(report))
        except Exception as exc:
            findings.append(Finding(Level.UNKNOWN, name, f"health rules for {name} failed: "
                                    f"{type(exc).__name__}: {exc}",
                                    advice=f"An inspector bug: the {name} section below is "
                                    "still what was read, but nothing in it was judged; report "
                                    "it with an `inspector capture` of the host.",
                                    code=f"{name}.rules_failed"))
    return sort_findings(findings)


def _not_collected_advice(name: str, reason: str) -> str:
    if "timed out" in reason:
        # a read that hangs (a dying disk's sysfs, a stuck vendor tool, NFS) does not finish
        # with more time: say where to look before suggesting patience
        return (f"A read or a command of the {name} collector hung or was slow: look for "
                "processes stuck in D state (inspector top, ps -eo stat,pid,cmd | grep ^D) and "
                "the kernel log; run again with a longer --timeout only if the host is just "
                "loaded.")
    if reason.startswith("collector failed"):
        return ("An inspector bug on this host's data: the other sections stand; report it with "
                "an `inspector capture` of the host.")
    return ""


def sort_findings(findings: list[Finding]) -> list[Finding]:
    return sorted(findings, key=lambda f: (-f.level.severity, f.subject, f.code, f.message))
