"""What changed between two snapshots, and which changes are regressions.

The model is compared structurally: lists of records are matched by their identity field (a
device by name, a NIC by name, a finding by code and subject), so a reordered list is no change.
Counters that move on their own (byte counts, load, timings) are ignored. Regressions are:
new or worsened findings, block devices that disappeared, NICs that were up and are now down
or gone, flash wear counters that got worse, and probe latency that rose beyond the run-to-run
spread. Everything else is a change to read.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from typing_extensions import TypeIs

# Keys whose values change between any two runs of the same host: never a "change".
VOLATILE_KEYS = {
    "timings", "stats", "loadavg", "stat_cpu", "carrier_changes", "captured_at", "collected_at",
    "created_at", "source", "load_average", "uptime", "statistics",
    "rx_bytes", "tx_bytes", "rx_packets", "tx_packets", "cpu_times", "steal_percent",
    "cur_freq_khz", "cur_freq_mhz", "frequency_mhz", "duration", "volatile", "run_time",
    "total_io", "power_on_hours", "temperature", "temperature_c", "temp_c", "max_temperature_c",
    "physical_bytes_written", "physical_bytes_read", "data_units_read", "data_units_written",
    "ram_usage", "sync_completed", "sync_progress", "sync_speed_kps", "sync_eta_s", "progress",
    "speed", "eta", "iowait_percent", "context_switches", "interrupts",
    # the tool output lines behind parsed fields: their change shows in the fields themselves
    "evidence", "lines",
}
# Model dicts keyed by a record's identity: their keys are shown as [name=KEY] in change paths, so
# a path says which device or NIC it is about (storage.health[device=hioa].reserves_pct).
KEYED_COLLECTIONS = {"storage.devices": "name", "storage.md": "name", "storage.dm": "name",
                     "storage.health": "device", "storage.mdstat.arrays": "name",
                     "net.nics": "name"}
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
            sub = _child_path(path, str(key))
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


def _child_path(path: str, key: str) -> str:
    """parent.key, or parent[name=key] inside a collection keyed by identity, or parent[key]
    when the key itself has dots (sysctl names) so the path stays unambiguous."""
    if not path:
        return key
    identity = KEYED_COLLECTIONS.get(path)
    if identity:
        return f"{path}[{identity}={key}]"
    if "." in key or " " in key:
        return f"{path}[{key}]"
    return f"{path}.{key}"


def _strip(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {k: _strip(v) for k, v in obj.items() if k not in VOLATILE_KEYS}
    if isinstance(obj, list):
        return [_strip(v) for v in obj]
    return obj


def _is_num(v: Any) -> TypeIs[int | float]:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _is_device_entry(path: str) -> bool:
    """storage.devices[name=sdb] (devices keyed by name, or a list matched by name)."""
    return path.startswith("storage.devices[") and path.endswith("]") and path.count("[") == 1


def _is_nic_entry(path: str) -> bool:
    """net.nics[name=eth0] (the NIC itself, not one of its fields)."""
    return path.startswith("net.nics[") and path.endswith("]") and path.count("[") == 1


def _nic_was_up(nic: Any) -> bool:
    """An up NIC whose going away matters: not a plain software interface (kind "virtual":
    a container's veth, a VPN's tun), which comes and goes with what created it (every
    restarted container renames its veth); bonds, VLANs, bridges and real NICs count."""
    return isinstance(nic, dict) and nic.get("operstate") == "up" \
        and nic.get("kind") != "virtual"


def _last_key(path: str) -> str:
    """The last plain key of a path (identities in brackets may contain dots)."""
    return re.sub(r"\[[^\]]*\]", "", path).rsplit(".", 1)[-1]


def _known_level(value: Any) -> bool:
    return isinstance(value, str) and value in LEVEL_RANK


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
            elif name == "net" and kind == "removed" and _is_nic_entry(path) and _nic_was_up(b):
                # the bond slave or VLAN that did not come back after the reboot
                change.regression, change.note = True, "NIC that was up disappeared"
            elif name == "net" and key == "operstate" and _is_nic_entry(path[:-len(".operstate")]) \
                    and b == "up" and a != "up":
                change.kind, change.regression = "worse", True
                change.note = f"NIC was up, now {a if isinstance(a, str) else 'unknown'}"
            elif name == "net" and key == "operstate" and _is_nic_entry(path[:-len(".operstate")]) \
                    and a == "up":
                change.kind = "better"
            elif path.startswith("storage.health[") and key == "level" \
                    and _known_level(b) and _known_level(a):     # an unknown word: no verdict
                worse = LEVEL_RANK.get(a, 1) > LEVEL_RANK.get(b, 1)
                change.kind, change.regression = ("worse" if worse else "better"), worse
                change.note = f"drive health {b} -> {a}"
            elif _is_num(b) and _is_num(a) and key in WORSE_WHEN_LOWER | WORSE_WHEN_HIGHER:
                worse = a < b if key in WORSE_WHEN_LOWER else a > b
                change.kind = "worse" if worse else "better"
                change.regression = worse
                if worse:
                    change.note = ("fell; lower is worse" if key in WORSE_WHEN_LOWER
                                   else "rose; higher is worse")
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
        elif LEVEL_RANK.get(level, 0) != LEVEL_RANK.get(b[k].get("level", "ok"), 0):
            worse = LEVEL_RANK.get(level, 0) > LEVEL_RANK.get(b[k].get("level", "ok"), 0)
            changes.append(Change("findings", k, b[k], f, "worse" if worse else "better", worse,
                                  f"{b[k].get('level')} -> {level}: {f.get('message')}"))
    for k, f in b.items():
        if k not in a:
            changes.append(Change("findings", k, f, None, "removed", False,
                                  f"resolved: {f.get('subject')}: {f.get('message')}"))
    return changes


def _probe_key(p: dict) -> str:
    return p.get("spec") or f"{p.get('kind')}:{p.get('target')}"


SINGLE_SAMPLE_NOTE = "changed (single sample, not judged)"
# Without per-interval spread a latency change is only mentioned (never judged) beyond this.
UNJUDGED_MENTION = 0.25


def _interval_values(doc: dict, metric: str) -> list[float]:
    intervals = doc.get("intervals")
    return [v for v in (intervals.get(metric, []) if isinstance(intervals, dict) else [])
            if _is_num(v)]


def _interval_spread(doc: dict, metric: str) -> float | None:
    """Standard deviation of the per-interval values of a metric; None with fewer than 2."""
    vals = _interval_values(doc, metric)
    if len(vals) < 2:
        return None
    m = sum(vals) / len(vals)
    return math.sqrt(sum((v - m) ** 2 for v in vals) / (len(vals) - 1))


RANK_P = 0.01        # one-sided rank-test level for "the after intervals are consistently higher"
_EXACT_RANK_MAX = 100  # exact rank distribution up to this many intervals in all


def rank_test_p(before: list[float], after: list[float]) -> float:
    """One-sided Mann-Whitney rank test: the probability, with no change at all, of the after
    run's intervals ranking at least this far above the before run's.

    Tied values share their mid-rank, and the null distribution is the exact permutation
    distribution of the after run's mid-rank sum given those ties (every choice of which m of
    the pooled values are "after" equally likely). Ignoring ties made the test too eager on
    heavily tied intervals (p 0.0083 where the permutation count gives 0.0167). Exact up to
    _EXACT_RANK_MAX intervals in all, then the normal approximation with the tie-corrected
    variance and a continuity correction."""
    m, n = len(after), len(before)
    if not m or not n:
        return 1.0
    pooled = sorted([(v, 1) for v in after] + [(v, 0) for v in before])
    groups: list[tuple[int, int]] = []      # (size, doubled mid-rank) of each run of ties
    observed = 0                            # the after run's doubled mid-rank sum
    start = 0
    while start < len(pooled):
        end = start
        while end < len(pooled) and pooled[end][0] == pooled[start][0]:
            end += 1
        size, doubled = end - start, start + end + 1     # 2 * mean of ranks start+1 .. end
        groups.append((size, doubled))
        observed += doubled * sum(is_after for _, is_after in pooled[start:end])
        start = end
    big_n = m + n
    if big_n <= _EXACT_RANK_MAX:
        if len(groups) == big_n:
            return _untied_tail(m, n, (observed - m * (m + 1)) // 2)
        return _tied_tail(m, groups, observed) / math.comb(big_n, m)
    u = observed / 2 - m * (m + 1) / 2
    ties = sum(t ** 3 - t for t, _ in groups)
    var = m * n / 12 * ((big_n + 1) - ties / (big_n * (big_n - 1)))
    if var <= 0:                            # every value equal: no evidence either way
        return 1.0
    z = (u - m * n / 2 - 0.5) / math.sqrt(var)
    return 0.5 * math.erfc(z / math.sqrt(2))


def _untied_tail(m: int, n: int, u: int) -> float:
    """P(U >= u) without ties: coefficients of the Gaussian binomial [m+n choose m]_q count
    the orderings that give each U."""
    poly = [1] + [0] * (m * n)
    for i in range(1, m + 1):
        for k in range(m * n, n + i - 1, -1):        # * (1 - q^(n+i))
            poly[k] -= poly[k - n - i]
        for k in range(i, m * n + 1):                 # / (1 - q^i)
            poly[k] += poly[k - i]
    return sum(poly[max(u, 0):]) / math.comb(m + n, m)


def _tied_tail(m: int, groups: list[tuple[int, int]], observed: int) -> int:
    """How many of the C(N, m) choices of m pooled values give a doubled mid-rank sum of at
    least `observed`. A polynomial in q per number chosen, packed into one integer (a slot of
    `width` bits per power of q, wide enough for any count), so each tie group is a few
    big-integer shifts and adds instead of a loop over every reachable sum."""
    big_n = sum(t for t, _ in groups)
    width = 8 * ((big_n + 8) // 8)                   # counts < 2^N; whole bytes per slot
    dist = [1] + [0] * m                             # dist[j]: sums over choices of j values
    seen = 0
    for size, doubled in groups:
        seen += size
        for j in range(min(m, seen), 0, -1):         # descending: dist[j - k] is still old
            acc = dist[j]
            for k in range(1, min(size, j) + 1):
                if dist[j - k]:
                    acc += math.comb(size, k) * (dist[j - k] << (k * doubled * width))
            dist[j] = acc
    tail = dist[m] >> (observed * width)
    slot = width // 8
    data = tail.to_bytes((tail.bit_length() + 7) // 8 + slot, "little")
    return sum(int.from_bytes(data[i:i + slot], "little") for i in range(0, len(data), slot))


def latency_significance(before: dict, after: dict, metric: str = "p99_us") -> tuple[bool, str]:
    return _significance(before, after, metric, lower=False)


def _significance(before: dict, after: dict, metric: str, lower: bool) -> tuple[bool, str]:
    """Is the latency change beyond the run-to-run spread?

    Each probe summary carries per-interval values of the metric (`intervals`). The change must
    exceed 10%, AND either exceed twice the larger of the two runs' interval standard deviations
    (a rough two-sigma rule), or the after run's intervals must rank consistently above the
    before run's (one-sided Mann-Whitney rank test, p < 0.01). The rank test is what catches a
    regression that is also noisy: a disk under load makes every interval slower AND the
    intervals spread, and the spread alone then hid a 13x slower p99.
    A run without per-interval spread (one measurement, e.g. the dns probe) is evidence of
    nothing: its change is never significant, and the note says it was not judged."""
    b, a = before.get(metric), after.get(metric)
    if not (_is_num(b) and _is_num(a)) or b <= 0 or (lower and a <= 0):
        return False, "no comparable latency"
    rel = (a - b) / b
    shown = rel
    if lower:     # is after significantly LOWER than before? the same rule, mirrored
        before, after, b, a, rel = after, before, a, b, (b - a) / a
    sb, sa = _interval_spread(before, metric), _interval_spread(after, metric)
    if sb is None or sa is None:
        return False, (f"{metric} {_fmt_us(before[metric])} -> {_fmt_us(after[metric])} "
                       f"({rel:+.0%}); {SINGLE_SAMPLE_NOTE}")
    noise = 2 * max(sb, sa)
    if rel > 0.10 and (a - b) > noise:
        return True, f"{shown:+.0%}, beyond the run-to-run spread ±{_fmt_us(max(sb, sa))}"
    vb, va = _interval_values(before, metric), _interval_values(after, metric)
    p = rank_test_p(vb, va)
    if rel > 0.10 and p < RANK_P:
        if lower:
            beyond = sum(v < min(va) for v in vb)     # (swapped: vb is the after run)
            where = f"{beyond} of {len(vb)} below the before run's fastest"
        else:
            beyond = sum(v > max(vb) for v in va)
            where = f"{beyond} of {len(va)} above the before run's slowest"
        return True, (f"{shown:+.0%}, beyond the run-to-run spread: intervals consistently "
                      f"{'lower' if lower else 'higher'} ({where}; rank test p={p:.1g})")
    return False, f"{shown:+.0%}, within the run-to-run spread ±{_fmt_us(max(sb, sa))}"


def _fmt_us(us: float) -> str:
    return f"{us / 1000:.2f} ms" if us >= 1000 else f"{us:.0f} us"


def probe_path(spec: str, metric: str | None = None) -> str:
    return f"probes[{spec}]" + (f".{metric}" if metric else "")


def diff_probes(before: list[dict], after: list[dict]) -> list[Change]:
    b = {_probe_key(p): p for p in before}
    a = {_probe_key(p): p for p in after}
    changes = []
    for k in [k for k in b if k in a]:
        pb, pa = b[k].get("summary") or {}, a[k].get("summary") or {}
        if b[k].get("error") != a[k].get("error"):
            eb, ea = b[k].get("error"), a[k].get("error")
            if eb and ea:      # failed before and after, in other words: nothing got worse
                changes.append(Change("probes", probe_path(k), eb, ea, "changed", False,
                                      "probe failed before and after"))
                continue
            bad = bool(ea)
            changes.append(Change("probes", probe_path(k), eb, ea,
                                  "worse" if bad else "better", bad,
                                  f"probe error: {ea or 'none now'}"))
            continue
        for metric in ("p99_us", "avg_us"):
            vb, va = pb.get(metric), pa.get(metric)
            if not (_is_num(vb) and _is_num(va)) or vb == va or vb <= 0:
                continue
            judged = (_interval_spread(pb, metric) is not None
                      and _interval_spread(pa, metric) is not None)
            if not judged:
                if abs(va - vb) / vb > UNJUDGED_MENTION:
                    changes.append(Change("probes", probe_path(k, metric), vb, va, "changed",
                                          False, SINGLE_SAMPLE_NOTE))
                continue
            significant, note = latency_significance(pb, pa, metric)
            worse = significant and va > vb
            better_sig, better_note = _significance(pb, pa, metric, lower=True)
            better = better_sig and va < vb
            if worse or better:
                changes.append(Change("probes", probe_path(k, metric), vb, va,
                                      "worse" if worse else "better", worse,
                                      note if worse else better_note))
            elif abs(va - vb) / vb > UNJUDGED_MENTION:
                # judged and not significant, but large: said, never silently dropped
                changes.append(Change("probes", probe_path(k, metric), vb, va, "changed", False,
                                      note if va > vb else better_note))
    for k in [k for k in a if k not in b]:
        changes.append(Change("probes", probe_path(k), None, a[k].get("summary"), "added",
                              note=_failed_note(a[k])))
    for k in [k for k in b if k not in a]:
        changes.append(Change("probes", probe_path(k), b[k].get("summary"), None, "removed",
                              note=_failed_note(b[k])))
    return changes


def _failed_note(run: dict) -> str:
    """A probe run that failed says why (its summary alone is empty or zeros)."""
    error = str(run.get("error") or "")
    if not error:
        return ""
    return f"probe {error}" if error.lower().startswith("failed") else f"probe failed: {error}"


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
