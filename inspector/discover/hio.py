"""Huawei ES3000 (hioa, hiob ...) health from `hio_info -d /dev/hioX` and `hio_temperature`.

`hio_info` prints one "Label: value" per line; the first line carries the device name in front
("hioa Size(GB): 1204"). Field meanings follow the hio driver's ssd_io_stat (IO timeout = nr_to,
R/W error = nr_rwerr). The bad-block rate has no published limit (thresholds live in the card's
registers), so Inspector warns on a *rise*, remembered between runs (drive_state.py).
"""
from __future__ import annotations

import re
import time
from dataclasses import dataclass, field

from inspector.discover.drive_cmd import ParseError, failure, garbage, parse_int, parse_number
from inspector.discover.drive_state import Trend, TrendStore
from inspector.model import Unknown, known
from inspector.roots.host import HostRoot

MISSING = Unknown("not in hio_info output")

# label printed by hio_info -> (field name, kind)
LABELS: dict[str, tuple[str, str]] = {
    "size(gb)": ("size_gb", "int"),
    "max size(gb)": ("max_size_gb", "int"),
    "serial number": ("serial", "str"),
    "driver version": ("driver_version", "str"),
    "bridge firmware version": ("bridge_firmware", "str"),
    "controller firmware version": ("controller_firmware", "str"),
    "battery firmware version": ("battery_firmware", "str"),
    "battery status": ("battery_status", "str"),
    "run time (sec.)": ("run_time_s", "int"),
    "total io read": ("total_io_read", "int"),
    "total io write": ("total_io_write", "int"),
    "total read(mb)": ("total_read_mb", "int"),
    "total write(mb)": ("total_write_mb", "int"),
    "io timeout": ("io_timeout", "int"),
    "r/w error": ("rw_error", "int"),
    "max bit flip": ("max_bit_flip", "int"),
    "average ec": ("average_erase_count", "int"),
    "max bad block rate": ("max_bad_block_rate_pct", "float"),
    "event log": ("event_log", "str"),
    "health": ("health", "str"),
}


@dataclass
class HioHealth:
    """A Huawei ES3000 card (hioX) from `hio_info -d` and `hio_temperature`; labels quoted."""
    device: str                                  # hioa ...
    kind: str = "hio"
    level: str = "ok"   # worst finding (ok/warn/crit/unknown) for JSON readers, set by health.drives
    source: str = ""                             # the command: hio_info -d /dev/hioX
    size_gb: int | Unknown = MISSING             # capacity in GB ("Size(GB)")
    max_size_gb: int | Unknown = MISSING         # largest capacity it offers, GB ("Max size(GB)")
    serial: str | Unknown = MISSING              # "Serial number"
    driver_version: str | Unknown = MISSING      # hio driver version
    bridge_firmware: str | Unknown = MISSING     # "Bridge firmware version"
    controller_firmware: str | Unknown = MISSING  # "Controller firmware version"
    battery_firmware: str | Unknown = MISSING    # "Battery firmware version"
    battery_status: str | Unknown = MISSING      # power-loss protection battery: OK; else crit
    run_time_s: int | Unknown = MISSING          # run time in seconds ("Run time (sec.)")
    total_io_read: int | Unknown = MISSING       # read I/Os, a count ("Total IO read")
    total_io_write: int | Unknown = MISSING      # write I/Os, a count ("Total IO write")
    total_read_mb: int | Unknown = MISSING       # data read in MB ("Total read(MB)")
    total_write_mb: int | Unknown = MISSING      # data written in MB ("Total write(MB)")
    io_timeout: int | Unknown = MISSING          # I/O timeouts (driver's nr_to); warn > 0
    rw_error: int | Unknown = MISSING            # read/write errors (driver's nr_rwerr); crit > 0
    max_bit_flip: int | Unknown = MISSING        # highest ECC-corrected bit flip count reported
    average_erase_count: int | Unknown = MISSING  # mean flash erase (P/E) count ("Average EC")
    # "Max bad block rate" in percent; no published limit: warn when it rises
    max_bad_block_rate_pct: float | Unknown = MISSING
    event_log: str | Unknown = MISSING           # "Event log": OK; else crit
    health: str | Unknown = MISSING              # the card's own verdict ("Health"): OK; else crit
    # controller temperature in C (hio_temperature); crit at 90
    temperature_c: float | Unknown = Unknown("hio_temperature not run")
    # Trend: the rate before the last rise and when that rise was seen (None: no recent rise).
    bad_block_rate_rose_from: float | None = None  # percent before the last rise
    bad_block_rate_rose_at: float | None = None    # unix time the rise was first seen
    bad_block_trend: str = "no earlier value"      # in words: "rose from 0.1% to 0.2%" ...
    device_in_output: str | None = None  # the hioX hio_info printed on its first line, if any
    evidence: dict[str, str] = field(default_factory=dict)  # field -> the line it came from


def parse_hio_info(text: str, device: str = "") -> HioHealth:
    """Parse `hio_info -d` output. Raises ParseError when no known field is present."""
    health = HioHealth(device=device)
    found = 0
    for raw in (text or "").splitlines():
        if ":" not in raw:
            continue
        label, _, value = raw.partition(":")
        label = " ".join(label.split()).lower()
        value = value.strip()
        if label not in LABELS:
            first, _, rest = label.partition(" ")
            if rest in LABELS and re.fullmatch(r"hio[a-z]+", first):
                health.device_in_output = first
                label = rest
            else:
                continue
        name, kind = LABELS[label]
        parsed = _convert(value, kind)
        if parsed is None:
            setattr(health, name, Unknown(f"unparsable {value[:40]!r}"))
        else:
            setattr(health, name, parsed)
        health.evidence[name] = raw.strip()
        found += 1
    if not found:
        raise ParseError("no hio_info fields found")
    return health


def _convert(value: str, kind: str) -> int | float | str | None:
    if kind == "str":
        return value
    if kind == "int":
        return parse_int(value)
    return parse_number(value)


def parse_hio_temperature(text: str) -> float | None:
    """`hio_temperature` output: take the number labelled as a temperature, else the first."""
    for line in (text or "").splitlines():
        if "temp" in line.lower() and ":" in line:
            value = parse_number(line.split(":", 1)[1])
            if value is not None:
                return value
    value = parse_number(text or "")
    return value if value is not None and -60 < value < 200 else None


def trend_key(health: HioHealth) -> str:
    return f"hio:{health.serial if known(health.serial) else health.device}:bad_block_rate"


def collect(root: HostRoot, device: str, timeout: float,
            store: TrendStore | None = None) -> HioHealth | Unknown:
    argv = ["hio_info", "-d", f"/dev/{device}"]
    result = root.run(argv, timeout=timeout)
    problem = failure(result)
    if problem is not None:
        return problem
    try:
        health = parse_hio_info(result.stdout, device)
    except ParseError:
        return garbage("hio_info", result.stdout)
    health.source = " ".join(argv)
    _add_temperature(root, device, timeout, health)
    _add_trend(root, health, store)
    return health


def _add_temperature(root: HostRoot, device: str, timeout: float, health: HioHealth) -> None:
    result = root.run(["hio_temperature", "-d", device], timeout=timeout)
    problem = failure(result)
    if problem is not None:
        health.temperature_c = problem
        return
    value = parse_hio_temperature(result.stdout)
    if value is None:
        health.temperature_c = garbage("hio_temperature", result.stdout)
    else:
        health.temperature_c = value
        health.evidence["temperature_c"] = result.stdout.strip()[:120]


def _add_trend(root: HostRoot, health: HioHealth, store: TrendStore | None) -> None:
    rate = health.max_bad_block_rate_pct
    if not known(rate):
        health.bad_block_trend = "bad block rate unknown"
        return
    key = trend_key(health)

    def produce() -> dict | None:
        # Live only: update the local store; the result is recorded so a capture shows it too.
        if store is None:
            return None
        before, after = store.update(key, float(rate), time.time())
        return {**after.to_json(), "first": before is None}

    recorded = root.fact("drive_trend", key, produce)
    if isinstance(recorded, Unknown):
        health.bad_block_trend = f"no trend ({recorded.reason})"
        return
    trend = Trend.from_json(recorded)
    if trend is None:
        health.bad_block_trend = "no earlier value"
        return
    if trend.rose_from is not None:
        health.bad_block_rate_rose_from = trend.rose_from
        health.bad_block_rate_rose_at = trend.rose_at
        health.bad_block_trend = f"rose from {trend.rose_from:g}% to {trend.value:g}%"
    elif recorded.get("first"):
        health.bad_block_trend = "first reading (remembered for next time)"
    else:
        health.bad_block_trend = "not rising"
