"""Health rules for drives and flash cards (report.sections["storage"].health).

Thresholds:
- Huawei ES3000 (hio): CRIT when Health, Event log or Battery status is not OK, or R/W error > 0;
  WARN when IO timeout > 0 or the max bad block rate rose since the last reading (kept for 7
  days after the rise, see drive_state.py); CRIT when hio_temperature reports >= 90 C.
- Fusion-io (fio): CRIT failed/offline, read-only, reduced-write, reserves at 0 %;
  WARN reserves at or below the card's warn level, rated PBW remaining below 10 % (the card is
  past 90 % of its rated endurance: plan replacement), internal temperature at or above the
  78 C throttle point (85 C alarm: CRIT), power-loss protection not "protected", detached,
  active errors the other rules did not explain.
- NVMe: CRIT any critical-warning bit or available spare at/below threshold, controller dead
  or being deleted; WARN percent used >= 90, media errors > 0, controller resetting/connecting.
  Level unknown (no finding) when no tool gave the SMART log.
- hio/fio: UNKNOWN when the tool's output carries no verdict (no Health/Event log line, no media
  status or reserves): output cut short must not read as healthy.
- SATA/SAS: CRIT SMART overall status failed or exit-status bits 3, 4, 7; WARN bits 5, 6,
  attributes 5/187/197/198 raw > 0, 199 (CRC: cabling), grown defects > 0, temperature >= 60 C.
Each finding's evidence is the output line or JSON field it came from.
"""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from inspector.discover.drive_state import rose
from inspector.discover.fio_status import FioHealth
from inspector.discover.hio import HioHealth
from inspector.discover.nvme_health import NvmeHealth
from inspector.discover.raid_cli import DISK_STATES, VOLUME_STATES, RaidCliReport
from inspector.discover.smart import WATCHED_ATTRIBUTES, SmartHealth, Unreadable
from inspector.model import Finding, Level, Report, Unknown, known, worst

HIO_OVER_TEMP_C = 90   # hio driver's controller over-temperature point
FIO_THROTTLE_C = 78.0
FIO_ALARM_C = 85.0
FIO_PBW_WARN_PCT = 10.0
NVME_WEAR_WARN_PCT = 90
SATA_HOT_C = 60


def rules(report: Report) -> Iterable[Finding]:
    section = report.sections.get("storage")
    if section is None or isinstance(section, Unknown):
        return []   # the storage section reports its own failure
    health = getattr(section, "health", None)
    if not isinstance(health, dict):
        return []
    stamp_levels(health)
    findings: list[Finding] = []
    for name, value in health.items():
        findings.extend(device_findings(name, value))
    controllers = getattr(section, "controllers", None)
    if controllers is not None and isinstance(controllers.cli, RaidCliReport):
        findings.extend(raid_cli_findings(controllers.cli))
    return findings


# ------------------------------------------------------------------ RAID controllers (storcli)
_VOLUME_LEVELS = {"Dgrd": Level.CRIT, "OfLn": Level.CRIT, "Pdgd": Level.WARN, "Rec": Level.WARN}
_DISK_LEVELS = {"Failed": Level.CRIT, "Offln": Level.CRIT, "Msng": Level.CRIT, "UBad": Level.WARN,
                "Rbld": Level.WARN}


def raid_cli_findings(report: RaidCliReport) -> list[Finding]:
    """The controller's own verdicts: a virtual drive not optimal, a physical drive failed,
    offline, missing, bad or rebuilding."""
    out: list[Finding] = []
    for c in report.controllers:
        for vd in c.volumes:
            level = _VOLUME_LEVELS.get(vd.state)
            if level is not None:
                out.append(Finding(
                    level, f"/c{c.controller}/v{vd.dg_vd.split('/')[-1]}",
                    f"{c.product} virtual drive {vd.dg_vd} ({vd.raid} {vd.size}"
                    f"{' ' + vd.name if vd.name else ''}) is {VOLUME_STATES.get(vd.state, vd.state)}",
                    [f"{report.tool} /call show all J: VD LIST {vd.dg_vd} State {vd.state}"],
                    f"{report.tool} /c{c.controller} show all lists the drive group's drives: "
                    "replace the failed one (the controller rebuilds onto a hot spare or the new "
                    "drive); do not pull another", "raid.volume_state"))
        for pd in c.drives:
            level = _DISK_LEVELS.get(pd.state)
            if level is not None:
                out.append(Finding(
                    level, f"/c{c.controller}/e{pd.slot.replace(':', '/s')}",
                    f"{c.product} drive {pd.slot} ({pd.model} {pd.size}, DID {pd.did}) is "
                    f"{DISK_STATES.get(pd.state, pd.state)}",
                    [f"{report.tool} /call show all J: PD LIST {pd.slot} State {pd.state}"],
                    "a rebuild is under way: redundancy is reduced until it ends, do not pull "
                    "another drive" if pd.state == "Rbld" else
                    f"replace the drive in slot {pd.slot}; smartctl -a -d megaraid,{pd.did} "
                    "/dev/bus/N shows its own log", "raid.disk_state"))
    return out


def device_findings(name: str, health: Any) -> list[Finding]:
    if isinstance(health, Unknown):
        return _unknown(name, health)
    if isinstance(health, HioHealth):
        return hio_findings(name, health)
    if isinstance(health, FioHealth):
        return fio_findings(name, health)
    if isinstance(health, NvmeHealth):
        return nvme_findings(name, health)
    if isinstance(health, SmartHealth):
        return smart_findings(name, health)
    return []


def stamp_levels(health: dict[str, Any]) -> None:
    """Give each health block its worst level, so `report --json` readers and the metrics
    export need not re-implement the rules."""
    for name, value in health.items():
        if not isinstance(value, Unknown):
            try:
                value.level = worst_level(name, value).label
            except Exception as exc:  # a rule bug must not lose the health block
                value.level = f"unknown (rules failed: {type(exc).__name__})"


def worst_level(name: str, health: Any) -> Level:
    """The device's worst finding; UNKNOWN when nothing was found only because nothing could
    be read (an NVMe drive whose SMART log no tool could give: "OK" would be a guess)."""
    findings = device_findings(name, health)
    if findings:   # as the findings table ranks them: a crit is never hidden by an unknown
        return worst(f.level for f in findings)
    if isinstance(health, NvmeHealth) and not known(health.critical_warning):
        return Level.UNKNOWN
    return Level.OK


def _unknown(name: str, health: Unknown) -> list[Finding]:
    # Flash cards are the devices operators run this for: not being able to check one is news.
    # So is a drive smartctl was run on and could not read (open failed, hung). A SATA disk
    # without smartctl or a virtual disk is normal and only shown in its block.
    if isinstance(health, Unreadable):
        return [_unreadable(name, health)]
    if name.startswith(("hio", "fio", "fct")):
        tool = "hio_info" if name.startswith("hio") else "fio-status"
        if "not installed" in health.reason:
            advice = f"install the vendor tool ({tool}) to read the card's health"
        elif "timed out" in health.reason:
            # the tool is there: a hang on one card is itself a sign of a stuck card or driver
            advice = (f"{tool} hangs on this card: a stuck card or driver is likely; check "
                      f"dmesg for the card's driver errors and run {tool} by hand")
        elif "not recorded" in health.reason:
            advice = f"the capture does not hold {tool}'s output: run it on the host"
        else:
            advice = f"run {tool} by hand to see why it fails"
        return [Finding(Level.UNKNOWN, name, f"flash card health unknown ({health.reason})",
                        evidence=[f"{tool}: {health.reason}"], code="drive.health_unknown",
                        advice=advice)]
    return []


def _unreadable(name: str, health: Unreadable) -> Finding:
    reason = health.reason
    target = name if name.startswith("/dev/") else f"/dev/{name}"
    if reason.startswith("logical volume of "):
        advice = (f"{name} is a RAID controller's volume: list its drives with smartctl "
                  "--scan-open and read each with smartctl -a -d TYPE,N (megaraid,N cciss,N ...), "
                  "or the controller's CLI (storcli64 /call show all, perccli64, ssacli, arcconf)")
    elif "please try adding '-d " in reason:
        kind = reason.split("please try adding '-d ", 1)[1].split(",")[0].split("'")[0]
        advice = (f"{name} is a logical volume of a RAID controller, not a drive: its physical "
                  f"drives are read with smartctl -d {kind},N (smartctl --scan-open lists them), "
                  "or the controller's CLI (storcli64 /call show all, perccli64, ssacli)")
    elif "Permission denied" in reason or "permission denied" in reason:
        advice = "smartctl needs root to open the drive: run Inspector (or smartctl -a) as root"
    elif "timed out" in reason:
        advice = (f"smartctl hangs on {name}: a stuck drive or controller is likely; check dmesg "
                  "for its errors and resets, then run smartctl -a by hand")
    else:
        advice = f"run smartctl -a {target} by hand to see why it fails; check dmesg for the drive"
    return Finding(Level.UNKNOWN, name, f"drive health unknown: {reason}",
                   [f"smartctl -a {target}: {reason}"], advice, "drive.health_unknown")


def _ev(health: Any, *keys: str) -> list[str]:
    return [health.evidence[k] for k in keys if k in health.evidence]


# ------------------------------------------------------------------ hio
def hio_findings(name: str, h: HioHealth) -> list[Finding]:
    out: list[Finding] = []
    if not known(h.health) and not known(h.event_log):
        # Health and Event log are hio_info's last lines: output cut short loses the verdict,
        # and the rest (serial, size) must not read as "OK"
        out.append(Finding(Level.UNKNOWN, name, "hio_info gave no Health or Event log line: "
                           "the card's own verdict is unknown", [f"{h.source}: {h.health}"],
                           f"run hio_info -d /dev/{name} by hand; output cut short can mean a "
                           "stuck card or driver (check dmesg)", "hio.health_unknown"))
    for attr, label, code in (("health", "Health", "hio.health"),
                              ("event_log", "Event log", "hio.event_log"),
                              ("battery_status", "Battery status", "hio.battery")):
        value = getattr(h, attr)
        if known(value) and value.strip().upper() != "OK":
            advice = ("the power-loss battery is not OK: writes in flight may be lost on power "
                      "failure; have the vendor replace the battery or the card"
                      if attr == "battery_status" else "check the card's event log with the vendor tools")
            out.append(Finding(Level.CRIT, name, f"{label}: {value}", _ev(h, attr), advice, code))
    if known(h.rw_error) and h.rw_error > 0:
        out.append(Finding(Level.CRIT, name, f"{h.rw_error} read/write errors", _ev(h, "rw_error"),
                           "the card reported failed IO: back up and plan replacement", "hio.rw_error"))
    if known(h.io_timeout) and h.io_timeout > 0:
        out.append(Finding(Level.WARN, name, f"{h.io_timeout} IO timeouts", _ev(h, "io_timeout"),
                           "the card timed out IO: check dmesg and the card's slot/cooling",
                           "hio.io_timeout"))
    if known(h.temperature_c) and h.temperature_c >= HIO_OVER_TEMP_C:
        out.append(Finding(Level.CRIT, name, f"controller temperature {h.temperature_c:g} C "
                           f"(over-temperature at {HIO_OVER_TEMP_C} C)", _ev(h, "temperature_c"),
                           "check airflow: the driver flags the card over temperature", "hio.hot"))
    if known(h.max_bad_block_rate_pct) and rose(h.bad_block_rate_rose_from, h.max_bad_block_rate_pct):
        out.append(Finding(Level.WARN, name,
                           f"bad block rate rising: {h.bad_block_rate_rose_from:g}% -> "
                           f"{h.max_bad_block_rate_pct:g}%",
                           _ev(h, "max_bad_block_rate_pct") +
                           [f"previous reading: {h.bad_block_rate_rose_from:g}%"],
                           "flash is wearing out: watch the trend and plan replacement",
                           "hio.bad_block_rising"))
    return out


# ------------------------------------------------------------------ Fusion-io
def fio_findings(name: str, c: FioHealth) -> list[Finding]:
    out = _fio_rules(name, c)
    if name != c.controller:   # the block device is the subject; say which controller it is
        for f in out:
            f.message = f"{c.controller}: {f.message}"
    return out


def _fio_rules(subject: str, c: FioHealth) -> list[Finding]:
    out: list[Finding] = []
    if c.state == "failed" or c.offline:
        message = (f"card failed: {c.failed_reason}" if c.state == "failed" and c.failed_reason
                   else f"card {c.state}: {c.status_line}")
        out.append(Finding(Level.CRIT, subject, message,
                           _ev(c, "state"), "the card serves no IO: fail over what used it, read "
                           "fio-status -a and dmesg for the cause, then replace the card or call "
                           "the vendor", "fio.failed"))
    elif c.state == "detached":
        out.append(Finding(Level.WARN, subject, "card detached (no block device)", _ev(c, "state"),
                           "attach it with fio-attach if it should be in use", "fio.detached"))
    if (c.state not in ("failed", "detached") and not c.offline and not c.read_only
            and not known(c.media_status) and not known(c.reserves_pct)):
        out.append(Finding(Level.UNKNOWN, subject, "fio-status shows no media status or "
                           "reserves: the card's health is unknown", _ev(c, "state"),
                           "run fio-status -a by hand; output cut short can mean a stuck card "
                           "or driver (check dmesg)", "fio.health_unknown"))
    media = c.media_status.lower() if known(c.media_status) else ""
    if c.read_only or "read-only" in media:
        out.append(Finding(Level.CRIT, subject, "card in READ-ONLY mode: all writes fail",
                           _ev(c, "read_only", "media_status"),
                           "reserves exhausted or a fault: copy the data off and replace the card",
                           "fio.read_only"))
    elif c.reduced_write or "reduced-write" in media or "write-reduced" in media:
        out.append(Finding(Level.CRIT, subject, "card in reduced-write mode (writes throttled)",
                           _ev(c, "reduced_write", "media_status"),
                           "reserves are used up: plan replacement now", "fio.reduced_write"))
    if known(c.reserves_pct):
        if c.reserves_pct <= 0:
            out.append(Finding(Level.CRIT, subject, "reserve space exhausted (0%)",
                               _ev(c, "reserves_pct"), "the card will go read-only: replace it",
                               "fio.reserves_exhausted"))
        elif known(c.reserves_warn_pct) and c.reserves_pct <= c.reserves_warn_pct:
            out.append(Finding(Level.WARN, subject,
                               f"reserve space low: {c.reserves_pct:g}% (warn at {c.reserves_warn_pct:g}%)",
                               _ev(c, "reserves_pct"), "plan replacement of the card",
                               "fio.reserves_low"))
    if known(c.pbw_remaining_pct) and c.pbw_remaining_pct < FIO_PBW_WARN_PCT:
        out.append(Finding(Level.WARN, subject,
                           f"rated write endurance nearly used: {c.pbw_remaining_pct:g}% remaining",
                           _ev(c, "pbw_remaining_pct"), "plan replacement of the card",
                           "fio.endurance_low"))
    if known(c.temperature_c):
        throttle = c.temperature_warn_c if known(c.temperature_warn_c) else FIO_THROTTLE_C
        if c.temperature_c >= FIO_ALARM_C:
            out.append(Finding(Level.CRIT, subject, f"internal temperature {c.temperature_c:g} C "
                               f"(alarm at {FIO_ALARM_C:g} C)", _ev(c, "temperature_c"),
                               "check airflow: the card shuts down when it overheats", "fio.hot"))
        elif c.temperature_c >= throttle:
            out.append(Finding(Level.WARN, subject, f"internal temperature {c.temperature_c:g} C "
                               f"(throttles at {throttle:g} C)", _ev(c, "temperature_c"),
                               "check airflow: writes are throttled", "fio.hot"))
    if known(c.power_loss_protection) and c.power_loss_protection.strip().lower() != "protected":
        out.append(Finding(Level.WARN, subject,
                           f"power-loss protection: {c.power_loss_protection}",
                           _ev(c, "power_loss_protection"),
                           "buffered writes may be lost on power failure", "fio.power_loss"))
    if c.pcie_errors is True:
        out.append(Finding(Level.WARN, subject, "PCIe errors reported", _ev(c, "pcie_errors"),
                           "reseat the card or try another slot", "fio.pcie_errors"))
    if c.active_errors and not any(f.level == Level.CRIT for f in out):
        out.append(Finding(Level.WARN, subject, "fio-status reports active errors or warnings",
                           _ev(c, "active_errors"), "read fio-status -a for details",
                           "fio.active_errors"))
    return out


# ------------------------------------------------------------------ NVMe
# sysfs nvmeX/state words other than "live": dead is final, the others should pass in seconds
NVME_STATE_DEAD = ("dead", "deleting", "deleting (no IO)")


def nvme_findings(name: str, h: NvmeHealth) -> list[Finding]:
    out: list[Finding] = []
    state = h.controller_state
    if known(state) and state and state != "live":
        ctrl = h.controller if known(h.controller) else "controller"
        dead = state in NVME_STATE_DEAD
        out.append(Finding(
            Level.CRIT if dead else Level.WARN, name,
            f"NVMe {ctrl} is {state}" + (": IO to it fails" if dead else " (not live)"),
            [f"/sys/class/nvme/{ctrl}/state: {state}"],
            "the kernel gave up on the controller: check dmesg for nvme timeouts/resets, then "
            "reseat or replace the drive (a PCIe rescan or reboot may bring it back)" if dead else
            "a reset or reconnect is in progress: if the state stays, check dmesg for nvme "
            "timeouts and the PCIe link", "nvme.controller_state"))
    if known(h.critical_warning) and h.critical_warning:
        out.append(Finding(Level.CRIT, name, "NVMe critical warning: " + ", ".join(h.critical_warnings),
                           _ev(h, "critical_warning"), "back up and check the drive",
                           "nvme.critical_warning"))
    if known(h.available_spare_pct) and known(h.spare_threshold_pct) and \
            h.available_spare_pct <= h.spare_threshold_pct:
        out.append(Finding(Level.CRIT, name, f"available spare {h.available_spare_pct}% at or below "
                           f"threshold {h.spare_threshold_pct}%",
                           _ev(h, "available_spare_pct", "spare_threshold_pct"),
                           "replace the drive", "nvme.spare_low"))
    if known(h.percent_used) and h.percent_used >= NVME_WEAR_WARN_PCT:
        out.append(Finding(Level.WARN, name, f"{h.percent_used}% of rated endurance used",
                           _ev(h, "percent_used"), "plan replacement", "nvme.wear"))
    if known(h.media_errors) and h.media_errors > 0:
        out.append(Finding(Level.WARN, name, f"{h.media_errors} media errors",
                           _ev(h, "media_errors"), "data integrity errors: watch for growth",
                           "nvme.media_errors"))
    return out


# ------------------------------------------------------------------ SATA / SAS
_ATTR_TEXT = {5: "reallocated sectors", 187: "reported uncorrectable errors",
              197: "pending sectors", 198: "offline uncorrectable sectors"}
_CRIT_BITS = (3, 4, 7)
_WARN_BITS = (5, 6)


def smart_findings(name: str, h: SmartHealth) -> list[Finding]:
    from inspector.discover.smart import EXIT_BITS
    out: list[Finding] = []
    if h.smart_passed is False:
        out.append(Finding(Level.CRIT, name, "SMART overall health: FAILED", _ev(h, "smart_passed"),
                           "the drive predicts its own failure: replace it", "smart.failed"))
    crit_bits = [EXIT_BITS[b] for b in _CRIT_BITS if h.exit_status & (1 << b)]
    warn_bits = [EXIT_BITS[b] for b in _WARN_BITS if h.exit_status & (1 << b)]
    if crit_bits and h.smart_passed is not False:
        out.append(Finding(Level.CRIT, name, "smartctl: " + "; ".join(crit_bits),
                           _ev(h, "exit_status"), "replace the drive", "smart.exit_status"))
    if warn_bits:
        out.append(Finding(Level.WARN, name, "smartctl: " + "; ".join(warn_bits),
                           _ev(h, "exit_status"), "read smartctl -a for the logged errors",
                           "smart.logged_errors"))
    for attr_id, text in _ATTR_TEXT.items():
        attr = h.attributes.get(attr_id)
        if attr and attr.raw:
            out.append(Finding(Level.WARN, name, f"{attr.raw} {text} (attribute {attr_id})",
                               _ev(h, f"attr_{attr_id}"), "watch for growth; back up",
                               f"smart.{WATCHED_ATTRIBUTES[attr_id].lower()}"))
    crc = h.attributes.get(199)
    if crc and crc.raw:
        out.append(Finding(Level.WARN, name, f"{crc.raw} interface CRC errors (attribute 199)",
                           _ev(h, "attr_199"),
                           "CRC errors come from the link, not the media: reseat or replace the "
                           "SATA cable / backplane port", "smart.crc_errors"))
    if known(h.grown_defects) and h.grown_defects > 0:
        out.append(Finding(Level.WARN, name, f"{h.grown_defects} grown defects",
                           _ev(h, "grown_defects"), "watch for growth", "smart.grown_defects"))
    if known(h.temperature_c) and h.temperature_c >= SATA_HOT_C:
        out.append(Finding(Level.WARN, name, f"temperature {h.temperature_c} C",
                           _ev(h, "temperature_c"), "check airflow", "smart.hot"))
    return out
