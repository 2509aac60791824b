"""Shared model types: Unknown, findings, the report, and JSON conversion.

Every section's dataclasses live beside their collector (inspector/discover/*); they use the
types here. A field that could not be read holds `Unknown(reason)` instead of a value; in JSON it
becomes {"unknown": "<reason>"}. `to_jsonable` is the single serialiser for `report --json`,
snapshots and captures.
"""
from __future__ import annotations

import dataclasses
import enum
import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:   # TypeIs is typing's in 3.13; only the type checker reads it here
    from typing_extensions import TypeIs

SCHEMA_VERSION = 1
T = TypeVar("T")


@dataclass(frozen=True)
class Unknown:
    """A value that could not be determined, and why (permission denied, not present, ...)."""
    reason: str

    def __bool__(self) -> bool:  # `if value:` treats unknown like missing
        return False

    def __str__(self) -> str:
        return f"unknown ({self.reason})"


def known(value: T | Unknown | None) -> TypeIs[T]:
    """A value that was read: neither Unknown(reason) nor None. (For a type checker, `value`
    is its known type inside `if known(value):`.)"""
    return value is not None and not isinstance(value, Unknown)


def or_default(value: Any, default: Any) -> Any:
    return value if known(value) else default


class Level(enum.IntEnum):
    """Finding severity. The values are Nagios' exit statuses (UNKNOWN = 3, "could not check"),
    so they do NOT order by severity: rank with `severity` / `worst()`, never with max()."""
    OK = 0
    WARN = 1
    CRIT = 2
    UNKNOWN = 3

    @property
    def label(self) -> str:
        return self.name.lower()

    @property
    def severity(self) -> int:
        """How bad, for ranking: ok < warn < unknown < crit. A crit is never hidden by an
        unknown (a known failure outranks a failed check), an unknown outranks a warning."""
        return _SEVERITY[self]


_SEVERITY = {Level.OK: 0, Level.WARN: 1, Level.UNKNOWN: 2, Level.CRIT: 3}


def worst(levels: Iterable[Level]) -> Level:
    """The worst of `levels` by severity; OK for none. The one ranking every command uses."""
    return max(levels, key=_SEVERITY.__getitem__, default=Level.OK)


@dataclass
class Finding:
    """One health verdict: a rule of inspector/health/* looked at the report and says this."""
    level: Level            # severity: ok, warn, crit, or unknown (could not check)
    subject: str            # what it is about: "md0", "eth0", "resolver", "cpu"
    message: str            # one line a tired operator reads first
    evidence: list[str] = field(default_factory=list)  # the lines / values it came from
    advice: str = ""        # what to do about it, in one line; "" when there is nothing to do
    code: str = ""          # stable rule id, e.g. "md.degraded": diff and check key on it

    def key(self) -> tuple[str, str]:
        return (self.code or self.message, self.subject)


@dataclass
class HostIdentity:
    """Which machine the report describes, and when."""
    hostname: str | Unknown     # /proc/sys/kernel/hostname, else uname nodename
    kernel: str | Unknown       # kernel release, uname -r (else /proc/sys/kernel/osrelease)
    machine: str | Unknown      # hardware architecture, uname -m: x86_64, aarch64 ...
    source: str                 # "live" or the capture path
    collected_at: float         # unix time (seconds) the data was read; 0 when not recorded


@dataclass
class Report:
    """The whole model: what `report --json` prints and snapshots store."""
    host: HostIdentity                       # which machine, and when
    sections: dict[str, Any]                 # name -> section dataclass (or Unknown)
    findings: list[Finding] = field(default_factory=list)   # crit, unknown, warn, then ok
    timings: dict[str, float] = field(default_factory=dict)   # collector -> seconds
    schema_version: int = SCHEMA_VERSION

    def section(self, name: str) -> Any:
        return self.sections.get(name)

    def worst(self) -> Level:
        return worst(f.level for f in self.findings)


def to_jsonable(obj: Any) -> Any:
    """Dataclasses, enums, Unknown, tuples and sets to plain JSON types (stable key order)."""
    if isinstance(obj, Unknown):
        return {"unknown": obj.reason}
    if isinstance(obj, enum.Enum):
        return obj.name.lower() if isinstance(obj, Level) else obj.value
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: to_jsonable(getattr(obj, f.name)) for f in dataclasses.fields(obj)
                if not f.metadata.get("json_skip")}
    if isinstance(obj, dict):
        return {str(k): to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [to_jsonable(v) for v in obj]
    if isinstance(obj, (set, frozenset)):
        return sorted(to_jsonable(v) for v in obj)
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    if isinstance(obj, bytes):
        return obj.decode("utf-8", "replace")
    return obj


def finding_from_json(d: dict) -> Finding:
    return Finding(level=Level[str(d.get("level", "ok")).upper()], subject=d.get("subject", ""),
                   message=d.get("message", ""), evidence=list(d.get("evidence", [])),
                   advice=d.get("advice", ""), code=d.get("code", ""))
