"""`dmsetup info -c` read back, for roots that keep its output but not /sys/block/dm-N/dm/
(a sosreport's devicemapper plugin runs it; sos copies none of dm's sysfs)."""
from __future__ import annotations

import re
from dataclasses import dataclass

from inspector.model import Unknown
from inspector.roots.host import HostRoot


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


@dataclass
class TreeRow:
    """One device of a drawn tree (`dmsetup ls --tree`, `lsblk`): its depth and what it shows."""
    depth: int                # 0 for a top line; deeper lines sit on (are built from) the one above
    name: str | None          # the device's name as printed; None when only its number is shown
    devno: str | None         # "major:minor"; None when the line has none (a truncated name)


def _rows_to_edges(rows: list[TreeRow]) -> list[tuple[TreeRow, TreeRow]]:
    """(upper, lower) pairs: each row and the row it is drawn under."""
    edges: list[tuple[TreeRow, TreeRow]] = []
    stack: list[TreeRow] = []
    for row in rows:
        while stack and stack[-1].depth >= row.depth:
            stack.pop()
        if stack:
            edges.append((stack[-1], row))
        stack.append(row)
    return edges


def parse_tree_rows(text: str) -> list[TreeRow]:
    """`dmsetup ls --tree`, names kept: "name (253:2)", " `- (251:0)" (a device dm does not
    manage shows its number only), and a name too long for the line ends in "..." with no
    number. Deeper lines are the devices the line above is built on."""
    rows: list[TreeRow] = []
    for line in text.splitlines():
        if not line.strip() or line.strip().startswith(("No devices found", "Command failed")):
            continue
        column = len(line) - len(line.lstrip(_TREE_CHARS))
        rest = line[column:].strip()
        m = _DEVNO.search(rest)
        devno = f"{m[1]}:{m[2]}" if m else None
        name = (rest[:m.start()] if m else rest).strip() or None
        rows.append(TreeRow(column, name, devno))
    return rows


def dmsetup_tree_edges(text: str) -> list[tuple[TreeRow, TreeRow]]:
    """(device, a device it is built on) from `dmsetup ls --tree`."""
    return _rows_to_edges(parse_tree_rows(text))


_LSBLK_DEVNO = re.compile(r"\s(\d+):(\d+)\s")


def parse_lsblk_rows(text: str) -> list[TreeRow]:
    """`lsblk` (its default columns, ASCII or Unicode tree): each device's depth, name and
    MAJ:MIN. In lsblk's tree a device sits under the ones it is built on, the reverse of dmsetup's:
    see lsblk_edges."""
    rows: list[TreeRow] = []
    for line in text.splitlines():
        m = _LSBLK_DEVNO.search(line)
        if not m or line.startswith("NAME"):
            continue
        head = line[:m.start()]
        column = len(head) - len(head.lstrip(_TREE_CHARS))
        name = head.strip(_TREE_CHARS + " ").split()[-1] if head.strip(_TREE_CHARS + " ") else None
        rows.append(TreeRow(column, name, f"{m[1]}:{m[2]}"))
    return rows


def lsblk_edges(text: str) -> list[tuple[TreeRow, TreeRow]]:
    """(device, a device it is built on) from lsblk's tree: the row drawn above is the lower one."""
    return [(lower, upper) for upper, lower in _rows_to_edges(parse_lsblk_rows(text))]


_TABLE_LINE = re.compile(r"^(?P<name>\S+): \d+ \d+ (?P<target>\S+)(?P<args>.*)$")
_ARG_DEVNO = re.compile(r"(?<![\d:])(\d+):(\d+)(?![\d:])")


def dmsetup_table_lower(text: str) -> dict[str, list[str]]:
    """`dmsetup table`: each mapped device's name -> the "major:minor" of the devices its
    targets map onto, in table order (linear 9:0 2048, crypt ... 251:0 ..., striped ...)."""
    out: dict[str, list[str]] = {}
    for line in text.splitlines():
        m = _TABLE_LINE.match(line.strip())
        if not m:
            continue
        lower = out.setdefault(m["name"], [])
        for major, minor in _ARG_DEVNO.findall(m["args"]):
            devno = f"{major}:{minor}"
            if devno not in lower:
                lower.append(devno)
    return out
