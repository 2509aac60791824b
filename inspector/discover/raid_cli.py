"""MegaRAID/PERC controllers as their own CLI reports them: `storcli64 /call show all J`
(perccli64 on Dell PERC takes the same command and prints the same JSON).

The controller knows what smartctl cannot tell: each virtual drive's state (optimal, degraded,
offline) and each physical drive's state in it (online, rebuilding, failed, hot spare), with its
DID, the N of smartctl's `-d megaraid,N`. Run only where a megaraid_sas host shows; a tool that
is not installed leaves it unknown, with the reason.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from inspector.discover.drive_cmd import failure
from inspector.model import Unknown
from inspector.roots.host import HostRoot

TOOLS = ("storcli64", "storcli", "perccli64", "perccli")
# storcli's state abbreviations (its legend), in words
VOLUME_STATES = {"Optl": "optimal", "OfLn": "offline", "Pdgd": "partially degraded",
                 "Dgrd": "degraded", "Rec": "recovering", "Cac": "cache-cade",
                 "Cbshld": "cache-cade shielded"}
DISK_STATES = {"Onln": "online", "Offln": "offline", "Failed": "failed", "Rbld": "rebuilding",
               "UGood": "unconfigured good", "UBad": "unconfigured bad", "DHS": "dedicated hot spare",
               "GHS": "global hot spare", "JBOD": "JBOD", "Cpybck": "copyback", "Sntze": "sanitizing",
               "UGUnsp": "unconfigured good, unsupported", "UGShld": "unconfigured good, shielded",
               "Msng": "missing"}


@dataclass
class VirtualDrive:
    """A line of storcli's VD LIST."""
    controller: int         # the controller's number (/cN)
    dg_vd: str              # "0/0": drive group / virtual drive
    raid: str               # RAID1, RAID5 ...
    state: str              # storcli's abbreviation: Optl Dgrd Pdgd OfLn Rec
    name: str               # the name it was given ("" when none)
    size: str               # as storcli prints it: "931.0 GB"


@dataclass
class PhysicalDrive:
    """A line of storcli's PD LIST."""
    controller: int         # the controller's number (/cN)
    slot: str               # "252:0": enclosure:slot
    did: int | None         # device id: smartctl's -d megaraid,DID
    state: str              # Onln Offln Failed Rbld UGood UBad DHS GHS JBOD ...
    dg: int | None          # its drive group; None: in none
    model: str              # the drive's model as the controller reads it
    size: str               # as storcli prints it: "931.0 GB"
    interface: str          # SATA SAS NVMe
    medium: str             # HDD SSD


@dataclass
class ControllerCli:
    """One controller of the CLI's answer."""
    controller: int                    # its number (/cN)
    product: str                       # "LSI MegaRAID SAS 9260-4i", "PERC H740P Mini"
    status: str                        # Command Status: Success, Failure ...
    volumes: list[VirtualDrive] = field(default_factory=list)   # its VD LIST
    drives: list[PhysicalDrive] = field(default_factory=list)   # its PD LIST


@dataclass
class RaidCliReport:
    """What `TOOL /call show all J` said (TOOL: storcli64, perccli64 ...)."""
    tool: str                                                    # storcli64, perccli64 ...
    controllers: list[ControllerCli] = field(default_factory=list)  # one per controller


def _int(value: object) -> int | None:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().isdigit():
        return int(value)
    return None


def parse_show_all(text: str, tool: str = "storcli64") -> RaidCliReport:
    """The JSON of `/call show all J` (or `/cN show J`). Raises ValueError when it is not."""
    doc = json.loads(text)
    controllers = doc.get("Controllers") if isinstance(doc, dict) else None
    if not isinstance(controllers, list):
        raise ValueError("no Controllers list")
    out = RaidCliReport(tool)
    for entry in controllers:
        if not isinstance(entry, dict):
            continue
        status: dict[str, Any] = entry.get("Command Status") or {}
        data: dict[str, Any] = entry.get("Response Data") or {}
        if not isinstance(status, dict) or not isinstance(data, dict):
            continue
        number = _int(status.get("Controller"))
        basics: dict[str, Any] = data.get("Basics") or {}
        if not isinstance(basics, dict):
            basics = {}
        c = ControllerCli(controller=number if number is not None else len(out.controllers),
                          product=str(data.get("Product Name") or basics.get("Model") or "?"),
                          status=str(status.get("Status", "?")))
        for row in data.get("VD LIST") or []:
            if isinstance(row, dict):
                c.volumes.append(VirtualDrive(c.controller, str(row.get("DG/VD", "?")),
                                              str(row.get("TYPE", "?")), str(row.get("State", "?")),
                                              str(row.get("Name", "")), str(row.get("Size", "?"))))
        for row in data.get("PD LIST") or []:
            if isinstance(row, dict):
                c.drives.append(PhysicalDrive(
                    c.controller, str(row.get("EID:Slt", "?")), _int(row.get("DID")),
                    str(row.get("State", "?")), _int(row.get("DG")), str(row.get("Model", "")).strip(),
                    str(row.get("Size", "?")), str(row.get("Intf", "?")), str(row.get("Med", "?"))))
        out.controllers.append(c)
    return out


def collect(root: HostRoot, timeout: float) -> RaidCliReport | Unknown:
    """The first MegaRAID CLI that answers; Unknown naming why none did."""
    reasons = []
    for tool in TOOLS:
        result = root.run([tool, "/call", "show", "all", "J"], timeout=timeout * 3)
        problem = failure(result, nonzero_ok=True)
        if problem is not None:
            reasons.append(problem.reason)
            if "not installed" in problem.reason or "not recorded" in problem.reason \
                    or "not in this sosreport" in problem.reason:
                continue
            return Unknown(f"{tool}: {problem.reason}")
        try:
            return parse_show_all(result.stdout, tool)
        except (ValueError, RecursionError, AttributeError) as exc:
            return Unknown(f"{tool} /call show all J printed no controller JSON ({exc})"[:200])
    return Unknown("no MegaRAID CLI: " + "; ".join(reasons))
