"""Where a sosreport keeps the output of a command, and with which exit status.

sos names each output file after its command line (`ethtool -k eth0` ->
sos_commands/networking/ethtool_-k_eth0: sos.report.plugins._mangle_command), so a command
Inspector asks for is found by mangling it the same way. sos 4.x also lists every command it
ran, with the file and the exit status, in sos_reports/manifest.json; sos 3.x keeps no exit
status, so an output found only by its name is taken as a success and judged by its content.
All reads go through the HostRoot of the sosreport directory (confined to it).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from inspector.roots.host import HostRoot, Unavailable

NAME_MAX = 255   # sos truncates names to the file system's NAME_MAX


def mangle(command: str) -> str:
    """sos's file name for a command line (same rules as sos._mangle_command)."""
    name = re.sub(r"^/(usr/|)(bin|sbin)/", "", command)
    name = re.sub(r"[^\w\-\.\/]+", "_", name)
    name = re.sub(r"/", ".", name).strip(" ._-")
    return name[:NAME_MAX]


@dataclass(frozen=True)
class Output:
    """One command output kept by sos."""
    command: str             # the command line as sos ran it
    path: str                # file inside the sosreport (sos_commands/PLUGIN/NAME)
    returncode: int | None   # from the manifest; None when sos did not record it (3.x)


class CommandIndex:
    """Command line -> Output, from the manifest and from the file names under sos_commands/."""

    def __init__(self, reader: HostRoot, manifest: dict | None):
        self._reader = reader
        self._by_command: dict[str, Output] = {}
        self._by_name: dict[str, list[str]] = {}   # mangled name -> paths (any plugin dir)
        for plugin in reader.try_listdir("sos_commands"):
            for name in reader.try_listdir(f"sos_commands/{plugin}"):
                self._by_name.setdefault(name, []).append(f"sos_commands/{plugin}/{name}")
        for entry in _manifest_commands(manifest):
            command, path = entry.get("exec"), entry.get("filepath")
            code = entry.get("return_code")
            if isinstance(command, str) and isinstance(path, str) and path:
                self._by_command.setdefault(" ".join(command.split()), Output(
                    command, path.lstrip("/"), code if type(code) is int else None))

    def find(self, command: str) -> Output | None:
        command = " ".join(command.split())
        if command in self._by_command:
            return self._by_command[command]
        paths = self._by_name.get(mangle(command))
        if paths:
            return Output(command, sorted(paths)[0], None)
        return None

    def read(self, output: Output) -> str | None:
        try:
            return self._reader.read_text(output.path)
        except Unavailable:
            return None

    def commands(self) -> list[Output]:
        """Every output the manifest lists (sos 4.x); sos 3.x: none, look them up by name."""
        return list(self._by_command.values())

    def kept_instead(self, command: str) -> str | None:
        """The same command without its JSON output option, when sos kept that one instead:
        Inspector asks `smartctl --json -a /dev/sda`, sos runs `smartctl -a /dev/sda`."""
        words = command.split()
        plain = [w for i, w in enumerate(words) if w not in _JSON_OPTIONS
                 and (w, words[i + 1] if i + 1 < len(words) else "") != ("-o", "json")
                 and (words[i - 1] if i else "", w) != ("-o", "json")]
        if plain == words:
            return None
        found = self.find(" ".join(plain))
        return f"{found.command}, as text" if found is not None else None


# what makes smartctl, lsblk and nvme-cli print JSON (nvme-cli also: `-o json`)
_JSON_OPTIONS = {"--json", "-j", "-J", "--output-format=json"}


def _manifest_commands(manifest: dict | None) -> list[dict]:
    """The `commands` lists of every plugin in a sos 4.x manifest (other shapes: none)."""
    if not isinstance(manifest, dict):
        return []
    report = (manifest.get("components") or {}).get("report") if isinstance(
        manifest.get("components"), dict) else None
    plugins = report.get("plugins") if isinstance(report, dict) else None
    out: list[dict] = []
    if isinstance(plugins, dict):
        for plugin in plugins.values():
            commands = plugin.get("commands") if isinstance(plugin, dict) else None
            if isinstance(commands, list):
                out.extend(c for c in commands if isinstance(c, dict))
    return out
