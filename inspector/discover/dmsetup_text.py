"""`dmsetup info -c` read back, for roots that keep its output but not /sys/block/dm-N/dm/
(a sosreport's devicemapper plugin runs it; sos copies none of dm's sysfs)."""
from __future__ import annotations

import re
from dataclasses import dataclass

from inspector.host import HostRoot
from inspector.model import Unknown


@dataclass
class DmInfo:
    name: str
    uuid: str | None        # None: the device has no uuid (dmsetup prints nothing there)
    suspended: bool         # Stat's third letter: s (L--w live, L-sw suspended)


def parse_info_columns(text: str) -> dict[str, DmInfo]:
    """dm-N (N the minor number) -> its name, uuid and suspended state."""
    out: dict[str, DmInfo] = {}
    for line in text.splitlines():
        words = line.split()
        if len(words) < 7 or not words[1].isdigit() or not words[2].isdigit() or len(words[3]) != 4:
            continue   # the header, "No devices found", error text
        out[f"dm-{words[2]}"] = DmInfo(name=words[0], uuid=words[7] if len(words) > 7 else None,
                                       suspended=words[3][2] == "s")
    return out


def dm_info(root: HostRoot, name: str) -> DmInfo | Unknown:
    """What `dmsetup info -c` said of dm-N on this root (never run live: sysfs answers)."""
    result = root.run(["dmsetup", "info", "-c"])
    if not result.ok:
        return Unknown(result.error or f"dmsetup info -c failed: {result.stdout.strip()[:100]}")
    return parse_info_columns(result.stdout).get(name) or Unknown(f"{name} not in dmsetup info -c")


_TREE_CHARS = " \t│├└─|`-"
_DEVNO = re.compile(r"\((\d+):(\d+)\)\s*$")


def parse_tree(text: str) -> dict[str, list[str]]:
    """`dmsetup ls --tree`: "major:minor" of each device -> those of the devices it is built on
    (its slaves), from the indentation of the tree."""
    children: dict[str, list[str]] = {}
    stack: list[tuple[int, str]] = []
    for line in text.splitlines():
        m = _DEVNO.search(line)
        if not m:
            continue
        column = len(line) - len(line.lstrip(_TREE_CHARS))
        devno = f"{m[1]}:{m[2]}"
        while stack and stack[-1][0] >= column:
            stack.pop()
        if stack:
            children.setdefault(stack[-1][1], [])
            if devno not in children[stack[-1][1]]:
                children[stack[-1][1]].append(devno)
        stack.append((column, devno))
    return children
