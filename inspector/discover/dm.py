"""device-mapper devices from /sys/block/dm-N/dm: name, uuid, kind, suspended, striping.

The kind comes from the uuid prefix that the owning subsystem sets (LVM-, CRYPT-LUKS2-, mpath-,
partN-mpath- ...), the same rule lsblk uses for its TYPE column. The table itself is not in
sysfs (it needs the dm ioctl); striping is inferred from the queue limits the target exports:
minimum_io_size = stripe (chunk) size, optimal_io_size = stripe size x number of stripes.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from inspector.discover.block import QueueLimits
from inspector.discover.dmsetup_text import dm_info
from inspector.model import Unknown, known
from inspector.roots.host import HostRoot, int_of_line


@dataclass
class Striping:
    """Striping inferred from the queue limits a dm target exports."""
    stripe_bytes: int          # per-device chunk (minimum_io_size)
    stripes: int               # optimal_io_size / minimum_io_size
    width_bytes: int           # optimal_io_size


@dataclass
class DmDevice:
    """A device-mapper device (/sys/block/dm-N/dm)."""
    name: str                          # kernel name, dm-N
    dm_name: str | Unknown             # device-mapper name: /dev/mapper/<dm_name>
    uuid: str | None | Unknown         # dm/uuid, set by the owner (LVM-..., CRYPT-...); None: unset
    kind: str                          # lvm crypt mpath part dm ...
    detail: str | None                 # LUKS2, PLAIN, partition 1 of mpath ...
    suspended: bool | Unknown          # I/O is frozen (dm/suspended): every request to it hangs
    slaves: list[str] = field(default_factory=list)  # the devices its table maps onto
    # stripes inferred from the queue limits (dm's table needs an ioctl); None: not striped
    striping: Striping | None = None


def kind_from_uuid(uuid: str | None) -> tuple[str, str | None]:
    """("crypt", "LUKS2") from "CRYPT-LUKS2-<uuid>-<name>"; ("dm", None) when there is no prefix."""
    if not uuid or "-" not in uuid:
        return "dm", None
    prefix, rest = uuid.split("-", 1)
    upper = prefix.upper()
    if upper == "LVM":
        return "lvm", None
    if upper == "CRYPT":
        sub = rest.split("-", 1)[0].upper()
        return "crypt", sub or None
    if upper == "MPATH":
        return "mpath", None
    if upper.startswith("PART") and upper[4:].isdigit():
        owner = rest.split("-", 1)[0].lower()
        return "part", f"partition {upper[4:]} of {owner}"
    if upper == "DMRAID":
        return "dmraid", None
    if upper == "STRATIS":
        return "stratis", None
    return prefix.lower() or "dm", None


def striping_from_limits(queue: QueueLimits) -> Striping | None:
    minimum, optimal = queue.minimum_io_size, queue.optimal_io_size
    if not (known(minimum) and known(optimal)) or minimum <= 0 or optimal <= 0:
        return None
    if optimal % minimum or optimal // minimum < 2:
        return None
    return Striping(stripe_bytes=minimum, stripes=optimal // minimum, width_bytes=optimal)


def read_dm(root: HostRoot, name: str, slaves: list[str], queue: QueueLimits) -> DmDevice:
    base = f"sys/block/{name}/dm"
    uuid: str | Unknown | None
    uuid, suspended_line, dm_name = root.try_lines(base, ("uuid", "suspended", "name"))
    if isinstance(uuid, str) and not uuid or isinstance(uuid, Unknown) and uuid.reason == "not present":
        uuid = None
    kind, detail = kind_from_uuid(uuid if isinstance(uuid, str) else None)
    suspended = int_of_line(suspended_line, f"{base}/suspended")
    if known(suspended):
        suspended = (bool(suspended) if suspended in (0, 1) else
                     Unknown(f"unexpected value {suspended} in /{base}/suspended"))
    if not root.live and isinstance(dm_name, Unknown) and dm_name.reason == "not present":
        # no dm/ in this root's sysfs (a sosreport): what `dmsetup info -c` printed
        info = dm_info(root, name)
        dm_name = info.name if not isinstance(info, Unknown) else info
        if not isinstance(info, Unknown):
            uuid, suspended = info.uuid, info.suspended
            kind, detail = kind_from_uuid(uuid if isinstance(uuid, str) else None)
    return DmDevice(name=name, dm_name=dm_name, uuid=uuid, kind=kind,
                    detail=detail, suspended=suspended, slaves=list(slaves),
                    striping=striping_from_limits(queue))
