"""`ip link` output read back (any of -s, -d, -o): per interface, what /sys/class/net has.

For roots that keep what `ip -s -d link` printed but not the sysfs attributes (a sosreport
copies only flags and statistics/ of /sys/class/net). Values come out in sysfs's own shape
("1500", "0x1003", "up", "1") so the NIC collector parses them as it parses sysfs.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

_HEADER = re.compile(r"^(\d+):\s+([^:\s]+):\s+<([^>]*)>(.*)$")

# net/if.h and linux/if.h flag bits, as `ip` names them
FLAG_BITS = {"UP": 0x1, "BROADCAST": 0x2, "DEBUG": 0x4, "LOOPBACK": 0x8, "POINTOPOINT": 0x10,
             "NOTRAILERS": 0x20, "RUNNING": 0x40, "NOARP": 0x80, "PROMISC": 0x100,
             "ALLMULTI": 0x200, "MASTER": 0x400, "SLAVE": 0x800, "MULTICAST": 0x1000,
             "PORTSEL": 0x2000, "AUTOMEDIA": 0x4000, "DYNAMIC": 0x8000}
# `ip` prints these beside the flags, but they are link-state bits, not in sysfs `flags`
_STATE_FLAGS = {"LOWER_UP", "DORMANT", "ECHO", "M-DOWN", "NO-CARRIER"}

# link/TYPE -> ARPHRD_* number (sysfs `type`), the common ones (include/uapi/linux/if_arp.h)
ARPHRD = {"ether": 1, "loopback": 772, "none": 65534, "ipip": 768, "tunnel6": 769, "sit": 776,
          "gre": 778, "ip6gre": 823, "infiniband": 32, "ieee802.11": 801, "ppp": 512,
          "can": 280, "void": 0xFFFF}

# rtnetlink link kinds whose devices carry a uevent DEVTYPE of the same name
_DEVTYPE_KINDS = ("bridge", "bond", "vlan")

_NOT_A_KIND = {"addrgenmode", "altname", "alias", "vf", "prop", "link-netnsid", "inet6",
               "promiscuity", "RX:", "TX:"}


@dataclass
class Link:
    """One interface of `ip link` output."""
    ifindex: int
    name: str
    flags: list[str]
    attrs: dict[str, str] = field(default_factory=dict)  # mtu, qdisc, state, qlen, master ...
    link_type: str | None = None      # ether, loopback, none ...
    address: str | None = None
    kind: str | None = None           # rtnetlink kind with -d: bridge, bond, vlan, veth, ifb ...
    details: dict[str, str] = field(default_factory=dict)  # numtxqueues, parentbus ... (-d)

    def sysfs(self, attr: str) -> str | None:
        """The value sysfs would hold in /sys/class/net/IFACE/<attr>, when ip printed it."""
        if attr == "mtu":
            return self.attrs.get("mtu")
        if attr == "tx_queue_len":
            return self.attrs.get("qlen")
        if attr == "operstate":
            state = self.attrs.get("state")
            return state.lower() if state else None
        if attr == "address":
            return self.address
        if attr == "ifindex":
            return str(self.ifindex)
        if attr == "flags":
            return hex(sum(FLAG_BITS.get(f, 0) for f in self.flags))
        if attr == "carrier":
            # sysfs refuses the read on a down interface; up, it is the LOWER_UP bit
            if "UP" not in self.flags:
                return None
            return "1" if "LOWER_UP" in self.flags and "NO-CARRIER" not in self.flags else "0"
        if attr == "type":
            number = ARPHRD.get(self.link_type or "")
            return str(number) if number is not None else None
        return None

    @property
    def devtype(self) -> str | None:
        return self.kind if self.kind in _DEVTYPE_KINDS else None


def parse_ip_link(text: str) -> dict[str, Link]:
    """Interfaces by name; lines it does not recognise are skipped."""
    links: dict[str, Link] = {}
    current: Link | None = None
    after_link_line = False
    for raw in text.replace("\\", "\n").splitlines():   # -o joins an interface's lines with '\'
        m = _HEADER.match(raw)
        if m:
            name = m[2].split("@", 1)[0]
            current = Link(ifindex=int(m[1]), name=name, flags=[f for f in m[3].split(",") if f])
            words = m[4].split()
            current.attrs = {words[i]: words[i + 1] for i in range(len(words) - 1)
                             if words[i].isidentifier() and words[i] not in current.attrs}
            links.setdefault(name, current)
            after_link_line = False
            continue
        if current is None:
            continue
        words = raw.split()
        if not words or words[0] in ("RX:", "TX:") or words[0][0].isdigit():
            continue   # statistics
        if words[0].startswith("link/"):
            current.link_type = words[0][5:]
            if len(words) > 1 and ":" in words[1]:
                current.address = words[1]
            after_link_line = True
        elif after_link_line and current.kind is None and words[0] not in _NOT_A_KIND \
                and not words[0].endswith("_slave"):
            current.kind = words[0]
        for i in range(len(words) - 1):
            if words[i] in ("numtxqueues", "numrxqueues", "parentbus", "parentdev",
                            "minmtu", "maxmtu"):
                current.details.setdefault(words[i], words[i + 1])
    return links
