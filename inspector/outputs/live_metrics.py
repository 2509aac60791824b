"""The live findings as Prometheus series: one gauge per active live finding, labelled with
its code, subject and level (value 1), for `record --samples --textfile` and
`export --prometheus --live`."""
from __future__ import annotations

from inspector.live.findings import LiveFinding
from inspector.outputs.metrics import Sample

NAME = "live_finding"


def live_finding_samples(findings: list[LiveFinding]) -> list[Sample]:
    return [Sample(NAME, 1, {"code": lf.finding.code, "subject": lf.finding.subject,
                             "level": lf.finding.level.label})
            for lf in findings if lf.active]
