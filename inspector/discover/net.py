"""Discovery of network interfaces and the network sysctls.

Per NIC, from /sys/class/net/IFACE: driver and bus (device/driver, device/subsystem links),
the kind of NIC (Xen netfront vif, virtio-net, physical, loopback, virtual ...), MTU,
txqueuelen, speed/duplex, operstate, admin state, carrier and carrier changes, the error and
drop counters of statistics/, queue counts, and every offload feature as `ethtool -k` lists it
(inspector.discover.net_offloads). The network sysctls come from inspector.discover.net_sysctl.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from inspector.discover.net_offloads import Offload, ethtool_offloads, read_feature_bits
from inspector.discover.net_sysctl import NetSysctl, collect_sysctls
from inspector.discover.nic_commands import NicCommands, absent
from inspector.model import Unknown
from inspector.roots.host import HostRoot, Unavailable

IFF_UP = 0x1
ARPHRD_LOOPBACK = 772
STAT_NAMES = ("rx_bytes", "rx_packets", "rx_errors", "rx_dropped",
              "tx_bytes", "tx_packets", "tx_errors", "tx_dropped")

# driver (device/driver link name) -> kind, for paravirtual NICs a hypervisor provides
PARAVIRT_DRIVERS = {"virtio_net": "virtio-net", "hv_netvsc": "hyperv-netvsc",
                    "vmxnet3": "vmxnet3", "ena": "aws-ena", "gve": "gcp-gve"}


@dataclass
class NicStats:
    """Counters of /sys/class/net/IFACE/statistics: totals since the interface was created."""
    rx_bytes: int | Unknown      # bytes received
    rx_packets: int | Unknown    # packets received
    rx_errors: int | Unknown     # bad packets received (CRC, frame, length, FIFO ... errors)
    rx_dropped: int | Unknown    # received but not processed (no buffer, unknown protocol ...)
    tx_bytes: int | Unknown      # bytes sent
    tx_packets: int | Unknown    # packets sent
    tx_errors: int | Unknown     # transmit problems (carrier, aborted, FIFO ... errors)
    tx_dropped: int | Unknown    # dropped on their way out, e.g. for lack of resources


@dataclass
class Nic:
    """A network interface of /sys/class/net."""
    name: str                  # interface name: eth0, ens3, lo, docker0 ...
    kind: str                  # xen-netfront, xen-netback, virtio-net, physical, loopback, virtual ...
    driver: str | Unknown      # kernel driver bound to the device (device/driver link name)
    bus: str | Unknown         # subsystem of the device: pci, virtio, xen, usb ...; "virtual" if none
    transport: str | None      # bus of the device's parent (virtio over pci or platform/mmio)
    devtype: str | None        # uevent DEVTYPE: bridge, bond, vlan, wlan ...
    device: str | None         # device link name: 0000:00:03.0, virtio2, vif-0
    mac: str | Unknown         # hardware address (address)
    mtu: int | Unknown         # largest IP packet in bytes, link-layer header not counted (mtu)
    tx_queue_len: int | Unknown  # packets the transmit queue holds (txqueuelen of ip link)
    speed_mbps: int | Unknown  # link speed in Mb/s (speed); Unknown: no carrier or not reported
    duplex: str | Unknown      # full | half (duplex); Unknown: no carrier or not reported
    operstate: str | Unknown   # RFC 2863 state: up, down, dormant, lowerlayerdown, unknown ...
    admin_up: bool | Unknown   # set up by the administrator (IFF_UP in flags, ip link set up)
    carrier: bool | Unknown    # link detected (carrier); Unknown "interface is down" when down
    carrier_changes: int | Unknown  # link up/down transitions since creation: flapping if rising
    rx_queues: int             # receive queues (queues/rx-*); 1 on a single-queue NIC
    tx_queues: int             # transmit queues (queues/tx-*)
    statistics: NicStats       # byte, packet, error and drop counters
    offloads: list[Offload] | Unknown  # offload features, as `ethtool -k` lists them
    evidence: list[str] = field(default_factory=list)   # why `kind` says what it says
    # a bridge's ports (brif/) or a bond's slaves (bonding/slaves); None for other interfaces
    ports: list[str] | None = None


@dataclass
class NetSection:
    """Network interfaces and the network sysctls."""
    nics: list[Nic] | Unknown          # every interface, in ifindex order
    sysctls: list[NetSysctl]           # the tuning-relevant sysctls beside their tuned values


def collect(root: HostRoot) -> NetSection:
    try:
        names = root.listdir("sys/class/net")
    except Exception as exc:  # Unavailable: no sysfs in this root
        return NetSection(nics=Unknown(f"/sys/class/net: {getattr(exc, 'reason', exc)}"),
                          sysctls=collect_sysctls(root))
    # a root that is not the live host may keep command outputs where its sysfs has gaps
    commands = None if root.live else NicCommands(root)
    nics = [collect_nic(root, name, commands) for name in names]
    nics.sort(key=lambda n: (_ifindex(root, n.name, commands), n.name))
    return NetSection(nics=nics, sysctls=collect_sysctls(root))


def _ifindex(root: HostRoot, name: str, commands: NicCommands | None = None) -> int:
    value = _attr_int(root, f"sys/class/net/{name}", name, "ifindex", commands)
    return value if isinstance(value, int) else 1 << 30


def _attr_line(root: HostRoot, base: str, name: str, attr: str,
               commands: NicCommands | None) -> str | Unknown:
    """/sys/class/net/NAME/ATTR; where the root lacks the file, what its commands printed."""
    value = root.try_line(f"{base}/{attr}")
    return commands.attr(name, attr) if commands is not None and absent(value) else value


def _attr_int(root: HostRoot, base: str, name: str, attr: str, commands: NicCommands | None,
              number_base: int = 10) -> int | Unknown:
    value = _attr_line(root, base, name, attr, commands)
    if isinstance(value, Unknown):
        return value
    try:
        return int(value, number_base)
    except ValueError:
        return Unknown(f"unparsable value {value[:40]!r} in /{base}/{attr}")


def collect_nic(root: HostRoot, name: str, commands: NicCommands | None = None) -> Nic:
    # Links are read at their real location (devices/...): a capture then holds the
    # class/net link and the device tree, never a path through a link.
    base = _real(root, f"sys/class/net/{name}")
    dev = f"{base}/device"
    devdir = _real(root, dev) if root.readlink(dev) is not None else None
    device = devdir.rsplit("/", 1)[-1] if devdir else None
    driver: str | Unknown = Unknown("no device (virtual interface)")
    bus: str | Unknown = "virtual"
    transport = None
    if devdir is not None:
        driver = root.link_name(f"{devdir}/driver") or Unknown("no driver bound")
        bus = root.link_name(f"{devdir}/subsystem") or Unknown("device has no subsystem link")
        parent = devdir.rsplit("/", 1)[0] if "/" in devdir else ""
        transport = root.link_name(f"{parent}/subsystem") if parent else None
    elif commands is not None:   # no device link kept: ethtool -i and ip -d link name it
        found = commands.device(name, base)
        if found is not None:
            driver, bus, device = found
    devtype = _uevent(root, base).get("DEVTYPE")
    if devtype is None and commands is not None and not root.exists(f"{base}/uevent"):
        devtype = commands.devtype(name)
    kind, evidence = classify(name, _attr_int(root, base, name, "type", commands), driver, bus,
                              device, devtype)
    flags = _attr_int(root, base, name, "flags", commands, 16)
    carrier = _attr_int(root, base, name, "carrier", commands)
    if isinstance(flags, int) and not flags & IFF_UP:
        # the kernel refuses the read (EINVAL) on a down interface; a capture cannot record
        # a refusal, so say why directly and live and capture agree
        carrier = Unknown("interface is down")
    return Nic(
        name=name, kind=kind, driver=driver, bus=bus, transport=transport, devtype=devtype,
        device=device, mac=_attr_line(root, base, name, "address", commands),
        mtu=_attr_int(root, base, name, "mtu", commands),
        tx_queue_len=_attr_int(root, base, name, "tx_queue_len", commands),
        speed_mbps=_speed(_attr_int(root, base, name, "speed", commands), carrier),
        duplex=_duplex(_attr_line(root, base, name, "duplex", commands), carrier),
        operstate=_attr_line(root, base, name, "operstate", commands),
        admin_up=bool(flags & IFF_UP) if isinstance(flags, int) else flags,
        carrier=carrier == 1 if isinstance(carrier, int) else carrier,
        carrier_changes=root.try_int(f"{base}/carrier_changes"),
        rx_queues=_queues(root, base, name, "rx", commands),
        tx_queues=_queues(root, base, name, "tx", commands),
        statistics=NicStats(*(root.try_int(f"{base}/statistics/{s}") for s in STAT_NAMES)),
        offloads=_offloads(root, name),
        evidence=evidence, ports=_ports(root, base, name, kind, commands))


def _queues(root: HostRoot, base: str, name: str, direction: str,
            commands: NicCommands | None) -> int:
    count = _count(root, f"{base}/queues", f"{direction}-")
    if count == 0 and commands is not None and not root.exists(f"{base}/queues"):
        return commands.queues(name, direction) or 0
    return count


def _ports(root: HostRoot, base: str, name: str, kind: str,
           commands: NicCommands | None = None) -> list[str] | None:
    if kind not in ("bridge", "bond"):
        return None
    sysfs_dir = "brif" if kind == "bridge" else "bonding"
    if commands is not None and not root.exists(f"{base}/{sysfs_dir}"):
        return commands.ports(name) or []   # no sysfs kept: the `master` of the others
    if kind == "bridge":
        return root.try_listdir(f"{base}/brif")
    slaves = root.try_line(f"{base}/bonding/slaves")
    return slaves.split() if isinstance(slaves, str) else []


def classify(name: str, arptype: int | Unknown, driver: str | Unknown, bus: str | Unknown,
             device: str | None, devtype: str | None) -> tuple[str, list[str]]:
    """The NIC's kind and the sysfs facts that say so."""
    drv = driver if isinstance(driver, str) else ""
    if arptype == ARPHRD_LOOPBACK or (name == "lo" and device is None):
        return "loopback", [f"type {arptype}"]
    if bus == "xen" and (drv in ("vif", "xen-netfront", "xen_netfront")
                         or (device or "").startswith("vif-")):
        return "xen-netfront", [f"driver {drv or 'unbound'} on bus xen",
                                f"/sys/bus/xen/devices/{device}"]
    if bus == "xen-backend":
        return "xen-netback", [f"driver {drv or 'unbound'} on bus xen-backend ({device})"]
    if drv in PARAVIRT_DRIVERS:
        return PARAVIRT_DRIVERS[drv], [f"driver {drv} on bus {bus}"]
    if device is None:
        return devtype or "virtual", ["no device link: a software interface"]
    return "physical", [f"driver {drv or 'unbound'} on bus {bus}"]


def _real(root: HostRoot, rel: str) -> str:
    try:
        return root.resolve(rel)
    except Unavailable:  # a link loop: read through the path as given
        return rel


def _offloads(root: HostRoot, name: str) -> list[Offload] | Unknown:
    rows = read_feature_bits(root, name)
    if isinstance(rows, Unknown):
        return rows
    try:
        return ethtool_offloads(rows)
    except (KeyError, TypeError, AttributeError) as exc:
        return Unknown(f"malformed ethtool_features fact: {exc}")


def _uevent(root: HostRoot, base: str) -> dict[str, str]:
    text = root.try_text(f"{base}/uevent")
    if isinstance(text, Unknown):
        return {}
    pairs = (line.split("=", 1) for line in text.splitlines() if "=" in line)
    return {k.strip(): v.strip() for k, v in pairs}


def _not_reported(link_up: bool) -> Unknown:
    """An unreadable speed/duplex (EINVAL live, absent in a capture) means "no link" on a NIC
    without carrier and "the driver has none" on the others (lo, ifb, netfront)."""
    return Unknown("not reported by the driver" if link_up else "not available (no carrier)")


def _speed(value: int | Unknown, carrier: int | Unknown) -> int | Unknown:
    if carrier == 0:   # no link, no speed: a veth still says 10000 with its peer down
        return _not_reported(False)
    # -1 (SPEED_UNKNOWN) and 0xffffffff come from drivers that do not know (virtio, Xen)
    if isinstance(value, int) and (value <= 0 or value >= 0xFFFFFFFF):
        return Unknown("not reported by the driver")
    return _not_reported(carrier == 1) if isinstance(value, Unknown) else value


def _duplex(value: str | Unknown, carrier: int | Unknown) -> str | Unknown:
    if carrier == 0:
        return _not_reported(False)
    if value == "unknown":
        return Unknown("not reported by the driver")
    return _not_reported(carrier == 1) if isinstance(value, Unknown) else value


def _count(root: HostRoot, rel: str, prefix: str) -> int:
    return sum(1 for entry in root.try_listdir(rel) if entry.startswith(prefix))
