"""Snapshots: the full report model plus short bounded probe runs, in one JSON file.

Written atomically (temp file in the same directory, fsync, rename, fsync of the directory) so a
maintenance runbook never diffs a half-written file. Reading checks the kind and the schema
version and says clearly what is wrong with a file it refuses.
"""
from __future__ import annotations

import json
import os
import socket
import tempfile
import time
from typing import Any

from inspector.model import SCHEMA_VERSION, Report, to_jsonable

SNAPSHOT_KIND = "inspector-snapshot"
SNAPSHOT_VERSION = 1
# Snapshot versions this Inspector can read (older ones are upgraded on load when they appear).
READABLE_VERSIONS = {1}


class SnapshotError(Exception):
    pass


def build_snapshot(report: Report, probes: list[dict]) -> dict[str, Any]:
    return {
        "kind": SNAPSHOT_KIND,
        "snapshot_version": SNAPSHOT_VERSION,
        "schema_version": SCHEMA_VERSION,
        "created_at": time.time(),
        "report": to_jsonable(report),
        "probes": probes,
    }


def default_name(hostname: str | None = None, when: float | None = None) -> str:
    host = (hostname or socket.gethostname()).replace("/", "_")
    return time.strftime(f"inspector-{host}-%Y%m%dT%H%M%S.json", time.localtime(when))


def write_atomic(path: str, data: bytes) -> None:
    directory = os.path.dirname(os.path.abspath(path)) or "."
    fd, tmp = tempfile.mkstemp(prefix=".inspector-", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    try:  # make the rename itself durable
        dfd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)
    except OSError:
        pass


def write_snapshot(doc: dict, path: str) -> None:
    write_atomic(path, (json.dumps(doc, indent=1, sort_keys=False) + "\n").encode())


def read_snapshot(path: str) -> dict:
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except OSError as exc:
        raise SnapshotError(f"{path}: {exc.strerror or exc}") from None
    if not raw.strip():
        raise SnapshotError(f"{path}: empty file, not a snapshot")
    try:
        doc = json.loads(raw)
    except ValueError as exc:
        raise SnapshotError(f"{path}: corrupt or truncated snapshot (invalid JSON: {exc})") from None
    if not isinstance(doc, dict) or doc.get("kind") != SNAPSHOT_KIND:
        raise SnapshotError(f"{path}: not an Inspector snapshot (no kind {SNAPSHOT_KIND!r})")
    version = doc.get("snapshot_version")
    if version not in READABLE_VERSIONS:
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
    return None
