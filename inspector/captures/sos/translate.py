"""sos outputs turned into the facts Inspector records live: uname, the environment."""
from __future__ import annotations

# what coreutils' `uname -a` may print after the machine: processor, platform, OS
_TRAILERS = {"GNU/Linux", "Linux", "unknown"}


def parse_uname_a(text: str) -> dict | None:
    """`uname -a` -> {sysname, nodename, release, version, machine}; None when unrecognised.

    coreutils prints: kernel-name nodename release version machine [processor] [platform]
    operating-system; the version has spaces, and processor and platform repeat the machine
    on most distributions ("... x86_64 x86_64 x86_64 GNU/Linux") or are left out (Debian)."""
    words = text.strip().splitlines()[0].split() if text.strip() else []
    if len(words) < 5:
        return None
    tail = words[3:]
    while len(tail) > 2 and tail[-1] in _TRAILERS:
        tail = tail[:-1]
    machine = tail[-1]
    while len(tail) > 2 and tail[-2] == machine:   # processor and platform repeat it
        tail = tail[:-1]
    return {"sysname": words[0], "nodename": words[1], "release": words[2],
            "version": " ".join(tail[:-1]), "machine": machine}


def parse_environment(text: str) -> dict[str, str]:
    """`env` output (sos's `environment` file): NAME=value lines."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        name, sep, value = line.partition("=")
        if sep and name.isidentifier():
            out.setdefault(name, value)
    return out


# the udev properties block discovery keeps (inspector.discover.block._attach_udev)
_UDEV_PREFIXES = ("ID_", "DM_", "MD_")
_UDEV_NAMES = ("DEVTYPE", "DEVLINKS")


def parse_udev_db(text: str) -> dict[str, dict[str, str]]:
    """`udevadm info --export-db` or `udevadm info /dev/X`: block device name -> the udev
    properties Inspector keeps (ID_*, DM_*, MD_*, DEVTYPE, DEVLINKS), as pyudev gives them.

    Records are blank-line separated: "P: /devices/...", "N: sda", "E: KEY=value" lines."""
    out: dict[str, dict[str, str]] = {}
    for record in text.split("\n\n"):
        name, props, block = None, {}, False
        for line in record.splitlines():
            tag, _, value = line.partition(": ")
            if tag == "N":
                name = value.strip()
            elif tag == "E":
                key, sep, val = value.partition("=")
                if key == "SUBSYSTEM":
                    block = val == "block"
                elif key == "DEVNAME" and name is None:
                    name = val.removeprefix("/dev/")
                if sep and (key.startswith(_UDEV_PREFIXES) or key in _UDEV_NAMES):
                    props[key] = val
        if block and name and "/" not in name:
            out.setdefault(name, dict(sorted(props.items())))
    return out
