"""Physical drives behind hardware RAID controllers (MegaRAID/PERC, HP Smart Array, Adaptec,
Areca, 3ware), where `smartctl -a /dev/sdX` shows only the logical volume.

`smartctl --scan-open` lists the drives each controller passes through (`/dev/bus/0 -d
megaraid,3`, `/dev/sg1 -d cciss,0`, `/dev/sda -d aacraid,0,0,2`, `/dev/sg2 -d areca,1/1`); each
is read with `smartctl -a -d TYPE PATH` (inspector.discover.smart) and its health judged like any
drive's. A drive belongs to the controller's SCSI host (/dev/bus/N is host N; otherwise the host
of the device it is addressed through); the logical volumes of that host are the volumes it may
serve. Which volume holds which drive is not in smartctl's output: a drive is listed under every
volume of its controller, and says so.

The scan runs only where a RAID controller shows (a disk on a SCSI host whose driver is a RAID
driver, or smartctl's "please try adding '-d TYPE,N'"), on the live host or a capture (which
records these commands). A sosreport keeps none of them: its volumes' drives stay unknown.
"""
from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any

from inspector.discover import drives, raid_cli, smart
from inspector.discover.drive_cmd import failure
from inspector.discover.raid_cli import DISK_STATES, RaidCliReport
from inspector.model import Unknown
from inspector.roots.host import HostRoot

if TYPE_CHECKING:
    from inspector.discover.block import BlockDevice

# SCSI host drivers (scsi_host/hostN/proc_name) of RAID controllers whose disks are volumes
RAID_DRIVERS = {"megaraid_sas": "MegaRAID/PERC", "megaraid": "MegaRAID", "hpsa": "HP Smart Array",
                "cciss": "HP Smart Array (cciss)", "smartpqi": "Microchip SmartPQI",
                "aacraid": "Adaptec", "arcmsr": "Areca", "3w-9xxx": "3ware", "3w-sas": "3ware"}
# smartctl -d types that reach a drive through a controller
_PASSTHROUGH = re.compile(r"^(?:sat\+|sct\+)?(megaraid|cciss|aacraid|areca|3ware|hpt|sssraid),")
_SCAN_LINE = re.compile(r"^(?P<off>#\s*)?(?P<path>\S+)\s+-d\s+(?P<dtype>\S+)\s*(?:#\s*(?P<info>.*))?$")
_HOST_OF_PATH = re.compile(r"/host(\d+)/")
_VOLUME_MODELS = re.compile(r"LOGICAL VOLUME|PERC|MegaRAID|MR\d{4}|RAID|Virtual Disk|RS3[A-Z]{2}\d",
                            re.IGNORECASE)


@dataclass
class ScanEntry:
    """One line of `smartctl --scan-open`."""
    path: str                  # /dev/bus/0, /dev/sda, /dev/sg1
    dtype: str                 # megaraid,3 sat+megaraid,0 scsi cciss,0 ...
    info: str                  # smartctl's comment: "/dev/bus/0 [megaraid_disk_03], SCSI device"
    open_error: str | None     # the line was commented out: smartctl could not open it (why)


@dataclass
class ControllerDrive:
    """A physical drive smartctl reaches through a RAID controller."""
    address: str               # how smartctl reaches it: "/dev/bus/0 -d megaraid,3"; its health key
    controller: str            # SCSI host of its controller ("host0"); "?" when not known
    driver: str | Unknown      # that host's driver (scsi_host/hostN/proc_name): megaraid_sas ...
    volumes: list[str] = field(default_factory=list)  # the controller's logical volumes (sda ...)
    # how `volumes` was decided ("the only volume of host0", "volume unknown: host0 has 2")
    placement: str = ""
    # the controller's CLI on this drive (megaraid,N is its DID): "252:0 Onln in DG 0"; None: no CLI
    cli: str | None = None


@dataclass
class ControllerView:
    """What smartctl showed behind the host's RAID controllers."""
    scan: list[ScanEntry] | Unknown        # smartctl --scan-open, parsed
    drives: list[ControllerDrive] = field(default_factory=list)
    # storcli64/perccli64 /call show all J where a MegaRAID/PERC shows; None: no such controller
    cli: RaidCliReport | Unknown | None = None
    volumes: dict[str, str] = field(default_factory=dict)   # logical volume -> "megaraid_sas host0"


def parse_scan(text: str) -> list[ScanEntry]:
    """`smartctl --scan-open` (and --scan): "PATH -d TYPE # INFO"; a line smartctl could not
    open is commented out with the reason after "open failed:"."""
    out: list[ScanEntry] = []
    for line in text.splitlines():
        m = _SCAN_LINE.match(line.strip())
        if not m:
            continue
        info = (m["info"] or "").strip()
        error = None
        if m["off"] is not None:
            error = info.split("open failed:", 1)[1].strip() if "open failed:" in info else info
        out.append(ScanEntry(m["path"], m["dtype"], info, error))
    return out


def scsi_host(dev: BlockDevice) -> str | None:
    m = _HOST_OF_PATH.search(dev.sysfs_path) if isinstance(dev.sysfs_path, str) else None
    return f"host{m[1]}" if m else None


def host_driver(root: HostRoot, host: str) -> str | Unknown:
    return root.try_line(f"sys/class/scsi_host/{host}/proc_name")


def is_volume(name: str, health: Any, driver: str | Unknown) -> bool:
    """A RAID controller's logical volume rather than a drive it passes through (JBOD):
    smartctl says so, or the disk sits on a RAID driver and shows no drive's health."""
    if isinstance(health, Unknown) and "please try adding '-d " in health.reason:
        return True
    if not isinstance(driver, str) or driver not in RAID_DRIVERS:
        return False
    if isinstance(health, smart.SmartHealth):
        model = health.model if isinstance(health.model, str) else ""
        return bool(_VOLUME_MODELS.search(model)) or health.smart_available is False
    return True     # no SMART answer from a disk on a RAID driver: a volume until shown otherwise


def collect(root: HostRoot, devices: dict[str, BlockDevice], health: dict[str, Any],
            timeout: float) -> ControllerView | None:
    """The drives behind the controllers of `devices`; their health is added to `health` under
    their address, and a volume whose drives were all read has its own entry replaced by a
    plain Unknown naming them (its health is theirs). None when no controller shows."""
    disks = {n: d for n, d in devices.items() if d.parent is None and d.family in ("scsi", "ata")}
    hosts: dict[str, str] = {n: h for n, d in disks.items() if (h := scsi_host(d)) is not None}
    drivers = {h: host_driver(root, h) for h in set(hosts.values())}
    volumes = {n: f"{drivers[h]} {h}" for n, h in hosts.items()
               if is_volume(n, health.get(n), drivers[h])}
    volumes.update({n: "? ?" for n in disks if n not in hosts and is_volume(
        n, health.get(n), Unknown("no SCSI host"))})
    for listed in root.try_listdir("sys/class/scsi_host"):   # a controller with no volume shown
        if listed not in drivers:
            drivers[listed] = host_driver(root, listed)
    raid_hosts = [h for h, d in drivers.items() if isinstance(d, str) and d in RAID_DRIVERS]
    if not volumes and not raid_hosts:
        return None
    result = root.run(["smartctl", "--scan-open"], timeout=timeout * 2)
    problem = failure(result)
    view = ControllerView(scan=problem if problem is not None else parse_scan(result.stdout),
                          volumes=volumes)
    if any(drivers.get(h) in ("megaraid_sas", "megaraid") for h in raid_hosts) or \
            any("megaraid" in v for v in volumes.values()):
        view.cli = raid_cli.collect(root, timeout)
    if isinstance(view.scan, Unknown):
        _unknown_volumes(health, volumes, f"smartctl --scan-open: {view.scan.reason}")
        return view
    by_host: dict[str, list[str]] = {}
    for name, description in volumes.items():
        by_host.setdefault(description.rsplit(" ", 1)[-1], []).append(name)
    jobs: dict[str, Callable[[], Any]] = {}
    for entry in view.scan:
        if entry.open_error is not None or not _PASSTHROUGH.match(entry.dtype):
            continue
        host = _host_of_entry(root, entry, devices)
        drive = ControllerDrive(address=f"{entry.path} -d {entry.dtype}", controller=host or "?",
                                driver=(drivers.get(host) or Unknown("not known")) if host else
                                Unknown("controller not known"))
        on_host = by_host.get(host, []) if host else sorted(volumes)
        drive.volumes = list(on_host)
        drive.placement = (f"the only volume of {host}" if host and len(on_host) == 1 else
                           f"which of {host}'s {len(on_host)} volumes holds it is not in "
                           "smartctl's output" if host and on_host else
                           f"{host} shows no volume: a drive of the controller alone" if host else
                           "its controller is not known: listed under every volume")
        view.drives.append(drive)
        jobs[drive.address] = partial(smart.collect, root, drive.address, timeout,
                                      smart.Address(entry.path, entry.dtype))
    _annotate(view)
    # each drive's smartctl may wait out its timeout on a stuck controller: side by side, live
    for address, drive_health in drives._run_jobs(jobs, parallel=root.live):
        health[address] = drive_health
    for name, description in volumes.items():
        behind = [d for d in view.drives if name in d.volumes]
        if behind and all(not isinstance(health.get(d.address), Unknown) for d in behind):
            health[name] = Unknown(f"logical volume of {description}: its health is that of "
                                   f"its drives ({', '.join(d.address for d in behind)})")
        elif not behind:
            _unknown_volumes(health, {name: description},
                             "smartctl --scan-open lists no drive behind its controller")
        else:
            unread = [f"{d.address}: {health[d.address].reason}" for d in behind
                      if isinstance(health.get(d.address), Unknown)]
            _unknown_volumes(health, {name: description}, "; ".join(unread))
    return view


def _annotate(view: ControllerView) -> None:
    """The CLI's word on each megaraid,N drive: its slot, state and drive group (N is its DID).
    One controller only: with several, a DID names a drive on each and says nothing alone."""
    report = view.cli
    if not isinstance(report, RaidCliReport) or len(report.controllers) != 1:
        return
    by_did = {d.did: d for d in report.controllers[0].drives if d.did is not None}
    for drive in view.drives:
        m = re.search(r"megaraid,(\d+)$", drive.address)
        pd = by_did.get(int(m[1])) if m else None
        if pd is not None:
            group = f" in DG {pd.dg}" if pd.dg is not None else ""
            drive.cli = f"{pd.slot} {DISK_STATES.get(pd.state, pd.state)}{group} ({report.tool})"


def _unknown_volumes(health: dict[str, Any], volumes: dict[str, str], why: str) -> None:
    """The volume's own answer (smartctl's words when it could not open it) and why its
    drives were not read."""
    for name, description in volumes.items():
        unread = f"logical volume of {description}: not all its physical drives were read ({why})"
        own = health.get(name)
        health[name] = smart.Unreadable(f"{own.reason}; {unread}" if isinstance(own, Unknown)
                                        and own.reason else unread)


def _host_of_entry(root: HostRoot, entry: ScanEntry, devices: dict[str, BlockDevice]) -> str | None:
    """The SCSI host a scan line reaches its drive through."""
    m = re.fullmatch(r"/dev/bus/(\d+)", entry.path)
    if m:
        return f"host{m[1]}"
    m = re.match(r"(?:sat\+)?aacraid,(\d+),", entry.dtype)
    if m:
        return f"host{m[1]}"
    name = entry.path.removeprefix("/dev/")
    if name in devices:
        return scsi_host(devices[name])
    if name.startswith("sg"):
        target = root.readlink(f"sys/class/scsi_generic/{name}/device")
        m = re.search(r"(\d+):\d+:\d+:\d+$", target or "")
        return f"host{m[1]}" if m else None
    return None
