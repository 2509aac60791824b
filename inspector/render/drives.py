"""Rich rendering of one device's health block (called per device by the storage renderer)."""
from __future__ import annotations

from typing import Any

from rich.console import RenderableType
from rich.text import Text

from inspector.discover.fio_status import FioHealth
from inspector.discover.hio import HioHealth
from inspector.discover.nvme_health import NvmeHealth
from inspector.discover.smart import SmartHealth
from inspector.health.drives import device_findings, worst_level
from inspector.model import Level, Unknown, known

_STYLE = {Level.OK: "green", Level.WARN: "yellow", Level.CRIT: "bold red", Level.UNKNOWN: "magenta"}


def _v(value: Any, unit: str = "") -> str:
    if isinstance(value, Unknown):
        return "?"
    if isinstance(value, float):
        return f"{value:g}{unit}"
    return f"{value}{unit}"


def summary(health: Any) -> list[str]:
    """Key facts, one "label value" string each."""
    if isinstance(health, HioHealth):
        return [f"health {_v(health.health)}", f"event log {_v(health.event_log)}",
                f"battery {_v(health.battery_status)}", f"IO timeout {_v(health.io_timeout)}",
                f"R/W error {_v(health.rw_error)}",
                f"bad blocks {_v(health.max_bad_block_rate_pct, '%')} ({health.bad_block_trend})",
                f"avg erase {_v(health.average_erase_count)}", f"{_v(health.size_gb)} GB",
                f"fw {_v(health.controller_firmware)}", f"SN {_v(health.serial)}"] + \
            ([f"temp {_v(health.temperature_c, ' C')}"] if known(health.temperature_c) else [])
    if isinstance(health, FioHealth):
        out = [f"{health.controller} {health.status_line or health.state}",
               f"media {_v(health.media_status)}",
               f"reserves {_v(health.reserves_pct, '%')} (warn {_v(health.reserves_warn_pct, '%')})",
               f"PBW left {_v(health.pbw_remaining_pct, '%')}",
               f"temp {_v(health.temperature_c, ' C')}",
               f"power-loss {_v(health.power_loss_protection)}"]
        if known(health.pcie_link):
            out.append(f"PCIe {health.pcie_link.split(',')[0]}")
        if health.read_only:
            out.append("READ-ONLY")
        return out
    if isinstance(health, NvmeHealth):
        out = [f"{_v(health.model)}", f"fw {_v(health.firmware)}", f"state {_v(health.controller_state)}"]
        if known(health.critical_warning):
            out += [f"critical warning {health.critical_warning:#x}",
                    f"spare {_v(health.available_spare_pct, '%')} "
                    f"(thresh {_v(health.spare_threshold_pct, '%')})",
                    f"used {_v(health.percent_used, '%')}", f"media errors {_v(health.media_errors)}",
                    f"temp {_v(health.temperature_c, ' C')}", f"{_v(health.power_on_hours)} h"]
        else:
            out.append(f"SMART {health.critical_warning}")
        return out
    if isinstance(health, SmartHealth):
        status = ("?" if not isinstance(health.smart_passed, bool) else
                  "PASSED" if health.smart_passed else "FAILED")
        out = [f"{_v(health.model)}", f"SMART {status}", f"temp {_v(health.temperature_c, ' C')}",
               f"{_v(health.power_on_hours)} h"]
        out += [f"#{a.id} {a.raw}" for a in health.attributes.values() if a.raw]
        if health.exit_status:
            out.append(f"exit status {health.exit_status:#x}")
        return out
    return [str(health)]


def render_health(health: object) -> RenderableType:
    name = getattr(health, "device", "")
    if not isinstance(name, str):
        name = getattr(health, "controller", "")
    if isinstance(health, Unknown):
        return Text(f"health: {health}", style="magenta")
    findings = device_findings(name, health)
    level = worst_level(name, health)
    text = Text()
    text.append(f"health {level.label.upper()}", style=_STYLE[level])
    text.append(f" [{getattr(health, 'source', '')}]  ", style="dim")
    text.append("  ".join(summary(health)))
    for finding in findings:
        text.append(f"\n  {finding.level.label}: {finding.message}", style=_STYLE[finding.level])
    return text
