"""NIC attributes a root's sysfs lacks, from the command outputs it kept instead.

A sosreport copies only `flags` and `statistics/` of /sys/class/net/IFACE, but keeps what
`ip -s -d link`, `ethtool -i IFACE` and `ethtool IFACE` printed. On a root that is not the
live host, the NIC collector asks here for what sysfs does not have: values come back in
sysfs's shape, or Unknown with the reason the command output is missing ("not in this
sosreport (command ip -s -d link)"). Live, sysfs always answers and nothing here runs.
"""
from __future__ import annotations

import re

from inspector.discover.ethtool_text import duplex, key_values, speed_mbps
from inspector.discover.ip_link import Link, parse_ip_link
from inspector.model import Unknown
from inspector.roots.host import HostRoot

# the forms sos and people save, most detailed first (sos 4.x: -s -d; sos 3.x: -s, or none)
IP_LINK_COMMANDS = (["ip", "-s", "-d", "link"], ["ip", "-d", "link"], ["ip", "-s", "link"],
                    ["ip", "link"], ["ip", "-o", "link"])
_PCI_ADDRESS = re.compile(r"^[0-9a-f]{4,}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$", re.I)


def absent(value: object) -> bool:
    """A sysfs read that failed because the root does not hold the file."""
    return isinstance(value, Unknown) and value.reason == "not present"


class NicCommands:
    def __init__(self, root: HostRoot):
        self.root = root
        self._links: dict[str, Link] | Unknown | None = None
        self._ethtool: dict[tuple[str, str], dict[str, str] | Unknown] = {}

    def links(self) -> dict[str, Link] | Unknown:
        if self._links is None:
            first: Unknown | None = None
            for argv in IP_LINK_COMMANDS:
                result = self.root.run(argv)
                parsed = parse_ip_link(result.stdout) if result.ok else {}
                if parsed:
                    self._links = parsed
                    break
                if first is None:
                    first = Unknown(result.error or f"{' '.join(argv)} listed no interface")
            else:
                self._links = first or Unknown("no ip link output")
        return self._links

    def attr(self, name: str, attr: str) -> str | Unknown:
        """What sysfs's /sys/class/net/NAME/ATTR would say, from `ip link` or `ethtool NAME`."""
        if attr in ("speed", "duplex"):
            settings = self.ethtool(name, "")
            if isinstance(settings, Unknown):
                return settings
            value = (speed_mbps(settings.get("Speed")) if attr == "speed"
                     else duplex(settings.get("Duplex")))
            return Unknown(f"ethtool {name} does not say") if value is None else str(value)
        links = self.links()
        if isinstance(links, Unknown):
            return links
        link = links.get(name)
        if link is None:
            return Unknown(f"{name} is not in the ip link output")
        value = link.sysfs(attr)
        return value if value is not None else Unknown(f"not in the ip link output ({attr})")

    def ethtool(self, name: str, option: str) -> dict[str, str] | Unknown:
        """`ethtool [OPTION] NAME` as key: value pairs."""
        if (name, option) not in self._ethtool:
            result = self.root.run(["ethtool", *([option] if option else []), name])
            if result.error:
                self._ethtool[(name, option)] = Unknown(result.error)
            elif not result.ok:
                self._ethtool[(name, option)] = Unknown(
                    f"ethtool {option + ' ' if option else ''}{name} failed: "
                    + (result.stdout.strip().splitlines() or ["no output"])[0][:100])
            else:
                self._ethtool[(name, option)] = key_values(result.stdout)
        return self._ethtool[(name, option)]

    def device(self, name: str, base: str) -> tuple[str | Unknown, str | Unknown, str | None] | None:
        """(driver, bus, device name) of a NIC whose sysfs has no `device` link; None for a
        software interface (its sysfs directory is under devices/virtual, as the kernel puts it)."""
        if "/devices/virtual/" in f"/{base}/":
            return None
        info = self.ethtool(name, "-i")
        links = self.links()
        link = links.get(name) if isinstance(links, dict) else None
        details = link.details if link is not None else {}
        bus_info = info.get("bus-info", "") if isinstance(info, dict) else ""
        parts = base.split("/")
        device = details.get("parentdev") or (
            parts[-3] if len(parts) >= 5 and parts[-2] == "net" and parts[-1] == name else None)
        if device is None and not bus_info:
            return None   # nothing says a device is behind it
        driver: str | Unknown = (info.get("driver") or Unknown("ethtool -i names no driver")
                                 if isinstance(info, dict) else info)
        bus: str | Unknown
        if details.get("parentbus"):
            bus = details["parentbus"]
        elif _PCI_ADDRESS.match(bus_info) and (device is None or device == bus_info):
            bus = "pci"
        elif bus_info.startswith("vif-"):
            bus = "xen"
        else:
            bus = Unknown("bus not in ip -d link nor ethtool -i output")
        return driver, bus, device or bus_info or None

    def ports(self, name: str) -> list[str] | None:
        """Interfaces whose `master` is NAME (bridge ports, bond slaves), in ifindex order."""
        links = self.links()
        if isinstance(links, Unknown):
            return None
        return [link.name for link in sorted(links.values(), key=lambda link: link.ifindex)
                if link.attrs.get("master") == name]

    def queues(self, name: str, direction: str) -> int | None:
        """numrxqueues/numtxqueues of ip -d: the queues allocated (sysfs lists those in use;
        they differ only after `ethtool -L` lowered the count)."""
        links = self.links()
        link = links.get(name) if isinstance(links, dict) else None
        value = link.details.get(f"num{direction}queues") if link is not None else None
        return int(value) if value and value.isdigit() else None

    def devtype(self, name: str) -> str | None:
        links = self.links()
        link = links.get(name) if isinstance(links, dict) else None
        return link.devtype if link is not None else None
