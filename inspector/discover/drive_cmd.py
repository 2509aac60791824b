"""Small helpers shared by the drive-health collectors: command outcomes and number parsing."""
from __future__ import annotations

import re

from inspector.model import Unknown
from inspector.roots.host import CommandResult, HostRoot

COMMAND_TIMEOUT = 5.0   # seconds per vendor/SMART command (the default)


class ParseError(ValueError):
    """The tool printed something we do not recognise; the message says what."""


def run_tool(root: HostRoot, argv: list[str], timeout: float) -> CommandResult:
    return root.run(argv, timeout=timeout)


def failure(result: CommandResult, *, nonzero_ok: bool = False) -> Unknown | None:
    """Unknown(reason) when the command did not give usable output, else None."""
    tool = result.argv[0] if result.argv else "command"
    if result.error:
        return Unknown(result.error)
    empty = not result.stdout.strip()
    if result.returncode != 0 and (empty or not nonzero_ok):
        detail = first_line(result.stderr) or first_line(result.stdout)
        return Unknown(f"{tool} exited with status {result.returncode}"
                       + (f": {detail}" if detail else ""))
    if empty:
        return Unknown(f"{tool} printed nothing")
    return None


def first_line(text: str, limit: int = 120) -> str:
    for line in (text or "").splitlines():
        if line.strip():
            return line.strip()[:limit]
    return ""


def garbage(tool: str, text: str) -> Unknown:
    sample = first_line(text, 60)
    return Unknown(f"{tool} printed unrecognised output" + (f" ({sample!r})" if sample else ""))


_NUMBER = re.compile(r"[-+]?\d[\d,]*(?:\.\d+)?")


def parse_number(text: str) -> float | None:
    """First number in `text` ("1,234.5 degC" -> 1234.5); None when there is none."""
    m = _NUMBER.search(text or "")
    if not m:
        return None
    try:
        return float(m.group(0).replace(",", ""))
    except ValueError:
        return None


def parse_int(text: str) -> int | None:
    value = parse_number(text)
    if value is None or value != value or abs(value) > 2**63:
        return None
    return int(value)
