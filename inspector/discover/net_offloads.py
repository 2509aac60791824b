"""NIC offload features, listed exactly as `ethtool -k IFACE` (ethtool 6.x, netlink path) lists them.

Two steps, so a capture can replay the first:

1. `read_feature_bits(root, ifname)`: the kernel's raw feature state, one row per bit of the
   ETH_SS_FEATURES string set in kernel order: name, available (hw_features), requested
   (wanted_features), active (features), never_changed (NETIF_F_NEVER_CHANGE). Live it comes
   from the ETHTOOL_GSTRINGS + ETHTOOL_GFEATURES ioctls (the ones pyroute2's IoctlEthtool
   issues); it is a `root.fact("ethtool_features", ifname, ...)`, so captures and fixture
   roots carry it.
2. `ethtool_offloads(rows)`: ethtool's own presentation (netlink/features.c dump_features): the
   legacy groups first (rx-checksumming, tcp-segmentation-offload ...) with their matching
   kernel features indented below when more than one matches, then every other named feature.
   Suffix " [fixed]" when the feature is not in hw_features or never changes; " [requested
   on|off]" when wanted and active differ.

`Offload.ethtool_line()` renders one line exactly as ethtool prints it.
"""
from __future__ import annotations

import ctypes
import fcntl
import socket
import struct
from dataclasses import dataclass
from typing import Any

from inspector.model import Unknown
from inspector.roots.host import HostRoot

FACT_KIND = "ethtool_features"
ROW_FIELDS = ("name", "available", "requested", "active", "never_changed")

# ethtool's off_flag_def (common.c): legacy long name and the kernel feature names it covers
# ('*' matches any middle part). UFO is skipped: no kernel with the netlink API has it.
LEGACY_FLAGS: tuple[tuple[str, str], ...] = (
    ("rx-checksumming", "rx-checksum"),
    ("tx-checksumming", "tx-checksum-*"),
    ("scatter-gather", "tx-scatter-gather*"),
    ("tcp-segmentation-offload", "tx-tcp*-segmentation"),
    ("generic-segmentation-offload", "tx-generic-segmentation"),
    ("generic-receive-offload", "rx-gro"),
    ("large-receive-offload", "rx-lro"),
    ("rx-vlan-offload", "rx-vlan-hw-parse"),
    ("tx-vlan-offload", "tx-vlan-hw-insert"),
    ("ntuple-filters", "rx-ntuple-filter"),
    ("receive-hashing", "rx-hashing"),
)


@dataclass
class Offload:
    """One line of `ethtool -k`."""
    name: str                 # as ethtool prints it (legacy long name or kernel feature name)
    on: bool                  # active now (a group header: any of its features is)
    fixed: bool | None        # None on a group header line (ethtool prints no suffix there)
    requested: bool | None    # wanted state when it differs from the active one, else None
    group: str | None = None  # legacy group header this line is indented under
    kernel_name: str | None = None  # the kernel feature behind a line, when there is exactly one

    def ethtool_line(self) -> str:
        suffix = ""
        if self.fixed:
            suffix = " [fixed]"
        elif self.requested is not None:
            suffix = " [requested on]" if self.requested else " [requested off]"
        indent = "\t" if self.group else ""
        return f"{indent}{self.name}: {'on' if self.on else 'off'}{suffix}"


def pattern_match(name: str, pattern: str) -> bool:
    """ethtool's flag_pattern_match: one optional '*' standing for any (possibly empty) middle."""
    star = pattern.find("*")
    if star < 0:
        return name == pattern
    head, tail = pattern[:star], pattern[star + 1:]
    return len(name) >= len(head) + len(tail) and name.startswith(head) and name.endswith(tail)


def ethtool_offloads(rows: list[dict[str, Any]]) -> list[Offload]:
    """ethtool -k's lines from the raw feature rows (see module docstring)."""
    named = [r for r in rows if r.get("name")]
    legacy_of: list[int | None] = []
    for row in named:
        legacy_of.append(next((i for i, (_, pat) in enumerate(LEGACY_FLAGS)
                               if pattern_match(row["name"], pat)), None))
    out: list[Offload] = []
    for i, (long_name, _) in enumerate(LEGACY_FLAGS):
        members = [r for r, idx in zip(named, legacy_of) if idx == i]
        if len(members) == 1:
            out.append(_line(members[0], long_name, None, kernel_name=members[0]["name"]))
            continue
        out.append(Offload(long_name, any(bool(r.get("active")) for r in members), None, None))
        out.extend(_line(r, r["name"], long_name, kernel_name=r["name"]) for r in members)
    out.extend(_line(r, r["name"], None, kernel_name=r["name"])
               for r, idx in zip(named, legacy_of) if idx is None)
    return out


def _line(row: dict[str, Any], name: str, group: str | None, kernel_name: str) -> Offload:
    active, wanted = bool(row.get("active")), bool(row.get("requested"))
    fixed = not row.get("available") or bool(row.get("never_changed"))
    return Offload(name=name, on=active, fixed=fixed,
                   requested=None if fixed or active == wanted else wanted,
                   group=group, kernel_name=kernel_name)


def find_offload(offloads: list[Offload] | Unknown, name: str) -> Offload | None:
    """The line named `name` (legacy long name or kernel feature name), if listed."""
    if isinstance(offloads, Unknown):
        return None
    for item in offloads:
        if item.name == name or item.kernel_name == name:
            return item
    return None


def read_feature_bits(root: HostRoot, ifname: str) -> list[dict[str, Any]] | Unknown:
    """Raw feature rows (ROW_FIELDS) of `ifname`, live via ioctl or from the capture's sidecar."""
    value = root.fact(FACT_KIND, ifname, lambda: _ioctl_feature_rows(ifname))
    if isinstance(value, Unknown):
        return value
    if not isinstance(value, list) or not all(isinstance(r, dict) and isinstance(r.get("name"), str)
                                              for r in value):
        return Unknown(f"malformed {FACT_KIND} fact for {ifname}")
    return value


def _ioctl_feature_rows(ifname: str) -> list[dict[str, Any]] | Unknown:
    """ETHTOOL_GSSET_INFO + ETHTOOL_GSTRINGS(ETH_SS_FEATURES) + ETHTOOL_GFEATURES over SIOCETHTOOL.

    pyroute2's IoctlEthtool reads the same bits (tests/integration/test_net_live.py compares
    them row for row), but `import pyroute2` runs its package __init__, which loads every
    netlink family: far more work than the three ioctls (tests/bench/bench_costs.py prints
    both costs)."""
    try:
        sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    except OSError as exc:
        return Unknown(f"socket for ethtool ioctl: {exc.strerror or exc}")
    try:
        with sock:
            count = _sset_count(sock, ifname)
            names = _feature_names(sock, ifname, count)
            blocks = (count + 31) // 32
            buf = ctypes.create_string_buffer(struct.pack("=II", ETHTOOL_GFEATURES, blocks)
                                              + bytes(16 * blocks))
            _ethtool(sock, ifname, buf)
            words = struct.unpack_from(f"={4 * blocks}I", buf, 8)
    except OSError as exc:
        return Unknown(f"ethtool ioctl on {ifname}: {exc.strerror or exc}")
    rows = []
    for i, name in enumerate(names):
        if not name:  # unnamed bits: ethtool skips them too
            continue
        block, bit = divmod(i, 32)
        available, requested, active, never = (words[4 * block + k] >> bit & 1 for k in range(4))
        rows.append({"name": name, "available": bool(available), "requested": bool(requested),
                     "active": bool(active), "never_changed": bool(never)})
    return rows


SIOCETHTOOL = 0x8946
ETHTOOL_GSTRINGS = 0x1B
ETHTOOL_GSSET_INFO = 0x37
ETHTOOL_GFEATURES = 0x3A
ETH_SS_FEATURES = 4
ETH_GSTRING_LEN = 32


def _ethtool(sock: socket.socket, ifname: str, buf: ctypes.Array) -> None:
    # struct ifreq: 16-byte name, then the ifr_data pointer inside a 24-byte union
    ifreq = struct.pack("16sP", ifname.encode()[:15], ctypes.addressof(buf)).ljust(40, b"\0")
    fcntl.ioctl(sock.fileno(), SIOCETHTOOL, ifreq)


def _sset_count(sock: socket.socket, ifname: str) -> int:
    buf = ctypes.create_string_buffer(struct.pack("=IIQI", ETHTOOL_GSSET_INFO, 0,
                                                  1 << ETH_SS_FEATURES, 0))
    _ethtool(sock, ifname, buf)
    mask, count = struct.unpack_from("=QI", buf, 8)
    if not mask & (1 << ETH_SS_FEATURES):
        raise OSError(0, "no feature string set")
    return count


def _feature_names(sock: socket.socket, ifname: str, count: int) -> list[str]:
    buf = ctypes.create_string_buffer(struct.pack("=III", ETHTOOL_GSTRINGS, ETH_SS_FEATURES,
                                                  count) + bytes(ETH_GSTRING_LEN * count))
    _ethtool(sock, ifname, buf)
    raw = buf.raw[12:12 + ETH_GSTRING_LEN * count]
    return [raw[i:i + ETH_GSTRING_LEN].split(b"\0", 1)[0].decode("ascii", "replace")
            for i in range(0, len(raw), ETH_GSTRING_LEN)]
