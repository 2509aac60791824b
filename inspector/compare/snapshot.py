"""Snapshots: the full report model plus short bounded probe runs, in one JSON file.

Written atomically (inspector.writing.atomic: temp file in the same directory, fsync, rename) so a
maintenance runbook never diffs a half-written file, and never over a device node. Reading
checks the kind and the schema version and says clearly what is wrong with a file it refuses;
it reads a regular file (or stdin) of at most MAX_SNAPSHOT_BYTES, refuses NaN, infinities,
implausible timestamps, unknown finding levels and nesting deeper than any report has, so a
hostile or broken file is one error line (exit 2), never a 5 GB read or a wrong verdict.
"""
from __future__ import annotations

import json
import math
import socket
import time
from collections.abc import Iterable
from typing import Any

from inspector.model import SCHEMA_VERSION, Level, Report, to_jsonable
from inspector.roots.input_files import InputError, read_input
from inspector.writing.atomic import write_atomic

SNAPSHOT_KIND = "inspector-snapshot"
SNAPSHOT_VERSION = 1
# Snapshot versions this Inspector can read (older ones are upgraded on load when they appear).
READABLE_VERSIONS = {1}


# A snapshot of a host with thousands of devices is a few MB (a small VM's: 73 KB, 453 objects,
# 8 levels deep); the bounds below leave room for that and stop a file built to exhaust memory.
MAX_SNAPSHOT_BYTES = 64 << 20
MAX_CONTAINERS = 1_000_000     # objects and arrays: ~60 bytes or more each, walked by diff
MAX_DEPTH = 64                 # diff walks the tree recursively
LATEST_TIME = 253402300799     # 9999-12-31T23:59:59Z: what time.gmtime and strftime take


class SnapshotError(Exception):
    pass


def build_snapshot(report: Report, probes: list[dict]) -> dict[str, Any]:
    return {
        "kind": SNAPSHOT_KIND,
        "snapshot_version": SNAPSHOT_VERSION,
        "schema_version": SCHEMA_VERSION,
        "created_at": time.time(),
        "report": to_jsonable(report),
        "probes": to_jsonable(probes),     # a NaN in a probe's figures becomes null
    }


def default_name(hostname: str | None = None, when: float | None = None) -> str:
    host = (hostname or socket.gethostname()).replace("/", "_")
    return time.strftime(f"inspector-{host}-%Y%m%dT%H%M%S.json", time.localtime(when))


def snapshot_bytes(doc: dict) -> bytes:
    # allow_nan=False: never write what read_snapshot refuses
    return (json.dumps(doc, indent=1, sort_keys=False, allow_nan=False) + "\n").encode()


def write_snapshot(doc: dict, path: str) -> None:
    write_atomic(path, snapshot_bytes(doc))


def read_snapshot(path: str, watched: bool = True) -> dict:
    """The snapshot in `path` ("-": stdin), checked; SnapshotError with one line otherwise.
    `watched`: read by a child given up when it stalls (inspector.roots.input_files)."""
    try:
        raw = read_input(path, MAX_SNAPSHOT_BYTES, "snapshot", watched)
    except InputError as exc:
        raise SnapshotError(str(exc)) from None
    return parse_snapshot(path, raw)


def parse_snapshot(path: str, raw: bytes) -> dict:
    """The snapshot in `raw` (read from `path`), checked; SnapshotError with one line."""
    if not raw.strip():
        raise SnapshotError(f"{path}: empty file, not a snapshot")
    containers = raw.count(b"{") + raw.count(b"[")     # an upper bound (strings hold some)
    if containers > MAX_CONTAINERS:
        raise SnapshotError(f"{path}: over {MAX_CONTAINERS} JSON objects and arrays: not a "
                            "snapshot Inspector wrote")
    try:
        doc = json.loads(raw, parse_constant=_not_a_number, parse_float=_finite_float)
    except _NonFinite as exc:
        raise SnapshotError(f"{path}: not a usable snapshot: {exc} (edited by hand?)") from None
    except RecursionError:
        raise SnapshotError(f"{path}: JSON nested too deeply: not a snapshot") from None
    except ValueError as exc:
        raise SnapshotError(f"{path}: corrupt or truncated snapshot (invalid JSON: {exc})") from None
    if _depth_over(doc, MAX_DEPTH):
        raise SnapshotError(f"{path}: JSON nested over {MAX_DEPTH} levels deep: not a snapshot "
                            "Inspector wrote")
    if not isinstance(doc, dict) or doc.get("kind") != SNAPSHOT_KIND:
        raise SnapshotError(f"{path}: not an Inspector snapshot (no kind {SNAPSHOT_KIND!r})")
    version = doc.get("snapshot_version")
    if version not in READABLE_VERSIONS or isinstance(version, bool):
        newer = isinstance(version, int) and version > max(READABLE_VERSIONS)
        raise SnapshotError(
            f"{path}: snapshot version {version!r} "
            + ("is newer than this Inspector reads (upgrade Inspector)" if newer
               else f"is not supported (this Inspector reads {sorted(READABLE_VERSIONS)})"))
    if not isinstance(doc.get("report"), dict) or "sections" not in doc["report"]:
        raise SnapshotError(f"{path}: snapshot has no report (truncated or edited?)")
    if doc.get("probes") is None:
        doc["probes"] = []
    problem = _shape_problem(doc)
    if problem:
        raise SnapshotError(f"{path}: not a usable snapshot: {problem} (edited by hand?)")
    return doc


class _NonFinite(ValueError):
    pass


def _not_a_number(name: str):
    raise _NonFinite(f"{name} is not a number a snapshot holds")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):    # 1e400 parses as infinity
        raise _NonFinite(f"{text} is out of range")
    return value


def _depth_over(doc: Any, limit: int) -> bool:
    """Whether `doc` nests containers more than `limit` deep (iteratively: no recursion)."""
    stack = [(doc, 1)]
    while stack:
        node, depth = stack.pop()
        children: Iterable[Any]
        if isinstance(node, dict):
            children = node.values()
        elif isinstance(node, list):
            children = node
        else:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children
                     if isinstance(child, (dict, list)))
    return False


def _shape_problem(doc: dict) -> str | None:
    """What diff relies on, checked before it runs: an edited file is a clear error (exit 2),
    never a traceback whose exit status 1 reads 'regressions' to a runbook."""
    report = doc["report"]
    if not isinstance(report["sections"], dict):
        return "report.sections is not an object"
    if not isinstance(report.get("host", {}), dict):
        return "report.host is not an object"
    findings = report.get("findings", [])
    if not isinstance(findings, list) or not all(isinstance(f, dict) for f in findings):
        return "report.findings is not a list of objects"
    probes = doc.get("probes", [])
    if not isinstance(probes, list) or not all(isinstance(p, dict) for p in probes):
        return "probes is not a list of objects"
    for p in probes:
        if not isinstance(p.get("summary") or {}, dict):
            return f"probe {p.get('spec')!r}: summary is not an object"
    levels = [level.label for level in Level]
    for index, f in enumerate(findings):
        # an unknown level (5, "fatal") would rank as anything diff guesses: never a verdict
        if f.get("level", "ok") not in levels:
            return (f"finding {index + 1} ({f.get('code') or f.get('subject')!s:.60}): level "
                    f"{f.get('level')!r:.40} is not one of {', '.join(levels)}")
    for where, value in (("created_at", doc.get("created_at")),
                         ("report.host.collected_at", report.get("host", {}).get("collected_at"))):
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))
                                  or not 0 <= value <= LATEST_TIME):
            return f"{where} {value!r:.40} is not a time"
    return None
