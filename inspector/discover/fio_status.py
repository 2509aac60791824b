"""Fusion-io ioDrive / ioDrive2 (controller fctN, block device fioX) health from `fio-status`.

`fio-status -fj` (JSON, newer VSL) is tried first, then `fio-status -a` text. The text layout
differs between VSL 2 ("fct0 Attached as 'fioa' (block device)", "Media status: ...") and VSL 3
("fct0 Attached", "Reserve space status: ...", block device under "Contained VSUs:").
A failed card prints "fct0 Failed: DEVICE IS OFFLINE ..." and often no block device at all.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

from inspector.discover.drive_cmd import ParseError, failure, garbage, parse_number
from inspector.model import Unknown
from inspector.roots.host import HostRoot

MISSING = Unknown("not in fio-status output")


@dataclass
class FioHealth:
    """A Fusion-io card (controller fctN) from `fio-status`: state, reserves, wear, heat."""
    controller: str                       # controller name: fct0
    device: str | Unknown = Unknown("fio-status names no block device")  # its block device: fioa
    kind: str = "fio"
    level: str = "ok"   # worst finding (ok/warn/crit/unknown) for JSON readers, set by health.drives
    source: str = ""                      # fio-status -fj | fio-status -a (the command used)
    state: str = "unknown"                # attached, detached, failed, ... (first word, lower)
    status_line: str = ""                 # the controller's status as printed
    failed_reason: str | None = None      # text after "Failed:"; None unless the state is failed
    offline: bool = False                 # status says OFFLINE: every read and write fails
    active_errors: bool = False           # "!! ---> There are active errors or warnings" line
    read_only: bool = False               # "READ-ONLY MODE. ALL WRITES WILL FAIL!"
    reduced_write: bool = False           # write-reduced mode: writes throttled, reserves low
    media_status: str | Unknown = MISSING  # Healthy, Low metadata, Read-only, Reduced-write
    # reserve (spare) flash left, percent ("Reserves: 100.00%"); at 0 the card goes
    # write-reduced, then read-only
    reserves_pct: float | Unknown = MISSING
    reserves_warn_pct: float | Unknown = MISSING  # the card's warning level ("warn at 10.00%")
    # VSL 2 "Thresholds: write-reduced: N%", percent as printed
    write_reduced_threshold_pct: float | Unknown = MISSING
    # VSL 2 "Thresholds: ... read-only: N%", percent as printed
    read_only_threshold_pct: float | Unknown = MISSING
    rated_pbw: float | Unknown = MISSING  # rated write endurance in PB ("Rated PBW: 17.00 PB")
    # percent of the rated endurance left ("99.46% remaining"); warn below 10
    pbw_remaining_pct: float | Unknown = MISSING
    temperature_c: float | Unknown = MISSING      # internal (controller) temperature in C
    temperature_max_c: float | Unknown = MISSING  # highest internal temperature recorded, C
    temperature_warn_c: float | Unknown = MISSING   # card's warn temperature, C (JSON form only)
    board_temperature_c: float | Unknown = MISSING  # board temperature in C (VSL 2)
    # "protected" is healthy; anything else means writes in flight may be lost on power loss
    power_loss_protection: str | Unknown = MISSING
    # negotiated PCIe link as printed: "4 lanes at 5.0 Gt/sec each, 2000.00 MBytes/sec total"
    pcie_link: str | Unknown = MISSING
    pcie_errors: bool | Unknown = MISSING  # has_pcie_errors (only the JSON form reports it)
    pci_address: str | Unknown = MISSING   # PCI bus address: 00:04.0
    firmware: str | Unknown = MISSING      # as printed: "v7.1.15, rev 110356 Public"
    product: str | Unknown = MISSING       # product number: F00-001-1T20-CS-0001
    serial: str | Unknown = MISSING        # serial number (SN:)
    size: str | Unknown = MISSING          # capacity as printed, with its unit: "1205.00 GBytes"
    physical_bytes_written: int | Unknown = MISSING  # bytes written to the flash, lifetime
    vsu_state: str | Unknown = MISSING    # block device state: "Online" of "fioa  State: Online"
    mapping: str = ""                     # how the block device was found
    evidence: dict[str, str] = field(default_factory=dict)  # field -> the line it came from


@dataclass
class FioStatus:
    driver_version: str | Unknown = MISSING
    controllers: list[FioHealth] = field(default_factory=list)


_CONTROLLER = re.compile(r"^(fct\d+)\s*(.*)$")
_VSU = re.compile(r"^(fio[a-z]+)\s+State:\s*([^,]*)")
_ATTACHED_AS = re.compile(r"attached as '([^']+)'", re.I)
_CONTAINED = re.compile(r"^(fio[a-z]+):\s*ID:")
_RESERVES = re.compile(r"Reserves:\s*([\d.]+)%(?:,\s*warn at\s*([\d.]+)%)?", re.I)
_PBW = re.compile(r"Rated PBW:\s*([\d.,]+)\s*PB(?:,\s*([\d.]+)%\s*remaining)?", re.I)
_TEMP = re.compile(r"Internal temperature:\s*([-\d.]+)\s*degC(?:,\s*max\s*([-\d.]+)\s*degC)?", re.I)
_THRESH = re.compile(r"write-reduced:\s*([\d.]+)%.*read-only:\s*([\d.]+)%", re.I)
_ID = re.compile(r"(?:Product Number|PN):\s*([^,]+)(?:,\s*SN:\s*([^,]+))?")


def parse_text(text: str) -> FioStatus:
    """Parse `fio-status -a` (VSL 2 or 3). Raises ParseError on output without any card."""
    status = FioStatus()
    found_header = False
    current: FioHealth | None = None
    vsu_states: dict[str, tuple[str, str]] = {}
    in_vsus = False
    for raw in (text or "").splitlines():
        line = raw.strip()
        if not line:
            continue
        if re.match(r"Found \d+ ioMemory device", line):
            found_header = True
            continue
        if not raw[:1].isspace():
            m = _CONTROLLER.match(raw)
            if m:
                current = FioHealth(controller=m.group(1))
                _set_status(current, m.group(2).strip(), raw.strip())
                status.controllers.append(current)
                in_vsus = False
                continue
            m = _VSU.match(raw)
            if m:
                vsu_states[m.group(1)] = (m.group(2).strip(), raw.strip())
                current, in_vsus = None, False
                continue
            if line.startswith("Driver version:") and current is None:
                status.driver_version = line.split(":", 1)[1].strip()
                continue
            if line.startswith("Adapter:"):
                current, in_vsus = None, False
                continue
        if current is None:
            continue
        in_vsus = _controller_line(current, line, in_vsus)
    for c in status.controllers:
        if isinstance(c.device, str) and c.device in vsu_states:
            c.vsu_state, c.evidence["vsu_state"] = vsu_states[c.device]
    if not status.controllers and not found_header:
        raise ParseError("no fctN controller in fio-status output")
    return status


def _set_status(c: FioHealth, status: str, line: str) -> None:
    c.status_line = status
    c.evidence["state"] = line
    word = _state_word(status)
    c.state = word
    if word == "failed":
        c.failed_reason = status.split(":", 1)[1].strip() if ":" in status else ""
    if "offline" in status.lower():
        c.offline = True
    m = _ATTACHED_AS.search(status)
    if m:
        c.device, c.mapping = m.group(1), "fio-status (attached as)"
        c.evidence["device"] = line


def _value(line: str) -> str:
    """What follows the label's colon (the whole line when a truncated one has none)."""
    label, colon, rest = line.partition(":")
    return rest.strip() if colon else line


def _state_word(status: str) -> str:
    words = status.split(":", 1)[0].split()
    return words[0].lower() if words else "unknown"


def _controller_line(c: FioHealth, line: str, in_vsus: bool) -> bool:
    """One indented line of a controller block; returns whether we are in 'Contained VSUs'."""
    low = line.lower()
    if in_vsus:
        m = _CONTAINED.match(line)
        if m:
            if not isinstance(c.device, str):
                c.device, c.mapping = m.group(1), "fio-status (contained VSUs)"
                c.evidence["device"] = line
            return True
    if line.startswith("!!") and "error" in low:
        c.active_errors = True
        c.evidence["active_errors"] = line
    elif "read-only mode" in low:
        c.read_only = True
        c.evidence["read_only"] = line
    elif re.search(r"(reduced-write|write-reduced|reduced write) mode", low):
        c.reduced_write = True
        c.evidence["reduced_write"] = line
    elif low.startswith("contained vsus"):
        return True
    elif low.startswith("powerloss protection"):
        c.power_loss_protection = _value(line)
        c.evidence["power_loss_protection"] = line
    elif low.startswith("pcie negotiated link"):
        c.pcie_link = _value(line)
        c.evidence["pcie_link"] = line
    elif low.startswith("pci:"):
        c.pci_address = line.split(",", 1)[0][4:].strip()
    elif low.startswith("firmware"):
        c.firmware = line[len("firmware"):].strip()
        c.evidence["firmware"] = line
    elif low.startswith("internal temperature"):
        m = _TEMP.search(line)
        if m:
            c.temperature_c = float(m.group(1))
            if m.group(2):
                c.temperature_max_c = float(m.group(2))
            c.evidence["temperature_c"] = line
    elif low.startswith("board temperature"):
        value = parse_number(line.split(":", 1)[-1])
        if value is not None:
            c.board_temperature_c = value
            c.evidence["board_temperature_c"] = line
    elif low.startswith(("reserve space status", "media status")):
        c.media_status = _value(line).split(";", 1)[0].strip()
        c.evidence["media_status"] = line
        m = _RESERVES.search(line)
        if m:
            c.reserves_pct = float(m.group(1))
            if m.group(2):
                c.reserves_warn_pct = float(m.group(2))
            c.evidence["reserves_pct"] = line
    elif low.startswith("rated pbw"):
        m = _PBW.search(line)
        if m:
            c.rated_pbw = float(m.group(1).replace(",", ""))
            if m.group(2):
                c.pbw_remaining_pct = float(m.group(2))
            c.evidence["pbw_remaining_pct"] = line
    elif low.startswith("thresholds"):
        m = _THRESH.search(line)
        if m:
            c.write_reduced_threshold_pct = float(m.group(1))
            c.read_only_threshold_pct = float(m.group(2))
            c.evidence["thresholds"] = line
    elif low.startswith("physical bytes written"):
        value = parse_number(line.split(":", 1)[-1])
        if value is not None:
            c.physical_bytes_written = int(value)
    elif "device size" in low and not isinstance(c.size, str):
        c.size = line.replace("device size", "").strip()
    elif ("product number:" in low or "pn:" in low) and not isinstance(c.product, str):
        m = _ID.search(line)
        if m:
            c.product = m.group(1).strip()
            if m.group(2):
                c.serial = m.group(2).strip()
    return False


# ------------------------------------------------------------------ JSON (fio-status -fj)
def parse_json(text: str) -> FioStatus:
    """Parse `fio-status -fj`: adapter[].iomemory[] with string values. Raises ParseError."""
    try:
        doc = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise ParseError(f"not JSON: {exc}") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("adapter"), list):
        raise ParseError("no adapter list in fio-status JSON")
    status = FioStatus()
    if isinstance(doc.get("version"), str):
        status.driver_version = doc["version"]
    for adapter in doc["adapter"]:
        if not isinstance(adapter, dict) or not isinstance(adapter.get("iomemory"), list):
            continue
        for iom in adapter["iomemory"]:
            if isinstance(iom, dict):
                status.controllers.append(_from_json(iom, len(status.controllers)))
    return status


def _s(d: dict, key: str) -> str | None:
    value = d.get(key)
    if value is None or isinstance(value, (dict, list)):
        return None
    return str(value).strip()


def _f(d: dict, key: str) -> float | Unknown:
    text = _s(d, key)
    value = parse_number(text) if text is not None else None
    return MISSING if value is None else value


def _from_json(iom: dict, index: int) -> FioHealth:
    name = _s(iom, "device_path") or _s(iom, "name") or f"fct{index}"
    c = FioHealth(controller=name.rsplit("/", 1)[-1])
    state = _s(iom, "iom_state") or _s(iom, "state") or "unknown"
    c.status_line = state
    c.state = _state_word(state)
    c.evidence["state"] = f"iom_state: {state}"
    if c.state == "failed":
        c.failed_reason = state.split(":", 1)[1].strip() if ":" in state else ""
    c.offline = "offline" in state.lower()
    reserve_status = _s(iom, "reserve_status")
    if reserve_status is not None:
        c.media_status = reserve_status
        c.evidence["media_status"] = f"reserve_status: {reserve_status}"
    for attr, key in (("reserves_pct", "reserve_space_pct"),
                      ("reserves_warn_pct", "reserve_warning_threshold_percent"),
                      ("pbw_remaining_pct", "rated_writes_remaining_percent"),
                      ("temperature_c", "temp_internal_deg_c"),
                      ("temperature_max_c", "temp_internal_max_deg_c"),
                      ("temperature_warn_c", "temp_internal_warn_deg_c")):
        value = _f(iom, key)
        setattr(c, attr, value)
        if not isinstance(value, Unknown):
            c.evidence[attr] = f"{key}: {_s(iom, key)}"
    pcie = _s(iom, "has_pcie_errors")
    if pcie is not None:
        c.pcie_errors = pcie.lower() not in ("0", "false", "no", "")
        c.evidence["pcie_errors"] = f"has_pcie_errors: {pcie}"
    for key in iom:
        low = str(key).lower()
        text = _s(iom, key)
        if text is None:
            continue
        if "powerloss" in low or "power_loss" in low:
            c.power_loss_protection = text
            c.evidence["power_loss_protection"] = f"{key}: {text}"
        elif "read_only" in low or "readonly" in low:
            if text.lower() in ("1", "true", "yes"):
                c.read_only = True
                c.evidence["read_only"] = f"{key}: {text}"
        elif (("write_reduced" in low or "reduced_write" in low)
              and text.lower() in ("1", "true", "yes")):
            c.reduced_write = True
            c.evidence["reduced_write"] = f"{key}: {text}"
    words = (reserve_status or "").lower() + " " + state.lower()
    if "read-only" in words or "read only" in words:
        c.read_only = True
        c.evidence.setdefault("read_only", c.evidence.get("media_status", c.evidence["state"]))
    if "reduced-write" in words or "write-reduced" in words:
        c.reduced_write = True
        c.evidence.setdefault("reduced_write", c.evidence.get("media_status", c.evidence["state"]))
    vsus = iom.get("vsu")
    if isinstance(vsus, list) and vsus and isinstance(vsus[0], dict):
        path = _s(vsus[0], "device_path")
        if path:
            c.device, c.mapping = path.rsplit("/", 1)[-1], "fio-status JSON (vsu device_path)"
            c.evidence["device"] = f"vsu[0].device_path: {path}"
    return c


# ------------------------------------------------------------------ collection
def run_fio_status(root: HostRoot, timeout: float) -> FioStatus | Unknown:
    """JSON first (when this VSL supports -fj), then the -a text."""
    result = root.run(["fio-status", "-fj"], timeout=timeout)
    if failure(result) is None:
        try:
            status = parse_json(result.stdout)
            _stamp(status, "fio-status -fj")
            return status
        except ParseError:
            pass  # older VSL prints usage text or ignores -fj: use the text form
    if result.error and "not recorded" not in result.error:
        return Unknown(result.error)   # not installed or hung: -a would fare no better
    result = root.run(["fio-status", "-a"], timeout=timeout)
    problem = failure(result)
    if problem is not None:
        return problem
    try:
        status = parse_text(result.stdout)
    except ParseError:
        return garbage("fio-status", result.stdout)
    _stamp(status, "fio-status -a")
    return status


def _stamp(status: FioStatus, source: str) -> None:
    for c in status.controllers:
        c.source = source


def map_devices(status: FioStatus, block_devices: list[str]) -> dict[str, FioHealth]:
    """Key each controller by its block device; unnamed ones pair up by order with the fio
    block devices nobody claimed (fct0 -> first), the rest stay keyed by controller name."""
    out: dict[str, FioHealth] = {}
    unmapped: list[FioHealth] = []
    for c in status.controllers:
        if isinstance(c.device, str):
            out[c.device] = c
        else:
            unmapped.append(c)
    free = sorted(d for d in block_devices if d not in out)
    for c in sorted(unmapped, key=lambda c: _controller_index(c.controller)):
        if free and c.state == "attached":
            c.device = free.pop(0)
            c.mapping = "by order (fio-status did not name the block device)"
            out[c.device] = c
        else:
            out[c.controller] = c
    return out


def _controller_index(name: str) -> int:
    m = re.search(r"(\d+)$", name)
    return int(m.group(1)) if m else 1 << 30
