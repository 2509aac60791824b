"""/proc/pressure/{cpu,memory,io}: pressure stall information (PSI), kernel 4.20+.

"some" is the share of wall time in which at least one task stalled on the resource, "full"
the share in which all non-idle tasks did at once (Documentation/accounting/psi.rst). The
kernel keeps running averages over 10, 60 and 300 s, so one read gives a figure: no rate.
A kernel without CONFIG_PSI, or booted with psi=0, has no such files (or refuses the read).
"""
from __future__ import annotations

from dataclasses import dataclass

from inspector.model import Unknown
from inspector.roots.host import HostRoot, Unavailable

RESOURCES = ("cpu", "memory", "io")


@dataclass(slots=True)
class Pressure:
    """One resource's stall shares in percent (avg10/avg60 of the "some" and "full" lines)."""
    resource: str
    some_avg10: float
    some_avg60: float
    full_avg10: float | None      # None: no "full" line (cpu before 5.13)
    full_avg60: float | None
    # microseconds stalled since boot: a share over any interval, sooner than avg10's
    # exponential average (which takes ~10 s to reach a new level)
    some_total_us: int | None = None
    full_total_us: int | None = None


def parse_pressure(resource: str, text: str) -> Pressure | Unknown:
    lines: dict[str, dict[str, float]] = {}
    for line in text.splitlines():
        kind, _, rest = line.partition(" ")
        values = {}
        for word in rest.split():
            key, _, value = word.partition("=")
            try:
                values[key] = float(value)
            except ValueError:
                continue
        lines[kind] = values
    some, full = lines.get("some"), lines.get("full")
    if not some or "avg10" not in some or "avg60" not in some:
        return Unknown(f"unparsable /proc/pressure/{resource}")
    return Pressure(resource, some["avg10"], some["avg60"],
                    full.get("avg10") if full else None, full.get("avg60") if full else None,
                    _total(some), _total(full))


def _total(values: dict[str, float] | None) -> int | None:
    return int(values["total"]) if values and "total" in values else None


def read_pressure(root: HostRoot) -> dict[str, Pressure | Unknown] | Unknown:
    """Pressure per resource; Unknown when the kernel has no PSI at all."""
    out: dict[str, Pressure | Unknown] = {}
    reasons = []
    for resource in RESOURCES:
        try:
            out[resource] = parse_pressure(resource, root.read_text(f"proc/pressure/{resource}", 4096))
        except Unavailable as exc:
            reasons.append(exc.reason)
            out[resource] = exc.unknown()
    if len(reasons) == len(RESOURCES):
        return Unknown(f"no PSI in this kernel ({reasons[0]}; needs 4.20+ with CONFIG_PSI)")
    return out
