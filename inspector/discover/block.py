"""Block devices from /sys/block: attributes, partitions, mounts, swap and the lsblk tree.

Enumeration reads /sys/dev/block once (its links give every device's major:minor, sysfs path
and, for partitions, the parent disk) instead of a `dev` read and a directory scan per device;
per device we read only the attributes that matter for its family. Holders are derived from
slaves (the same edges seen from the other end), so each device costs one `slaves` listing.
Nothing here raises: unreadable or garbage values become Unknown(reason).
"""
from __future__ import annotations

import functools
import posixpath
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from inspector.discover.block_sizes import PartitionTables
from inspector.discover.block_stacks import complete_stacks
from inspector.model import Unknown, known
from inspector.roots.host import HostRoot, Unavailable

SECTOR_BYTES = 512  # /sys/block/*/size is always in 512-byte sectors, whatever the block size
ATTRIBUTE_BYTES = 4096  # a sysfs attribute is at most a page

# PCIe flash cards sit on their PCI function, whose `vendor` is a PCI id, not a name.
_PCI_VENDORS = {"0x19e5": "Huawei", "0x1aed": "Fusion-io"}

# Only stacked devices have slaves (dm, md, and the unrecognised: bcache, drbd ...).
_MAY_HAVE_SLAVES = ("dm", "md", "other")

# Families that never set the removable flag (the kernel hard-codes it off for them).
_NEVER_REMOVABLE = ("dm", "md", "loop", "zram")


@dataclass
class QueueLimits:
    """I/O size limits of the device's request queue (/sys/block/X/queue/*), all in bytes."""
    logical_block_size: int | Unknown   # smallest addressable unit, bytes (512 or 4096)
    physical_block_size: int | Unknown  # smallest unit written without read-modify-write, bytes
    # preferred minimum I/O size in bytes: the RAID/dm chunk size, else the physical block size
    minimum_io_size: int | Unknown
    # preferred I/O size in bytes for sustained I/O (RAID full stripe); 0 when none is advertised
    optimal_io_size: int | Unknown


@dataclass
class Mount:
    """One line of /proc/self/mountinfo that mounts this device."""
    mountpoint: str         # where it is mounted (mountinfo field 5, octal escapes decoded)
    fstype: str             # filesystem type: ext4, xfs, btrfs ...
    source: str             # mount source as mountinfo gives it: /dev/sda1, /dev/mapper/vg-lv ...
    options: str            # per-mount options (rw,relatime ...)
    read_only: bool         # "ro" is among the per-mount options


@dataclass
class Swap:
    """One active swap area, a line of /proc/swaps."""
    filename: str           # swap device or file path (/dev/sda2, /dev/dm-1, /swapfile)
    type: str               # partition | file
    size_kib: int | Unknown  # size in KiB (/proc/swaps Size)
    used_kib: int | Unknown  # KiB in use now (/proc/swaps Used)
    priority: int | Unknown  # higher is used first; equal priorities are striped (/proc/swaps)


@dataclass
class BlockDevice:
    """A whole device of /sys/block or one of its partitions, as lsblk lists it."""
    name: str                       # kernel name: sda, sda1, nvme0n1, dm-0, md0 ...
    type: str                       # lsblk TYPE: disk part loop rom lvm crypt mpath dm raid1 ...
    # driver family, from the name and sysfs path: nvme virtio xen flash-hio flash-fio zram loop
    # md dm scsi ata usb ...
    family: str
    maj_min: str | Unknown          # device number "major:minor" (/sys/dev/block, else X/dev)
    sysfs_path: str | Unknown       # sys/devices/... inside the root
    size_bytes: int | Unknown       # capacity in bytes (/sys/block/X/size x 512)
    read_only: bool | Unknown       # the kernel refuses writes (/sys/block/X/ro)
    removable: bool | Unknown       # removable media (/sys/block/X/removable; dm md loop zram: no)
    rotational: bool | Unknown      # spinning disk per queue/rotational (virtual disks may lie)
    # I/O scheduler in use, the [selected] one of queue/scheduler; None when the queue has none
    scheduler: str | None | Unknown
    schedulers: list[str]           # all I/O schedulers queue/scheduler offers (part: its disk's)
    queue: QueueLimits              # request queue limits; a partition shares its disk's
    model: str | None | Unknown = None   # device/model (SCSI ATA NVMe flash); None: kind has none
    vendor: str | None | Unknown = None  # device/vendor; flash cards' PCI id named (Huawei ...)
    serial: str | None | Unknown = None  # serial number from sysfs (NVMe, virtio, flash cards)
    wwn: str | None | Unknown = None     # world wide id (SCSI device/wwid, NVMe wwid)
    state: str | None | Unknown = None        # SCSI device state (running, offline, blocked ...)
    parent: str | None = None                 # the disk of a partition
    partition_number: int | None | Unknown = None  # a partition's number (X/partition); None: disk
    start_sector: int | None | Unknown = None  # first 512-byte sector on its disk (X/start)
    partitions: list[str] = field(default_factory=list)  # names of this disk's partitions
    slaves: list[str] = field(default_factory=list)   # devices it is built on (X/slaves: dm, md)
    # where `slaves` came from when the root has no X/slaves (a sosreport): the sources that
    # named them ("holders/ of the lower devices, dmsetup ls --tree, lsblk"); None: sysfs slaves/
    slaves_source: str | None = None
    holders: list[str] = field(default_factory=list)  # devices built on it (dm, md over this one)
    children: list[str] = field(default_factory=list)  # partitions then holders, as lsblk
    mounts: list[Mount] = field(default_factory=list)  # where it is mounted (mountinfo)
    swap: Swap | None = None        # its /proc/swaps entry when it is an active swap device
    loop_backing_file: str | None | Unknown = None  # a loop device's file (loop/backing_file)
    # udev properties ID_*, DM_*, MD_*, DEVTYPE, DEVLINKS (live via pyudev, or from the capture);
    # None when not read
    udev: dict[str, str] | Unknown | None = None


@dataclass
class BlockInventory:
    devices: dict[str, BlockDevice]
    roots: list[str]
    swaps: list[Swap]
    problems: list[str]


# ----------------------------------------------------------------------------- small readers
def _optional(value: Any) -> Any:
    """A missing attribute is None (sysfs simply does not have it); other failures stay Unknown."""
    if isinstance(value, Unknown) and value.reason == "not present":
        return None
    return value


def _line(root: HostRoot, rel: str) -> str | Unknown:
    """First line of a sysfs attribute. HostRoot.try_line without its layers: this runs ~15
    times per device, and a multipath host has thousands of devices."""
    return _line_of(_read(root, rel))


def _read(root: HostRoot, rel: str) -> bytes | Unavailable:
    try:
        return root.read_bytes(rel, ATTRIBUTE_BYTES)
    except Unavailable as exc:
        return exc


def _line_of(data: bytes | Unavailable) -> str | Unknown:
    if isinstance(data, Unavailable):
        return Unknown(data.reason)
    return data.split(b"\n", 1)[0].decode("utf-8", "replace").strip()


# The parsers of a read's result take the file's directory and name apart: its path is
# only needed to explain a bad value, and joining them for every read costs more than that.
def _int_of(data: bytes | Unavailable, directory: str, name: str) -> int | Unknown:
    if isinstance(data, Unavailable):
        return Unknown(data.reason)
    try:
        return int(data)  # int() takes bytes and ignores the trailing newline
    except ValueError:
        text = data.split(b"\n", 1)[0].decode("utf-8", "replace").strip()
        return Unknown(f"unparsable value {text[:40]!r} in /{directory}/{name}")


def _bool_of(data: bytes | Unavailable, directory: str, name: str) -> bool | Unknown:
    value = _int_of(data, directory, name)
    if value == 0 or value == 1:
        return value == 1
    if isinstance(value, Unknown):
        return value
    return Unknown(f"unexpected value {value} in /{directory}/{name}")


def _positive_int_of(data: bytes | Unavailable, directory: str, name: str) -> int | Unknown:
    value = _int_of(data, directory, name)
    if isinstance(value, int) and value < 0:
        return Unknown(f"negative value {value} in /{directory}/{name}")
    return value


def _size_of(data: bytes | Unavailable, directory: str) -> int | Unknown:
    sectors = _positive_int_of(data, directory, "size")
    return sectors * SECTOR_BYTES if known(sectors) else sectors


def parse_scheduler(text: str) -> tuple[str | None, list[str]]:
    """`none [mq-deadline] kyber` -> ("mq-deadline", [all]); "none" alone -> ("none", ["none"])."""
    selected, names = _scheduler_parts(text)
    return selected, list(names)


@functools.lru_cache(maxsize=64)    # a host's devices offer the same few lines
def _scheduler_parts(text: str) -> tuple[str | None, tuple[str, ...]]:
    names = tuple(w.strip("[]") for w in text.split())
    selected = [w.strip("[]") for w in text.split() if w.startswith("[") and w.endswith("]")]
    if selected:
        return selected[0], names
    if len(names) == 1:
        return names[0], names
    return None, names


def family_of(name: str, sysfs_path: str | Unknown) -> str:
    path = sysfs_path if isinstance(sysfs_path, str) else ""
    prefixes = (("nvme", "nvme"), ("xvd", "xen"), ("vd", "virtio"), ("hio", "flash-hio"),
                ("fio", "flash-fio"), ("zram", "zram"), ("loop", "loop"), ("md", "md"),
                ("dm-", "dm"), ("sr", "rom"), ("mmcblk", "mmc"), ("nbd", "nbd"), ("rbd", "rbd"),
                ("ram", "ram"))
    for prefix, family in prefixes:
        if name.startswith(prefix):
            return family
    if name.startswith("sd"):
        if "/usb" in path:
            return "usb"
        if "/ata" in path:
            return "ata"
        return "scsi"
    if "/virtio" in path:
        return "virtio"
    if "/vbd-" in path:
        return "xen"
    return "other"


def dm_type_from_uuid(uuid: str | None) -> str:
    """lsblk's TYPE for a dm device: the uuid prefix, lower-cased; partN- (kpartx) -> part."""
    if not uuid or "-" not in uuid:
        return "dm"
    prefix = uuid.split("-", 1)[0].lower()
    if prefix.startswith("part"):
        return "part"
    return prefix or "dm"


# ----------------------------------------------------------------------------- enumeration
def _device_map(root: HostRoot, problems: list[str]) -> dict[str, tuple[str, str]]:
    """name -> (maj:min, sysfs path) from the links of /sys/dev/block (one listing)."""
    out: dict[str, tuple[str, str]] = {}
    try:
        entries = root.listdir("sys/dev/block")
    except Unavailable as exc:
        problems.append(f"/sys/dev/block: {exc.reason}; reading each device's dev file instead")
        return out
    for majmin, target in zip(entries, root.readlinks("sys/dev/block", entries)):
        if not target:
            continue
        if target.startswith("../../devices/") and "/." not in target[13:]:
            path = "sys/" + target[6:]  # the kernel's own shape: no normpath needed
        else:
            path = _normalise(f"sys/dev/block/{target}" if not target.startswith("/") else target)
        out[path.rpartition("/")[2]] = (majmin, path)
    return out


def _normalise(path: str) -> str:
    path = posixpath.normpath(path.lstrip("/"))
    while path.startswith("../"):
        path = path[3:]
    return path


def _whole_device_path(root: HostRoot, name: str, devmap: dict) -> tuple[str | Unknown, str | Unknown]:
    if name in devmap:
        mapped_majmin, mapped_path = devmap[name]
        return mapped_majmin, mapped_path
    target = root.readlink(f"sys/block/{name}")
    path: str | Unknown = (_normalise(f"sys/block/{target}" if not target.startswith("/") else target)
                           if target else Unknown("sys/block entry is not a link"))
    majmin = _line(root, f"sys/block/{name}/dev")
    return majmin, path


def _partitions_by_scan(root: HostRoot, name: str,
                        tables: PartitionTables | None = None) -> list[str]:
    """Fallback when /sys/dev/block is missing: partitions are sub-directories named after the
    disk; on a root without them (a sosreport), the ones /proc/partitions lists."""
    found = [e for e in root.try_listdir(f"sys/block/{name}") if e.startswith(name) and e != name]
    return found if found or tables is None else tables.partitions_of(name)


def collect_block(root: HostRoot, *, with_udev: bool = True) -> BlockInventory:
    problems: list[str] = []
    try:
        names = sorted(root.listdir("sys/block"), key=device_order)
    except Unavailable as exc:
        return BlockInventory({}, [], [], [f"/sys/block: {exc.reason}"])
    devmap = _device_map(root, problems)
    whole = set(names)
    # a root that is not the live host may lack sysfs sizes but keep /proc/partitions
    tables = None
    if not root.live:
        tables = PartitionTables(root)

    # Partitions: entries of /sys/dev/block whose parent directory is a whole device.
    parts_of: dict[str, list[str]] = {n: [] for n in names}
    for pname, (_, path) in devmap.items():
        parent = posixpath.basename(posixpath.dirname(path))
        if pname not in whole and parent in parts_of:
            parts_of[parent].append(pname)
    for n in names:
        if n not in devmap:  # no /sys/dev/block (or this device is missing from it)
            parts_of[n] = _partitions_by_scan(root, n, tables)

    devices: dict[str, BlockDevice] = {}
    for name in names:
        dev = _read_whole(root, name, devmap)
        devices[name] = dev
        for pname in sorted(parts_of[name], key=_natural_key):
            devices[pname] = _read_partition(root, dev, pname, devmap)
            dev.partitions.append(pname)
    if tables is not None:
        tables.fill(devices)
        complete_stacks(root, devices, problems)

    _link_holders(devices, problems)
    mounts_by_devno, mounts_by_source, mount_problem = _read_mounts(root)
    if mount_problem:
        problems.append(mount_problem)
    swaps, swap_problem = read_swaps(root)
    if swap_problem:
        problems.append(swap_problem)
    _attach_mounts(devices, mounts_by_devno, mounts_by_source)
    _attach_swaps(devices, swaps, {})  # /dev/mapper names: attach_mapper_names
    if with_udev:
        _attach_udev(root, devices)
    roots = [n for n in names if not devices[n].slaves]
    return BlockInventory(devices=devices, roots=roots, swaps=swaps, problems=problems)


_LETTER_NAMED = re.compile(r"(sd|vd|xvd|hd|hio|fio)([a-z]+)")


def device_order(name: str) -> tuple:
    """The kernel's order: sdz before sdaa, nvme2n1 before nvme10n1."""
    m = _LETTER_NAMED.fullmatch(name)
    if m:
        return (m[1], len(m[2]), m[2])
    return _natural_key(name)


_DIGIT_RUNS = re.compile(r"(\d+)")


def _natural_key(name: str) -> tuple:
    """Digit runs compare as numbers: nvme2n1 < nvme10n1, sda2 < sda10."""
    parts = _DIGIT_RUNS.split(name)
    return tuple(int(p) if i % 2 else p for i, p in enumerate(parts))


_QUEUE_FILES = ("queue/logical_block_size", "queue/physical_block_size", "queue/minimum_io_size",
                "queue/optimal_io_size", "queue/rotational", "queue/scheduler")
# What _set_identity reads, by family, under the device's directory.
_DEVICE_IDS = ("device/model", "device/vendor", "device/wwid", "device/state")
_IDENTITY_FILES = {"scsi": _DEVICE_IDS, "ata": _DEVICE_IDS, "usb": _DEVICE_IDS, "rom": _DEVICE_IDS,
                   "nvme": ("device/model", "device/serial", "wwid"),
                   "virtio": ("serial",),
                   "flash-hio": ("device/model", "device/vendor", "device/serial"),
                   "flash-fio": ("device/model", "device/vendor", "device/serial"),
                   "mmc": ("device/model", "device/vendor", "device/serial"),
                   "loop": ("loop/backing_file",)}


def _queue_of(data: Sequence[bytes | Unavailable], base: str
              ) -> tuple[QueueLimits, bool | Unknown, str | None | Unknown, list[str]]:
    """Limits, rotational and schedulers from the reads of _QUEUE_FILES."""
    logical, physical, minimum, optimal, rotational_data, scheduler_data = data
    limits = QueueLimits(
        logical_block_size=_positive_int_of(logical, base, _QUEUE_FILES[0]),
        physical_block_size=_positive_int_of(physical, base, _QUEUE_FILES[1]),
        minimum_io_size=_positive_int_of(minimum, base, _QUEUE_FILES[2]),
        optimal_io_size=_positive_int_of(optimal, base, _QUEUE_FILES[3]))
    rotational = _bool_of(rotational_data, base, _QUEUE_FILES[4])
    sched_text = _line_of(scheduler_data)
    if isinstance(sched_text, Unknown):
        return limits, rotational, _optional(sched_text), []
    selected, names = parse_scheduler(sched_text)
    if selected is None:
        return limits, rotational, Unknown(f"no [selected] scheduler in {sched_text[:60]!r}"), names
    return limits, rotational, selected, names


def _read_whole(root: HostRoot, name: str, devmap: dict) -> BlockDevice:
    majmin, path = _whole_device_path(root, name, devmap)
    # Read through the real directory: the kernel then skips the sys/block link on every open.
    base = path if isinstance(path, str) else f"sys/block/{name}"
    family = family_of(name, path)
    never_removable = family in _NEVER_REMOVABLE
    # one batch for the device's own files, its queue/ and what identifies it
    files = _WHOLE_FILES.get(family) or _whole_files(family)
    data = root.read_many(base, files, ATTRIBUTE_BYTES)
    queue_at = 2 if never_removable else 3
    removable = False if never_removable else _bool_of(data[2], base, "removable")
    limits, rotational, scheduler, schedulers = _queue_of(data[queue_at:queue_at + 6], base)
    dev = BlockDevice(name=name, type="disk", family=family, maj_min=majmin, sysfs_path=path,
                      size_bytes=_size_of(data[0], base), read_only=_bool_of(data[1], base, "ro"),
                      removable=removable, rotational=rotational, scheduler=scheduler,
                      schedulers=schedulers, queue=limits)
    if family in _MAY_HAVE_SLAVES:  # disks and flash cards sit at the bottom of every stack
        dev.slaves = sorted(root.try_listdir(f"{base}/slaves"), key=_natural_key)
    _set_identity(dev, [_optional_line(d) for d in data[queue_at + 6:]])
    return dev


_WHOLE_FILES: dict[str, tuple[str, ...]] = {}


def _whole_files(family: str) -> tuple[str, ...]:
    """What _read_whole reads of a device of `family`, in its order."""
    own = ("size", "ro") if family in _NEVER_REMOVABLE else ("size", "ro", "removable")
    files = _WHOLE_FILES[family] = own + _QUEUE_FILES + _IDENTITY_FILES.get(family, ())
    return files


def _optional_line(data: bytes | Unavailable) -> str | None | Unknown:
    """_optional(_line_of(data)) in one call: run for every identity file."""
    if isinstance(data, Unavailable):
        return None if data.reason == "not present" else Unknown(data.reason)
    return data.split(b"\n", 1)[0].decode("utf-8", "replace").strip()


def _set_identity(dev: BlockDevice, lines: list[Any]) -> None:
    """Model/vendor/serial/wwn and the lsblk TYPE from the first lines of the family's
    _IDENTITY_FILES (None where a file is absent)."""
    family = dev.family
    if family in ("scsi", "ata", "usb", "rom"):
        dev.model, dev.vendor, dev.wwn, dev.state = lines
        dev.type = "rom" if family == "rom" else "disk"
    elif family == "nvme":
        dev.model, dev.serial, dev.wwn = lines
    elif family == "virtio":
        dev.serial = lines[0]
    elif family in ("flash-hio", "flash-fio", "mmc"):
        dev.model, vendor, dev.serial = lines
        dev.vendor = _PCI_VENDORS.get(vendor, vendor) if isinstance(vendor, str) else vendor
    elif family == "loop":
        dev.type = "loop"
        dev.loop_backing_file = lines[0]
    # md and dm types are set by md.py / dm.py, which read md/level and dm/uuid anyway.


def _read_partition(root: HostRoot, disk: BlockDevice, name: str, devmap: dict) -> BlockDevice:
    disk_base = disk.sysfs_path if isinstance(disk.sysfs_path, str) else f"sys/block/{disk.name}"
    base = f"{disk_base}/{name}"
    majmin, path = devmap.get(name, (None, None))
    if majmin is None:
        majmin = _line(root, f"{base}/dev")
        path = (f"{disk.sysfs_path}/{name}" if isinstance(disk.sysfs_path, str)
                else Unknown("parent path unknown"))
    size, ro, number, start = root.read_many(base, ("size", "ro", "partition", "start"),
                                             ATTRIBUTE_BYTES)
    # A partition shares its disk's request queue: sysfs has no queue/ under it.
    return BlockDevice(name=name, type="part", family=disk.family, maj_min=majmin, sysfs_path=path,
                       size_bytes=_size_of(size, base), read_only=_bool_of(ro, base, "ro"),
                       removable=disk.removable, rotational=disk.rotational,
                       scheduler=disk.scheduler, schedulers=list(disk.schedulers), queue=disk.queue,
                       parent=disk.name,
                       partition_number=_optional(_int_of(number, base, "partition")),
                       start_sector=_optional(_int_of(start, base, "start")))


def _link_holders(devices: dict[str, BlockDevice], problems: list[str]) -> None:
    for dev in devices.values():
        for slave in dev.slaves:
            lower = devices.get(slave)
            if lower is None:
                problems.append(f"{dev.name}: slave {slave} is not a known block device")
                continue
            lower.holders.append(dev.name)
    for dev in devices.values():
        dev.holders.sort(key=_natural_key)
        dev.children = dev.partitions + dev.holders


# ----------------------------------------------------------------------------- mounts and swap
def _unescape(text: str) -> str:
    """Octal escapes of mountinfo and /proc/swaps (\\040 for a space ...)."""
    if "\\" not in text:
        return text
    out, i = [], 0
    while i < len(text):
        if text[i] == "\\" and i + 4 <= len(text) and text[i + 1:i + 4].isdigit():
            try:
                out.append(chr(int(text[i + 1:i + 4], 8)))
                i += 4
                continue
            except ValueError:
                pass
        out.append(text[i])
        i += 1
    return "".join(out)


def parse_mountinfo(text: str) -> list[tuple[str, Mount]]:
    """(maj:min, Mount) per well-formed line of /proc/self/mountinfo; bad lines are skipped."""
    out: list[tuple[str, Mount]] = []
    for line in text.splitlines():
        fields = line.split()
        if "-" not in fields:
            continue
        sep = fields.index("-")
        if sep < 6 or len(fields) < sep + 3:
            continue
        options = fields[5]
        out.append((fields[2], Mount(mountpoint=_unescape(fields[4]), fstype=fields[sep + 1],
                                     source=_unescape(fields[sep + 2]), options=options,
                                     read_only="ro" in options.split(","))))
    return out


def _read_mounts(root: HostRoot) -> tuple[dict, dict, str | None]:
    text = root.try_text("proc/self/mountinfo")
    if isinstance(text, Unknown):
        return {}, {}, f"/proc/self/mountinfo: {text.reason}; mountpoints unknown"
    by_devno: dict[str, list[Mount]] = {}
    by_source: dict[str, list[Mount]] = {}
    for majmin, mount in parse_mountinfo(text):
        by_devno.setdefault(majmin, []).append(mount)
        if mount.source.startswith("/dev/"):
            by_source.setdefault(mount.source[5:], []).append(mount)
    return by_devno, by_source, None


def _attach_mounts(devices: dict[str, BlockDevice], by_devno: dict, by_source: dict) -> None:
    for dev in devices.values():
        mounts = by_devno.get(dev.maj_min, []) if isinstance(dev.maj_min, str) else []
        if not mounts:  # btrfs and friends report an anonymous 0:N device: match the source
            mounts = by_source.get(dev.name, [])
        dev.mounts = list(mounts)


def parse_swaps(text: str) -> list[Swap]:
    swaps: list[Swap] = []
    for line in text.splitlines()[1:]:
        fields = line.split()
        if len(fields) < 5:
            continue
        swaps.append(Swap(filename=_unescape(fields[0]), type=fields[1], size_kib=_int_or_unknown(fields[2]),
                          used_kib=_int_or_unknown(fields[3]), priority=_int_or_unknown(fields[4])))
    return swaps


def _int_or_unknown(text: str) -> int | Unknown:
    try:
        return int(text)
    except ValueError:
        return Unknown(f"unparsable value {text[:40]!r}")


def read_swaps(root: HostRoot) -> tuple[list[Swap], str | None]:
    text = root.try_text("proc/swaps")
    if isinstance(text, Unknown):
        return [], f"/proc/swaps: {text.reason}; swap unknown"
    return parse_swaps(text), None


def _attach_swaps(devices: dict[str, BlockDevice], swaps: Iterable[Swap], dm_names: dict[str, str]) -> None:
    for swap in swaps:
        name = swap_device_name(swap.filename, dm_names)
        if name in devices:
            devices[name].swap = swap


def swap_device_name(filename: str, dm_names: dict[str, str]) -> str | None:
    """/dev/sda2 -> sda2, /dev/mapper/vg-swap -> dm-N (via dm names), files -> None."""
    if filename.startswith("/dev/mapper/"):
        return dm_names.get(filename[len("/dev/mapper/"):])
    if filename.startswith("/dev/"):
        return filename[5:]
    return None


def attach_mapper_names(inventory: BlockInventory, dm_names: dict[str, str]) -> None:
    """Second pass once dm names are known: /dev/mapper/X swaps and mount sources."""
    for swap in inventory.swaps:
        name = swap_device_name(swap.filename, dm_names)
        if name in inventory.devices and inventory.devices[name].swap is None:
            inventory.devices[name].swap = swap


# ----------------------------------------------------------------------------- udev
_UDEV_KEYS = ("ID_", "DM_", "MD_")


def _attach_udev(root: HostRoot, devices: dict[str, BlockDevice]) -> None:
    """udev properties (pyudev) live; from the capture's sidecar otherwise."""
    context: list[Any] = []

    def producer(name: str):
        def produce() -> dict | Unknown:
            try:
                import pyudev
                if not context:
                    context.append(pyudev.Context())
                props = pyudev.Devices.from_name(context[0], "block", name).properties
                return {k: props[k] for k in sorted(props)
                        if k.startswith(_UDEV_KEYS) or k in ("DEVTYPE", "DEVLINKS")}
            except Exception as exc:  # no udev, no such device, permission ...
                return Unknown(f"udev: {type(exc).__name__}: {exc}")
        return produce

    for name, dev in devices.items():
        try:
            dev.udev = root.fact("udev", name, producer(name))
        except Exception as exc:
            dev.udev = Unknown(f"udev: {type(exc).__name__}: {exc}")
        if not root.live and isinstance(dev.udev, Unknown) and \
                dev.udev.reason.startswith("not recorded in capture"):
            # a capture without udev facts (or a plain sysroot tree): none of the others has
            # one (a sosreport may keep `udevadm info` of some devices: each answers for itself)
            missing = Unknown("udev properties not recorded in this capture")
            for other in devices.values():
                other.udev = missing
            return
