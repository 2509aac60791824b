"""Prometheus textfile-collector export (node_exporter --collector.textfile.directory).

Names: inspector_<metric> with labels device, nic, nameserver, section ...; the list with help
texts is inspector.outputs.metrics.METRICS and the README. Written atomically: node_exporter must never
read a half-written file."""
from __future__ import annotations

from inspector.escapes import visible
from inspector.model import Report
from inspector.outputs.metrics import METRICS, Sample, collect_metrics

PREFIX = "inspector_"


def _escape(value: str) -> str:
    """A label value in the exposition format: backslash, quote and newline escaped as it
    defines; other controls and bidi/format characters first made visible (\\x1b: the
    format knows no other escape, so they arrive as text) for whoever reads the metrics."""
    value = visible(value)
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _fmt(value: float) -> str:
    if value != value:  # NaN
        return "NaN"
    return repr(int(value)) if float(value).is_integer() and abs(value) < 1e15 else repr(float(value))


def prometheus_text(report: Report | dict, extra: list[Sample] | None = None) -> str:
    samples = collect_metrics(report) + list(extra or [])
    by_name: dict[str, list[Sample]] = {}
    for s in samples:
        by_name.setdefault(s.name, []).append(s)
    lines: list[str] = []
    for name in sorted(by_name):
        meta = METRICS.get(name)
        full = PREFIX + name
        lines.append(f"# HELP {full} {meta.help if meta else name}")
        lines.append(f"# TYPE {full} {meta.type if meta else 'gauge'}")
        seen = set()
        for s in by_name[name]:
            labels = ",".join(f'{k}="{_escape(str(v))}"' for k, v in sorted(s.labels.items()))
            key = (full, labels)
            if key in seen:   # duplicate series are invalid in the exposition format
                continue
            seen.add(key)
            lines.append(f"{full}{{{labels}}} {_fmt(s.value)}" if labels else f"{full} {_fmt(s.value)}")
    return "\n".join(lines) + "\n"
