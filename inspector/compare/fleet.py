"""A fleet at a glance from the snapshots (or captures) Ansible fetched: one row per host.

Layout: what `ansible -m fetch -a "src=... dest=DIR/"` writes, DIR/<host>/<path on the host>/
<file>; a file directly in DIR is a host of its own (flat=yes). Under a host, every file is
read: snapshots (`inspector snapshot`, through inspector.compare.snapshot.read_snapshot: regular files,
bounded, checked), and captures or sosreports (*.tar.gz, *.tgz, *.tar.xz), whose report is
built in a bounded child as `inspector report --root` would. The newest readable snapshot of a
host makes its row; a file that cannot be read (corrupt, truncated, foreign) is a row of its
own with the reason, so one bad file never hides the rest. Names starting with '.' (editor and
temporary files) are skipped.

Row figures come from inspector.outputs.metrics (drive health, md state, DNS failover delay), so the
fleet table and the Prometheus export agree; the level is the worst finding's (model.worst).
`compare` pairs two such directories host by host through inspector.compare.diff."""
from __future__ import annotations

import fnmatch
import os
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from typing import Any

from inspector.compare.snapshot import (
    MAX_SNAPSHOT_BYTES,
    SnapshotError,
    parse_snapshot,
    read_snapshot,
)
from inspector.model import Level, worst
from inspector.outputs.metrics import collect_metrics
from inspector.roots.bounded import TimedOut, Worker, WorkerFailed
from inspector.roots.input_files import READ_STALL_S, InputError, read_input

FLEET_SCHEMA_VERSION = 1
CAPTURE_SUFFIXES = (".tar.gz", ".tgz", ".tar.xz")
WHERE_KEYS = ("host", "virt", "code", "kernel")


class FleetError(Exception):
    """DIR itself cannot be used; one line."""


@dataclass
class FleetFile:
    host: str          # the directory under DIR (Ansible's inventory name), or the file's stem
    path: str          # to open
    rel: str           # as shown: relative to DIR


@dataclass
class HostRow:
    host: str
    file: str                          # relative to DIR
    error: str | None = None           # why the file could not be read (then nothing else)
    hostname: str | None = None
    kernel: str | None = None
    level: str = "unknown"             # worst finding: ok, warn, unknown, crit
    findings: int = 0                  # findings that are not OK
    worst: str = ""                    # the worst finding: "subject: message (code)"
    codes: list[str] = field(default_factory=list)        # of the findings that are not OK
    virt: str = ""                     # outermost first: "docker > kvm > hardware"
    virt_layers: list[str] = field(default_factory=list)  # verdicts and flavors, for --where
    drives: dict[str, str] = field(default_factory=dict)  # device -> health level
    md: dict[str, str] = field(default_factory=dict)      # array -> ok, degraded, rebuilding 9%
    nic_anomalies: list[str] = field(default_factory=list)  # "eth0 xen_tso"
    dns_failover_s: float | None = None  # a blackholed first nameserver's delay
    probes: list[dict] = field(default_factory=list)  # spec, p99_us, ops_per_s, error
    age_s: float | None = None         # since the snapshot was taken
    stale: bool = False                # older than `fleet --stale-after` (default 1 day)
    snapshots: int = 0                 # readable snapshots of this host (the newest is used)

    @property
    def severity(self) -> int:
        return Level[self.level.upper()].severity


def find_files(directory: str) -> list[FleetFile]:
    if not os.path.isdir(directory):
        raise FleetError(f"{directory}: not a directory (the fetch destination, "
                         "DIR/<host>/<path>/<file>)")
    try:
        entries = sorted(os.scandir(directory), key=lambda e: e.name)
    except OSError as exc:
        raise FleetError(f"{directory}: {exc.strerror or exc}") from None
    files: list[FleetFile] = []
    for entry in entries:
        if entry.name.startswith("."):
            continue
        if entry.is_dir(follow_symlinks=False):
            files += _host_files(entry.name, entry.path, directory)
        else:
            files.append(FleetFile(_stem(entry.name), entry.path, entry.name))
    return files


def _host_files(host: str, top: str, directory: str) -> Iterator[FleetFile]:
    errors: list[OSError] = []
    for dirpath, dirnames, filenames in os.walk(top, onerror=errors.append):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for name in sorted(filenames):
            if not name.startswith("."):
                path = os.path.join(dirpath, name)
                yield FleetFile(host, path, os.path.relpath(path, directory))
    for exc in errors:       # an unreadable directory is a row, not a crash
        yield FleetFile(host, exc.filename or top, os.path.relpath(exc.filename or top, directory))


def _stem(name: str) -> str:
    for suffix in (*CAPTURE_SUFFIXES, ".json"):
        if name.endswith(suffix):
            return name[:-len(suffix)]
    return name


def load(file: FleetFile, capture_timeout: float, files: BoundedFiles | None = None) -> dict:
    """The snapshot in `file`, or one built from a capture; SnapshotError otherwise. `files`
    reads the snapshot's bytes (in a child: a held read gives up); else this process does."""
    if file.path.endswith(CAPTURE_SUFFIXES):
        return _capture_snapshot(file.path, capture_timeout)
    if files is None:
        return read_snapshot(file.path, watched=False)
    return parse_snapshot(file.path, files.read(file.path))


class BoundedFiles:
    """The fleet directory's listing and its snapshots' bytes, read by one forked child that
    serves them all (a fork per file would triple the time of hundreds of files): a listing
    or a read the filesystem never answers is given up after READ_STALL_S without progress,
    as `diff` gives up on a snapshot. The other files of a directory where one hung are rows
    saying so, not 5 s each; other directories are still read."""

    def __init__(self) -> None:
        self._worker: Worker | None = None
        self.hung: dict[str, str] = {}     # directory -> its file that gave no answer

    def _call(self, request: tuple[str, str]) -> Any:
        what = request[1]
        directory = os.path.dirname(what)
        if directory in self.hung:
            raise SnapshotError(f"{what}: not read: its filesystem stopped answering "
                                f"({self.hung[directory]} gave no answer for "
                                f"{READ_STALL_S:g} s)")
        if self._worker is None:
            self._worker = Worker(_serve_files)
        try:
            reply = self._worker.call_while_progressing(request, READ_STALL_S)
        except TimedOut:
            self.hung[directory], self._worker = what, None
            raise SnapshotError(f"{what}: no progress reading it for {READ_STALL_S:g} s "
                                "(a hung filesystem? look for processes in D state)") from None
        except WorkerFailed as exc:
            self._worker = None
            raise SnapshotError(f"{what}: cannot be read ({exc})") from None
        if reply[0] == "refused":
            raise SnapshotError(reply[1])
        return reply[1]

    def list(self, directory: str) -> list[FleetFile]:
        try:
            return self._call(("list", directory))
        except SnapshotError as exc:
            raise FleetError(str(exc)) from None

    def read(self, path: str) -> bytes:
        return self._call(("read", path))

    def close(self) -> None:
        if self._worker is not None:
            self._worker.close()
            self._worker = None


def _serve_files(request: tuple[str, str]) -> tuple[str, Any]:
    """The child's side of BoundedFiles."""
    op, path = request
    try:
        if op == "list":
            return "ok", find_files(path)
        return "ok", read_input(path, MAX_SNAPSHOT_BYTES, "snapshot", watched=False)
    except (FleetError, InputError) as exc:
        return "refused", str(exc)


def _capture_snapshot(path: str, timeout: float) -> dict:
    from inspector.captures.capture import CaptureError, open_root
    from inspector.compare.snapshot import build_snapshot
    from inspector.report.collect import build_report_forked
    from inspector.roots import tempdirs
    try:
        root = open_root(path)
    except CaptureError as exc:
        raise SnapshotError(str(exc).removeprefix("--root ")) from None
    try:
        doc = build_snapshot(build_report_forked(root, timeout=timeout), [])
    finally:       # the unpacked tree goes now, not at exit: a fleet holds many captures
        unpacked = _unpacked_top(root.path)
        if unpacked:
            tempdirs.remove(unpacked)
    doc["created_at"] = doc["report"]["host"].get("collected_at") or doc["created_at"]
    return doc


def _unpacked_top(path: str) -> str | None:
    """The private temp directory a capture was unpacked into (a sosreport's root is a
    directory inside it)."""
    import tempfile
    base = os.path.realpath(tempfile.gettempdir())
    path = os.path.realpath(path)
    while os.path.dirname(path) not in (path, base):
        path = os.path.dirname(path)
    name = os.path.basename(path)
    return path if os.path.dirname(path) == base and name.startswith("inspector-root-") else None


def by_host(directory: str, files: BoundedFiles | None = None) -> dict[str, list[FleetFile]]:
    out: dict[str, list[FleetFile]] = {}
    for file in (files.list(directory) if files is not None else find_files(directory)):
        out.setdefault(file.host, []).append(file)
    return out


def read_fleet(directory: str, now: float | None = None,
               capture_timeout: float = 15.0) -> list[HostRow]:
    """One row per host (its newest readable snapshot), plus one per unreadable file. Each
    snapshot is made a row as soon as it is read: a fleet's snapshots are never all in memory.
    The listing and the reads are bounded (BoundedFiles)."""
    files = BoundedFiles()
    try:
        return _read_fleet(directory, files, time.time() if now is None else now,
                           capture_timeout)
    finally:
        files.close()


def _read_fleet(directory: str, reader: BoundedFiles, now: float,
                capture_timeout: float) -> list[HostRow]:
    rows: list[HostRow] = []
    for host, files in by_host(directory, reader).items():
        newest: tuple[float, HostRow] | None = None
        count = 0
        for file in files:
            try:
                doc = load(file, capture_timeout, reader)
            except SnapshotError as exc:
                rows.append(HostRow(host, file.rel, error=_relative(str(exc), file)))
                continue
            count += 1
            if newest is None or _created(doc) >= newest[0]:
                newest = (_created(doc), host_row(host, file.rel, doc, now))
        if newest is not None:
            newest[1].snapshots = count
            rows.append(newest[1])
    return rows


def _relative(message: str, file: FleetFile) -> str:
    """The reason without the file's absolute path (the row names the file already)."""
    return message.removeprefix(f"{file.path}: ").removeprefix(f"{file.path} ")


def _created(doc: dict) -> float:
    value = doc.get("created_at")
    return float(value) if isinstance(value, (int, float)) else 0.0


def host_row(host: str, rel: str, doc: dict, now: float) -> HostRow:
    report = doc["report"]
    info = report.get("host") or {}
    findings = [f for f in report.get("findings", []) if f.get("level", "ok") != "ok"]
    row = HostRow(host, rel, hostname=_text(info.get("hostname")),
                  kernel=_text(info.get("kernel")))
    if findings:
        levels = [Level[str(f.get("level")).upper()] for f in findings]
        top = max(zip(levels, range(len(findings))),
                  key=lambda pair: (pair[0].severity, -pair[1]))[1]
        f = findings[top]
        row.level = worst(levels).label
        row.worst = f"{f.get('subject')}: {f.get('message')}" + \
            (f" ({f['code']})" if f.get("code") else "")
    else:
        row.level = "ok"
    row.findings = len(findings)
    row.codes = sorted({str(f.get("code")) for f in findings if f.get("code")})
    row.nic_anomalies = [f"{f.get('subject')} {str(f.get('code'))[len('net.'):]}"
                         for f in findings if str(f.get("code") or "").startswith("net.")]
    _virt(row, report.get("sections", {}).get("virt"))
    _from_metrics(row, report)
    row.probes = [_probe(p) for p in doc.get("probes", []) if isinstance(p, dict)]
    created = _created(doc)
    row.age_s = round(now - created, 3) if created > 0 else None
    return row


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _virt(row: HostRow, virt: Any) -> None:
    if not isinstance(virt, dict):
        return
    row.virt = virt["summary"] if isinstance(virt.get("summary"), str) else ""
    for layer in virt.get("layers") or []:
        if isinstance(layer, dict):
            row.virt_layers += [str(layer[k]) for k in ("verdict", "flavor")
                                if isinstance(layer.get(k), str) and layer[k] != "none"]


def _from_metrics(row: HostRow, report: dict) -> None:
    md: dict[str, dict[str, float]] = {}
    for s in collect_metrics(report):
        if s.name == "drive_health_level":
            row.drives[s.labels["device"]] = ["ok", "warn", "crit", "unknown"][int(s.value)]
        elif s.name in ("md_degraded", "md_recovering", "md_sync_progress_ratio"):
            md.setdefault(s.labels["device"], {})[s.name] = s.value
        elif s.name == "resolver_first_server_loss_seconds":
            row.dns_failover_s = s.value
    for name, figures in md.items():
        if figures.get("md_recovering"):
            progress = figures.get("md_sync_progress_ratio")
            row.md[name] = "rebuilding" + (f" {progress:.0%}" if progress is not None else "")
        elif figures.get("md_degraded"):
            row.md[name] = "degraded"
        else:
            row.md[name] = "ok"


def _probe(run: dict) -> dict:
    summary = run["summary"] if isinstance(run.get("summary"), dict) else {}
    return {"spec": str(run.get("spec") or run.get("kind") or ""),
            "p99_us": summary.get("p99_us"), "ops_per_s": summary.get("ops_per_s"),
            "error": run.get("error")}


# ---------------------------------------------------------------------------- filters
def parse_where(values: list[str]) -> list[tuple[str, str]]:
    """KEY=PATTERN filters (all must match); ValueError with one line otherwise."""
    out = []
    for value in values:
        key, sep, pattern = value.partition("=")
        if not sep or key not in WHERE_KEYS or not pattern:
            raise ValueError(f"--where {value!r}: use KEY=PATTERN with KEY one of "
                             f"{', '.join(WHERE_KEYS)} (virt=xen, host='db*', code='md.*')")
        out.append((key, pattern))
    return out


def matches(row: HostRow, where: list[tuple[str, str]], level: str | None) -> bool:
    """`level`: the least severity shown (warn: warn, unknown and crit). An unreadable file
    is unknown; it matches a host pattern but no virt, code or kernel filter."""
    if level is not None and row.severity < Level[level.upper()].severity:
        return False
    return all(_match(row, key, pattern.lower()) for key, pattern in where)


def _match(row: HostRow, key: str, pattern: str) -> bool:
    if key == "host":
        names = [row.host, row.hostname or ""]
    elif key == "virt":
        names = [*row.virt_layers, row.virt]
    elif key == "code":
        names = row.codes
    else:
        names = [row.kernel or ""]
    return any(fnmatch.fnmatchcase(name.lower(), pattern) for name in names if name)


def worst_first(rows: list[HostRow]) -> list[HostRow]:
    return sorted(rows, key=lambda r: (-r.severity, -r.findings, r.host, r.file))


def summary(rows: list[HostRow]) -> dict[str, int]:
    """Hosts per level, and unreadable files."""
    out = {"hosts": len({r.host for r in rows if r.error is None}),
           **{level.label: 0 for level in sorted(Level, key=lambda lv: -lv.severity)},
           "unreadable_files": sum(r.error is not None for r in rows)}
    for row in rows:
        if row.error is None:
            out[row.level] += 1
    return out


def row_json(row: HostRow) -> dict:
    return asdict(row)


def mark_stale(rows: list[HostRow], older_than_s: float) -> int:
    """Mark the rows whose snapshot is older than `older_than_s` (a host that stopped sending
    them: its row is yesterday's news); how many."""
    for row in rows:
        row.stale = row.age_s is not None and row.age_s > older_than_s
    return sum(row.stale for row in rows)


def hosts_per_code(rows: list[HostRow]) -> dict[str, int]:
    """Finding code -> how many hosts have it (not OK), most hosts first."""
    counts: dict[str, int] = {}
    for row in rows:
        for code in row.codes:
            counts[code] = counts.get(code, 0) + 1
    return dict(sorted(counts.items(), key=lambda item: (-item[1], item[0])))


# ---------------------------------------------------------------------------- compare
@dataclass
class Regressed:
    """One regression of a host, as data: the model's field (a dotted path, as `diff --json`
    names it), its values before and after (as the snapshots hold them: numbers, strings,
    records, {"unknown": reason}), and their unit."""
    field: str
    before: Any
    after: Any
    unit: str                       # us, s, %, B, B/s, 1/s, KiB; "" for a count or text
    kind: str                       # changed, added, removed, worse, regression ...


@dataclass
class HostDiff:
    host: str
    before: str | None              # files, relative to their directories
    after: str | None
    regressions: int = 0
    changes: int = 0
    notes: list[str] = field(default_factory=list)   # the regressions, one line each, for people
    regressed: list[Regressed] = field(default_factory=list)   # the same, as data
    error: str | None = None        # could not compare: a file unreadable, or missing

    @property
    def status(self) -> int:
        """As `inspector diff`: 1 regressions, 2 not compared, 0 neither."""
        return 1 if self.regressions else 2 if self.error else 0


def newest_snapshot(files: list[FleetFile], capture_timeout: float,
                    reader: BoundedFiles | None = None) -> tuple[str, dict | str]:
    """(file, its snapshot) for the newest readable one, else (file, why it could not be read)."""
    best: tuple[str, dict | str] | None = None
    for file in files:
        try:
            doc: dict | str = load(file, capture_timeout, reader)
        except SnapshotError as exc:
            doc = _relative(str(exc), file)
        if best is None or (isinstance(doc, dict) and (
                isinstance(best[1], str) or _created(doc) >= _created(best[1]))):
            best = (file.rel, doc)
    assert best is not None
    return best


def compare(before_dir: str, after_dir: str, capture_timeout: float = 15.0) -> list[HostDiff]:
    reader = BoundedFiles()     # the listings and reads bounded, as for one directory
    try:
        return _compare(before_dir, after_dir, capture_timeout, reader)
    finally:
        reader.close()


def _compare(before_dir: str, after_dir: str, capture_timeout: float,
             reader: BoundedFiles) -> list[HostDiff]:
    from inspector.compare.diff import diff_snapshots
    from inspector.compare.diff_text import change_text, display_path
    from inspector.text.escapes import visible
    before, after = by_host(before_dir, reader), by_host(after_dir, reader)
    out = []
    for host in sorted(set(before) | set(after)):    # two snapshots in memory at a time
        bfile, bdoc = newest_snapshot(before[host], capture_timeout, reader) \
            if host in before else (None, None)
        afile, adoc = newest_snapshot(after[host], capture_timeout, reader) \
            if host in after else (None, None)
        row = HostDiff(host, bfile, afile)
        if adoc is None:
            row.error = "no snapshot in AFTER (the host did not come back, or fetch failed?)"
        elif bdoc is None:
            row.error = "no snapshot in BEFORE: nothing to compare with"
        elif isinstance(bdoc, str) or isinstance(adoc, str):
            row.error = "; ".join(f"{side}: {doc}" for side, doc in
                                  (("BEFORE", bdoc), ("AFTER", adoc)) if isinstance(doc, str))
        else:
            try:
                result = diff_snapshots(bdoc, adoc, bfile or "", afile or "")
            except Exception as exc:   # a shape read_snapshot did not foresee: not compared
                row.error = f"cannot compare: {type(exc).__name__}: {exc}"
            else:
                row.changes = len(result.changes)
                row.regressions = len(result.regressions)
                row.notes = [visible("  ".join(p for p in (display_path(c), change_text(c),
                                                           c.note) if p))
                             for c in result.regressions]
                row.regressed = [Regressed(c.path, c.before, c.after, unit_of(c.path), c.kind)
                                 for c in result.regressions]
        out.append(row)
    return out


# a field's unit from its name's suffix, as `diff` prints them (inspector.compare.diff_text)
UNIT_SUFFIXES = (("bytes_per_s", "B/s"), ("_per_s", "1/s"), ("_us", "us"), ("_seconds", "s"),
                 ("_s", "s"), ("_pct", "%"), ("_percent", "%"), ("_kib", "KiB"),
                 ("bytes", "B"), ("_celsius", "Cel"), ("_c", "Cel"))


def unit_of(path: str) -> str:
    key = path.rsplit(".", 1)[-1]
    return next((unit for suffix, unit in UNIT_SUFFIXES if key.endswith(suffix)), "")


def compare_status(rows: list[HostDiff]) -> int:
    """diff's rule over the fleet: 1 when a host regressed, else 2 when a host could not be
    compared, else 0."""
    statuses = {row.status for row in rows}
    return 1 if 1 in statuses else 2 if 2 in statuses or not rows else 0


def worst_diffs_first(rows: list[HostDiff]) -> list[HostDiff]:
    order = {1: 0, 2: 1, 0: 2}
    return sorted(rows, key=lambda r: (order[r.status], -r.regressions, -r.changes, r.host))
