"""What changed between two snapshots, and which changes are regressions.

The model is compared structurally: lists of records are matched by their identity field (a
device by name, a NIC by name, a finding by code and subject), so a reordered list is no change.
Counters that move on their own (byte counts, load, timings) are ignored. Regressions are:
new or worsened findings, block devices that disappeared, flash wear counters that got worse,
and probe latency that rose beyond the run-to-run spread. Everything else is a change to read.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

# Keys whose values change between any two runs of the same host: never a "change".
VOLATILE_KEYS = {
    "timings", "stats", "loadavg", "stat_cpu", "carrier_changes", "captured_at", "collected_at", "created_at", "source", "load_average", "uptime", "statistics",
    "rx_bytes", "tx_bytes", "rx_packets", "tx_packets", "cpu_times", "steal_percent",
    "cur_freq_khz", "cur_freq_mhz", "frequency_mhz", "duration", "volatile", "run_time",
    "total_io", "power_on_hours", "temperature", "temperature_c", "temp_c", "max_temperature_c",
    "physical_bytes_written", "physical_bytes_read", "data_units_read", "data_units_written",
    "ram_usage", "sync_completed", "sync_progress", "sync_speed_kps", "sync_eta_s", "progress",
    "speed", "eta", "iowait_percent", "context_switches", "interrupts",
}
IDENTITY_KEYS = ("name", "ifname", "device", "address", "code_subject", "id", "path", "key", "slot")
# Flash wear fields where a lower (or higher) value is worse.
# (Field names of inspector.discover.hio / fio_status / nvme_health / smart / md.)
WORSE_WHEN_LOWER = {"reserves_pct", "pbw_remaining_pct", "available_spare_pct"}
WORSE_WHEN_HIGHER = {"max_bad_block_rate_pct", "percent_used", "media_errors", "rw_error",
                     "io_timeout", "max_bit_flip", "error_log_entries", "grown_defects",
                     "mismatch_cnt", "degraded", "raw"}
LEVEL_RANK = {"ok": 0, "unknown": 1, "warn": 2, "crit": 3}


@dataclass
class Change:
    category: str        # storage, virt, net, dns, cpu, findings, probes, host
    path: str            # dotted path in the model
    before: Any
    after: Any
    kind: str = "changed"   # changed | added | removed | worse | better | regression
    regression: bool = False
    note: str = ""


@dataclass
class DiffResult:
    before: str
    after: str
    changes: list[Change] = field(default_factory=list)

    @property
    def regressions(self) -> list[Change]:
        return [c for c in self.changes if c.regression]


def _identity(item: Any) -> str | None:
    if not isinstance(item, dict):
        return None
    if "code" in item and "subject" in item:
        return f"{item['code'] or item.get('message')}@{item['subject']}"
    for key in IDENTITY_KEYS:
        value = item.get(key)
        if isinstance(value, (str, int)) and not isinstance(value, bool):
            return f"{key}={value}"
    return None


def _walk(before: Any, after: Any, path: str, out: list[tuple[str, Any, Any, str]]) -> None:
    if isinstance(before, dict) and isinstance(after, dict):
        if set(before) == {"unknown"} or set(after) == {"unknown"}:
            if before != after:
                out.append((path, before, after, "changed"))
            return
        for key in list(before) + [k for k in after if k not in before]:
            if key in VOLATILE_KEYS:
                continue
            sub = f"{path}.{key}" if path else str(key)
            if key not in after:
                out.append((sub, before[key], None, "removed"))
            elif key not in before:
                out.append((sub, None, after[key], "added"))
            else:
                _walk(before[key], after[key], sub, out)
        return
    if isinstance(before, list) and isinstance(after, list):
        ids_b = [_identity(i) for i in before]
        ids_a = [_identity(i) for i in after]
        if before and after and all(ids_b) and all(ids_a) and len(set(ids_b)) == len(ids_b) \
                and len(set(ids_a)) == len(ids_a):
            map_b, map_a = dict(zip(ids_b, before)), dict(zip(ids_a, after))
            for ident in ids_b + [i for i in ids_a if i not in map_b]:
                sub = f"{path}[{ident}]"
                if ident not in map_a:
                    out.append((sub, map_b[ident], None, "removed"))
                elif ident not in map_b:
                    out.append((sub, None, map_a[ident], "added"))
                else:
                    _walk(map_b[ident], map_a[ident], sub, out)
            return
        if _strip(before) != _strip(after):
            out.append((path, before, after, "changed"))
        return
    if before != after and not (_is_num(before) and _is_num(after) and math.isclose(before, after)):
        out.append((path, before, after, "changed"))


def _strip(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {k: _strip(v) for k, v in obj.items() if k not in VOLATILE_KEYS}
    if isinstance(obj, list):
        return [_strip(v) for v in obj]
    return obj


def _is_num(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _is_device_entry(path: str) -> bool:
    """storage.devices.sdb (devices keyed by name) or storage.devices[name=sdb] (a list)."""
    if path.startswith("storage.devices[") and path.endswith("]") and path.count("[") == 1:
        return True
    return path.startswith("storage.devices.") and "." not in path[len("storage.devices."):]


def _last_key(path: str) -> str:
    tail = path.rsplit(".", 1)[-1]
    return tail.split("[", 1)[0]


def diff_sections(before: dict, after: dict) -> list[Change]:
    changes: list[Change] = []
    names = list(before) + [n for n in after if n not in before]
    for name in names:
        raw: list[tuple[str, Any, Any, str]] = []
        _walk(before.get(name), after.get(name), name, raw)
        for path, b, a, kind in raw:
            change = Change(category=name, path=path, before=b, after=a, kind=kind)
            key = _last_key(path)
            if name == "storage" and kind == "removed" and _is_device_entry(path):
                change.regression, change.note = True, "block device disappeared"
            elif _is_num(b) and _is_num(a) and key in WORSE_WHEN_LOWER | WORSE_WHEN_HIGHER:
                worse = a < b if key in WORSE_WHEN_LOWER else a > b
                change.kind = "worse" if worse else "better"
                change.regression = worse
                if worse:
                    change.note = f"{key} went from {b} to {a}"
            changes.append(change)
    return changes


def diff_findings(before: list[dict], after: list[dict]) -> list[Change]:
    def key(f: dict) -> str:
        return f"{f.get('code') or f.get('message')}@{f.get('subject')}"
    b = {key(f): f for f in before}
    a = {key(f): f for f in after}
    changes = []
    for k, f in a.items():
        level = f.get("level", "ok")
        if k not in b:
            bad = LEVEL_RANK.get(level, 0) >= LEVEL_RANK["warn"]
            changes.append(Change("findings", k, None, f, "added", bad,
                                  f"new {level}: {f.get('subject')}: {f.get('message')}"))
        elif LEVEL_RANK.get(level, 0) != LEVEL_RANK.get(b[k].get("level"), 0):
            worse = LEVEL_RANK.get(level, 0) > LEVEL_RANK.get(b[k].get("level"), 0)
            changes.append(Change("findings", k, b[k], f, "worse" if worse else "better", worse,
                                  f"{b[k].get('level')} -> {level}: {f.get('message')}"))
    for k, f in b.items():
        if k not in a:
            changes.append(Change("findings", k, f, None, "removed", False,
                                  f"resolved: {f.get('subject')}: {f.get('message')}"))
    return changes


def _probe_key(p: dict) -> str:
    return p.get("spec") or f"{p.get('kind')}:{p.get('target')}"


def latency_significance(before: dict, after: dict, metric: str = "p99_us") -> tuple[bool, str]:
    """Is the latency change beyond the run-to-run spread?

    Each probe summary carries per-interval values of the metric (`intervals`); the change is
    significant when it exceeds 10% AND twice the larger of the two runs' interval standard
    deviations (a rough two-sigma rule that needs no distribution assumption beyond spread).
    Without interval data, only changes over 25% count."""
    b, a = before.get(metric), after.get(metric)
    if not (_is_num(b) and _is_num(a)) or b <= 0:
        return False, "no comparable latency"
    rel = (a - b) / b

    def spread(doc: dict) -> float | None:
        vals = [v for v in doc.get("intervals", {}).get(metric, []) if _is_num(v)]
        if len(vals) < 2:
            return None
        m = sum(vals) / len(vals)
        return math.sqrt(sum((v - m) ** 2 for v in vals) / (len(vals) - 1))

    sb, sa = spread(before), spread(after)
    if sb is None or sa is None:
        return rel > 0.25, f"{metric} {b:.0f} -> {a:.0f} us ({rel:+.0%}; no interval spread, 25% rule)"
    noise = 2 * max(sb, sa)
    significant = rel > 0.10 and (a - b) > noise
    return significant, (f"{metric} {b:.0f} -> {a:.0f} us ({rel:+.0%}; run-to-run spread "
                         f"±{max(sb, sa):.0f} us)")


def diff_probes(before: list[dict], after: list[dict]) -> list[Change]:
    b = {_probe_key(p): p for p in before}
    a = {_probe_key(p): p for p in after}
    changes = []
    for k in b.keys() & a.keys():
        pb, pa = b[k].get("summary") or {}, a[k].get("summary") or {}
        if b[k].get("error") != a[k].get("error"):
            bad = bool(a[k].get("error"))
            changes.append(Change("probes", k, b[k].get("error"), a[k].get("error"),
                                  "worse" if bad else "better", bad,
                                  f"probe error: {a[k].get('error') or 'none now'}"))
            continue
        for metric in ("p99_us", "avg_us"):
            significant, note = latency_significance(pb, pa, metric)
            if _is_num(pb.get(metric)) and _is_num(pa.get(metric)) and pb[metric] != pa[metric]:
                worse = significant and pa[metric] > pb[metric]
                better = latency_significance(pa, pb, metric)[0] and pa[metric] < pb[metric]
                if worse or better:
                    changes.append(Change("probes", f"{k}.{metric}", pb[metric], pa[metric],
                                          "worse" if worse else "better", worse, note))
    for k in a.keys() - b.keys():
        changes.append(Change("probes", k, None, a[k].get("summary"), "added"))
    for k in b.keys() - a.keys():
        changes.append(Change("probes", k, b[k].get("summary"), None, "removed"))
    return changes


def diff_snapshots(before: dict, after: dict, before_name: str = "before",
                   after_name: str = "after") -> DiffResult:
    rb, ra = before["report"], after["report"]
    result = DiffResult(before_name, after_name)
    hb, ha = rb.get("host", {}), ra.get("host", {})
    for key in ("hostname", "kernel", "machine"):
        if hb.get(key) != ha.get(key):
            result.changes.append(Change("host", f"host.{key}", hb.get(key), ha.get(key)))
    result.changes += diff_findings(rb.get("findings", []), ra.get("findings", []))
    result.changes += diff_sections(rb.get("sections", {}), ra.get("sections", {}))
    result.changes += diff_probes(before.get("probes", []), after.get("probes", []))
    return result
