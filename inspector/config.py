"""Inspector's configuration file: the live rules' thresholds (inspector.health.live).

Read with tomllib from /etc/inspector/inspector.toml, then $XDG_CONFIG_HOME/inspector/
inspector.toml (~/.config when unset), the second overriding the first key by key. Every key
has a default here; a file may set any of them. A key this module does not know, or a value
of the wrong type or out of range, is a ConfigError whose message is one line naming the
file, the table and the key.

    [live]
    window_s = 5            # seconds of samples a rule averages over

    [live.cpu]
    steal_pct = 10

Each table below is a dataclass; its field comments are the documentation README.md repeats.
"""
from __future__ import annotations

import dataclasses
import math
import os
from dataclasses import dataclass, field
from typing import Any

SYSTEM_FILE = "/etc/inspector/inspector.toml"

# %util at which a disk reads as busy / saturated: the live rules and the screens' colours
UTIL_WARN_PCT = 60.0
UTIL_CRIT_PCT = 90.0


class ConfigError(ValueError):
    """A configuration file that cannot be used; the message is one line."""


@dataclass(frozen=True)
class CpuThresholds:
    busy_pct: float = 90.0            # CPU busy (not idle, not iowait) for saturation
    runnable_per_cpu: float = 1.0     # runnable tasks per CPU above which it is saturated
    psi_some_pct: float = 20.0        # or PSI cpu some avg10 at or above this
    crit_runnable_per_cpu: float = 3.0
    steal_pct: float = 10.0           # steal sustained over the window
    crit_steal_pct: float = 30.0
    iowait_pct: float = 20.0


@dataclass(frozen=True)
class DiskThresholds:
    util_pct: float = UTIL_CRIT_PCT   # %util for a saturated device
    crit_after_s: float = 60.0        # saturated this long: critical
    await_ratio: float = 5.0          # await this many times its own baseline ...
    await_min_ms: float = 20.0        # ... and at least this many ms
    baseline_s: float = 300.0         # how far back the baseline reaches
    member_ratio: float = 3.0         # an md/dm member's await vs its siblings' median
    md_stall_s: float = 30.0          # a resync that made no progress this long


@dataclass(frozen=True)
class TaskThresholds:
    dstate_s: float = 5.0             # a task in D this long without running
    crit_dstate_s: float = 120.0      # the kernel's hung-task warning time


@dataclass(frozen=True)
class MemoryThresholds:
    psi_some_pct: float = 10.0        # PSI memory some avg10
    psi_full_pct: float = 5.0         # PSI memory full avg10: critical
    swapin_pages_s: float = 100.0     # pages swapped in per second
    majfault_s: float = 200.0         # major page faults per second
    dirty_min_mib: float = 256.0      # dirty + writeback growing and above this
    available_pct: float = 5.0        # without PSI: MemAvailable under this share


@dataclass(frozen=True)
class FilesystemThresholds:
    fill_pct: float = 90.0
    crit_fill_pct: float = 95.0
    inodes_pct: float = 90.0
    crit_inodes_pct: float = 95.0
    full_within_s: float = 6 * 3600.0       # time to full at the current rate: warning
    crit_full_within_s: float = 3600.0      # critical
    min_growth_bytes_s: float = 4096.0      # slower growth is noise
    growth_span_s: float = 60.0             # growth measured this long before a warning ...
    crit_growth_span_s: float = 4.0         # ... and before a critical (full within the hour)


@dataclass(frozen=True)
class NicThresholds:
    errors_s: float = 1.0
    drops_s: float = 10.0
    softnet_drops_s: float = 1.0
    carrier_flaps: int = 1            # carrier changes within the window


@dataclass(frozen=True)
class LiveThresholds:
    window_s: float = 5.0             # seconds of samples most rules average over
    keep_ended: int = 200             # ended findings kept for the session
    cpu: CpuThresholds = field(default_factory=CpuThresholds)
    disk: DiskThresholds = field(default_factory=DiskThresholds)
    tasks: TaskThresholds = field(default_factory=TaskThresholds)
    memory: MemoryThresholds = field(default_factory=MemoryThresholds)
    fs: FilesystemThresholds = field(default_factory=FilesystemThresholds)
    nic: NicThresholds = field(default_factory=NicThresholds)


@dataclass(frozen=True)
class Config:
    live: LiveThresholds = field(default_factory=LiveThresholds)
    files: tuple[str, ...] = ()       # the files read, in order


def config_files(environ: dict[str, str] | None = None) -> list[str]:
    env = os.environ if environ is None else environ
    xdg = env.get("XDG_CONFIG_HOME") or os.path.join(env.get("HOME", "/root"), ".config")
    return [SYSTEM_FILE, os.path.join(xdg, "inspector", "inspector.toml")]


def load_config(paths: list[str] | None = None) -> Config:
    """The defaults overridden by each file of `paths` (default: config_files()) that exists.
    ConfigError for an unreadable file or a bad key or value."""
    live = LiveThresholds()
    read: list[str] = []
    for path in config_files() if paths is None else paths:
        try:
            with open(path, "rb") as fh:
                text = fh.read().decode()      # as tomllib.load decodes it
        except FileNotFoundError:
            continue
        except OSError as exc:
            raise ConfigError(f"{path}: {exc.strerror or exc}") from None
        import tomllib  # here: most hosts have no file, and `top` and the TUI read the defaults
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"{path}: not valid TOML: {exc}") from None
        unknown = sorted(set(data) - {"live"})
        if unknown:
            raise ConfigError(f"{path}: unknown table or key {unknown[0]!r} (known: live)")
        live = _merge(live, data.get("live", {}), path, "live")
        read.append(path)
    return Config(live, tuple(read))


def _merge(base: Any, table: Any, path: str, where: str) -> Any:
    if not isinstance(table, dict):
        raise ConfigError(f"{path}: [{where}] must be a table")
    fields = {f.name: f for f in dataclasses.fields(base)}
    changes: dict[str, Any] = {}
    for key, value in table.items():
        f = fields.get(key)
        if f is None:
            raise ConfigError(f"{path}: [{where}] unknown key {key!r} (known: "
                              f"{', '.join(sorted(fields))})")
        current = getattr(base, key)
        if dataclasses.is_dataclass(current):
            changes[key] = _merge(current, value, path, f"{where}.{key}")
        else:
            changes[key] = _value(current, value, path, f"[{where}] {key}")
    return dataclasses.replace(base, **changes)


def _value(default: Any, value: Any, path: str, name: str) -> Any:
    if isinstance(default, int) and not isinstance(default, bool):
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ConfigError(f"{path}: {name} must be a whole number >= 0, not {value!r}")
        return value
    if isinstance(value, bool) or not isinstance(value, (int, float)) \
            or not math.isfinite(value) or value < 0:
        raise ConfigError(f"{path}: {name} must be a number >= 0, not {value!r}")
    return float(value)


def defaults_table() -> list[tuple[str, str, Any]]:
    """(table, key, default) of every key, for the documentation and its test."""
    out: list[tuple[str, str, Any]] = []

    def walk(obj: Any, where: str) -> None:
        for f in dataclasses.fields(obj):
            value = getattr(obj, f.name)
            if dataclasses.is_dataclass(value):
                walk(value, f"{where}.{f.name}")
            else:
                out.append((where, f.name, value))
    walk(LiveThresholds(), "live")
    return out
