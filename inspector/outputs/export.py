"""Prometheus textfile-collector export (node_exporter --collector.textfile.directory).

Names: inspector_<metric> with labels device, nic, nameserver, section ...; the list with help
texts is inspector.outputs.metrics.METRICS and the README. Written atomically: node_exporter must never
read a half-written file."""
from __future__ import annotations

from inspector.model import Report
from inspector.outputs.metrics import METRICS, Sample, collect_metrics
from inspector.text.escapes import visible

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


def _family(name: str) -> str:
    """The metric a sample belongs to: a summary's _sum and _count are lines of its family."""
    for suffix in SUMMARY_SUFFIXES:
        base = name.removesuffix(suffix)
        if base != name and (meta := METRICS.get(base)) and meta.type == "summary":
            return base
    return name


SUMMARY_SUFFIXES = ("_sum", "_count")


def prometheus_text(report: Report | dict, extra: list[Sample] | None = None) -> str:
    samples = collect_metrics(report) + list(extra or [])
    by_family: dict[str, list[Sample]] = {}
    for s in samples:
        by_family.setdefault(_family(s.name), []).append(s)
    lines: list[str] = []
    for family in sorted(by_family):
        meta = METRICS.get(family)
        lines.append(f"# HELP {PREFIX}{family} {meta.help if meta else family}")
        lines.append(f"# TYPE {PREFIX}{family} {meta.type if meta else 'gauge'}")
        seen = set()
        # quantiles first, then _sum, then _count (the order the format shows a summary in)
        for s in sorted(by_family[family], key=lambda s: len(s.name)):
            full = PREFIX + s.name
            labels = ",".join(f'{k}="{_escape(str(v))}"' for k, v in sorted(s.labels.items()))
            key = (full, labels)
            if key in seen:   # duplicate series are invalid in the exposition format
                continue
            seen.add(key)
            lines.append(f"{full}{{{labels}}} {_fmt(s.value)}" if labels else f"{full} {_fmt(s.value)}")
    return "\n".join(lines) + "\n"
