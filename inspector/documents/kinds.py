"""The JSON documents the commands print, each opened by `schema_version` and `kind`.

`schema_version` is the layout of that kind of document: it changes when a field changes
meaning or goes away (a new field does not change it). `kind` says which document a file holds.
The report (`report --json`, `export --json`) keeps the version of inspector.model, snapshots
and fleet documents theirs (inspector.compare.snapshot, inspector.compare.fleet); the others are listed here.
"""
from __future__ import annotations

from typing import Any

from inspector.model import Report, to_jsonable

# kind -> its schema version
VERSIONS = {
    "inspector-diff": 1,
    "inspector-top": 1,             # one line per interval: rates
    "inspector-top-boot": 1,        # one line from a capture: averages since boot
    "inspector-probe-io": 1,
    "inspector-probe-io-ramp": 1,
    "inspector-probe-memcached": 1,
    "inspector-probe-memcached-ramp": 1,
    "inspector-probe-dns": 1,
    "inspector-history": 1,
    "inspector-history-checks": 1,
    "inspector-history-samples": 1,
}


def stamped(kind: str, body: dict[str, Any]) -> dict[str, Any]:
    """`body` opened by its kind's schema_version and kind."""
    return {"schema_version": VERSIONS[kind], "kind": kind, **body}


def report_document(report: Report, timings: bool = False) -> dict[str, Any]:
    """The report as `report --json` prints it: the version and the host, then the findings
    (so `report --json | head` reaches them), then the sections; timings with --diagnose."""
    doc = to_jsonable(report)
    ordered = {key: doc.pop(key) for key in ("schema_version", "host", "findings", "sections")}
    kept = doc.pop("timings", None)
    ordered.update(doc)               # a field added to Report later still comes out
    if timings:
        ordered["timings"] = kept
    return ordered
