"""A sosreport as a host root: `--root sosreport-host-...[.tar.xz]`.

A sosreport keeps parts of the host's tree (etc/, proc/, sys/: read as they are) and the
outputs of commands under sos_commands/PLUGIN/. Those outputs become the facts Inspector
records live (inspector.roots.host.HostRoot.fact): `root.run(argv)` finds the output sos kept for
that command line (inspector.captures.sos.commands), uname comes from `uname -a`, the time the report
was taken from `date --utc` or the manifest (inspector.captures.sos.clock), each NIC's offload feature
rows from `ethtool -k IFACE`. Where sysfs lacks what the collectors read (a NIC's MTU or
driver, a disk's size) they fall back on these command outputs themselves
(inspector.discover.nic_commands, inspector.discover.block_sizes).

What sos did not collect is Unknown("not in this sosreport (...)").
"""
from __future__ import annotations

import json
import os
from typing import Any

from inspector.captures.sos import clock
from inspector.captures.sos.commands import CommandIndex, Output
from inspector.captures.sos.translate import parse_environment, parse_udev_db, parse_uname_a
from inspector.discover.ethtool_text import LegacyFormat, feature_rows
from inspector.model import Unknown
from inspector.roots.host import HostRoot, Unavailable

MAX_MANIFEST_BYTES = 64 * 1024 * 1024   # sos 4.x lists every file it copied: MBs on big hosts
# sos's marks besides sos_commands/: 3.x and 4.x both write version.txt and sos_logs/
_SOS_MARKERS = ("version.txt", "sos_logs", "sos_reports")


def is_sosreport(path: str) -> bool:
    """A directory in sos's layout: sos_commands/ beside version.txt, sos_logs/ or
    sos_reports/, or, in a partial copy without those (trimmed for a ticket, half unpacked),
    sos_commands/ holding a plugin directory with an output in it. An empty sos_commands/
    alone says nothing."""
    commands = os.path.join(path, "sos_commands")
    if not os.path.isdir(commands):
        return False
    if any(os.path.exists(os.path.join(path, m)) for m in _SOS_MARKERS):
        return True
    try:
        with os.scandir(commands) as plugins:
            for count, plugin in enumerate(plugins):
                if count >= _PLUGIN_DIRS_LOOKED_AT:
                    break
                if plugin.is_dir(follow_symlinks=False):
                    with os.scandir(plugin.path) as outputs:
                        if any(o.is_file(follow_symlinks=False) for o in outputs):
                            return True
    except OSError:
        return False
    return False


_PLUGIN_DIRS_LOOKED_AT = 400   # sos has ~300 plugins; a bigger directory is not sos's

# What each report section reads of a host tree, and the sos outputs that stand in when the
# tree part is missing (the collectors fall back on them): the section -> ((tree paths, any of
# which will do), outputs used instead)
_SECTION_SOURCES: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "storage": (("sys/block",), ("lsblk", "blockdev --report", "dmsetup ls --tree",
                                  "dmsetup info -c", "smartctl -a")),
    "net": (("sys/class/net",), ("ip -s -d link", "ip link", "ethtool -i")),
    "cpu": (("proc/cpuinfo", "proc/stat", "proc/loadavg"), ("uptime", "lscpu")),
    "virt": (("sys/class/dmi/id", "proc/cpuinfo", "proc/1/environ"),
             ("hostnamectl status", "dmidecode")),
    "dns": (("etc/resolv.conf",), ()),
}


def sosreport_inside(directory: str) -> str | None:
    """The sosreport an archive unpacked into `directory`: sos puts everything under one
    top-level directory (sosreport-HOST-...)."""
    try:
        entries = os.listdir(directory)
    except OSError:
        return None
    if len(entries) != 1:
        return None
    inner = os.path.join(directory, entries[0])
    if os.path.islink(inner) or not is_sosreport(inner):
        return None
    return inner


class SosReport:
    """The facts of one sosreport directory, answered on demand (`answer`) or all at once
    (`facts`, in the sidecar's {kind: {key: value}} shape). `reader` is a HostRoot on the
    directory: the sosreport's own files are read through it, confined like the host's."""

    def __init__(self, reader: HostRoot):
        self.reader = reader
        self.manifest = self._json("sos_reports/manifest.json")
        self.version = self._version()
        self.index = CommandIndex(self.reader, self.manifest)
        self._udev_db: dict[str, dict[str, str]] | None = None
        self.collected_at, self.time_note = clock.collected_at(
            self.reader, self.manifest, self._output_text("date --utc"),
            self._output_text("timedatectl"))

    # ------------------------------------------------------------------ identity
    def _json(self, rel: str) -> dict | None:
        try:
            data = json.loads(self.reader.read_bytes(rel, MAX_MANIFEST_BYTES))
        except (Unavailable, ValueError, RecursionError):
            return None
        return data if isinstance(data, dict) else None

    def _version(self) -> str | None:
        if self.manifest and isinstance(self.manifest.get("version"), str):
            return self.manifest["version"]
        text = self.reader.try_text("version.txt")
        if isinstance(text, str):
            for line in text.splitlines():   # "sosreport: 4.0" (4.x), "sosreport: 3.9" (3.x)
                name, _, value = line.partition(":")
                if name.strip() in ("sosreport", "sos report", "sos") and value.strip():
                    return value.strip()
        return None

    def label(self, spec: str) -> str:
        """HostIdentity.source: says it is a sosreport, which one, by which sos, and what of
        it is missing."""
        extra = [f"sos {self.version}" if self.version else "sos version not recorded"]
        if self.time_note:
            extra.append(self.time_note)
        gaps = self.gaps()
        if gaps:
            extra.append("partial: " + "; ".join(f"{section}: {gap}" for section, gap in gaps.items()))
        return f"sosreport {spec.rstrip('/') or spec} ({'; '.join(extra)})"

    def gaps(self) -> dict[str, str]:
        """Per report section, the parts of the host tree this sosreport lacks and the command
        outputs it holds instead ("storage": "no sys/block; lsblk, dmsetup ls --tree kept"):
        a section read from those outputs alone says less, and says so here."""
        out: dict[str, str] = {}
        for section, (paths, stand_ins) in _SECTION_SOURCES.items():
            missing = [p for p in paths if not self.reader.exists(p)]
            if len(missing) < len(paths) and section != "cpu":
                continue
            if not missing:
                continue
            kept = [c for c in stand_ins if self.index.find(c) is not None]
            out[section] = f"no {', '.join(missing)}" + (f"; {', '.join(kept)} kept" if kept
                                                          else "; nothing kept in its place")
        if not any(self.reader.exists(m) for m in _SOS_MARKERS):
            out["sos"] = "no version.txt, sos_logs/ or sos_reports/ (sos version and plugins unknown)"
        return out

    # ------------------------------------------------------------------ facts
    def answer(self, kind: str, key: str) -> Any:
        """The fact `kind`/`key` a collector asks for (see HostRoot.fact), or Unknown."""
        handler = _HANDLERS.get(kind)
        value = handler(self, key) if handler else None
        if value is not None:
            return value
        instead = self.index.kept_instead(key) if kind == "command" else None
        return Unknown(f"not in this sosreport ({kind} {key}"
                       + (f"; it has {instead})" if instead else ")"))

    def facts(self) -> dict[str, dict[str, Any]]:
        """Every fact this sosreport answers without being asked for a name: uname, time,
        the environment sos recorded, each NIC's offload rows and every command in the
        manifest. Commands found only by file name (sos 3.x) are answered by `answer`."""
        out: dict[str, dict[str, Any]] = {}

        def put(kind: str, key: str) -> None:
            value = self.answer(kind, key)
            if not isinstance(value, Unknown):
                out.setdefault(kind, {})[key] = value

        put("uname", "uname")
        put("time", "collected_at")
        for name in self._environment():
            put("env", name)
        for nic in self.reader.try_listdir("sys/class/net"):
            put("ethtool_features", nic)
        for output in self.index.commands():
            put("command", output.command)
        return out

    def _output_text(self, command: str) -> str | None:
        output = self.index.find(command)
        return self.index.read(output) if output is not None else None

    def _command(self, key: str) -> dict | None:
        output = self.index.find(key)
        if output is None:
            return None
        text = self.index.read(output)
        if text is None:
            return None
        return _command_result(key, output, text)

    def _uname(self, key: str) -> dict | None:
        text = self._output_text("uname -a")
        return parse_uname_a(text) if text else None

    def _time(self, key: str) -> float | Unknown | None:
        if key != "collected_at":
            return None
        return self.collected_at if self.collected_at else Unknown(self.time_note)

    def _ethtool_features(self, key: str) -> list[dict] | Unknown | None:
        output = self.index.find(f"ethtool -k {key}")
        text = self.index.read(output) if output is not None else None
        if text is None:
            return None
        try:
            rows = feature_rows(text)
        except LegacyFormat as exc:
            return Unknown(str(exc))
        if rows is None:
            first = next((line.strip() for line in text.splitlines() if line.strip()), "no output")
            return Unknown(f"ethtool -k {key} listed no feature in this sosreport: {first[:100]}")
        return rows

    def _udev(self, key: str) -> dict[str, str] | None:
        """One block device's udev properties: `udevadm info /dev/X` (sos's block plugin), else
        the udev plugin's `udevadm info --export-db`."""
        text = self._output_text(f"udevadm info /dev/{key}")
        found = parse_udev_db(text).get(key) if text else None
        if found is None:
            if self._udev_db is None:   # parsed once: it holds every device of the host
                text = self._output_text("udevadm info --export-db")
                self._udev_db = parse_udev_db(text) if text else {}
            found = self._udev_db.get(key)
        return found

    def _environment(self) -> dict[str, str]:
        text = self.reader.try_text("environment")
        return parse_environment(text) if isinstance(text, str) else {}

    def _env(self, key: str) -> str | None:
        return self._environment().get(key)


def _command_result(key: str, output: Output, text: str) -> dict:
    """A CommandResult's JSON for an output sos kept (stdout and stderr are one file there)."""
    code = output.returncode
    error = None
    if code == 124:
        error = f"{key.split()[0]} timed out when sos ran it"
    elif code in (126, 127):
        error = f"{key.split()[0]} could not run on the host when sos ran it"
    return {"argv": key.split(), "returncode": 0 if code is None else code, "stdout": text,
            "stderr": "", "error": error, "duration": 0.0}


_HANDLERS = {
    "command": SosReport._command,
    "uname": SosReport._uname,
    "time": SosReport._time,
    "ethtool_features": SosReport._ethtool_features,
    "env": SosReport._env,
    "udev": SosReport._udev,
}


def sos_facts(path: str) -> dict[str, dict[str, Any]]:
    """The facts of the sosreport directory `path`, in the sidecar's {kind: {key: value}}."""
    return SosReport(HostRoot(path)).facts()


def open_sosreport(path: str, spec: str | None = None) -> HostRoot:
    """A HostRoot on an unpacked sosreport whose facts come from its command outputs, read
    through that same root. `spec` is what the user gave (the .tar.xz of an archive), for
    the report's header."""
    sos: list[SosReport] = []
    root = HostRoot(path, fact_source=lambda kind, key: sos[0].answer(kind, key))
    sos.append(SosReport(root))
    root.label = sos[0].label(spec or path)
    if sos[0].collected_at:   # what `top` reads as the moment of a capture's one sample
        root.sidecar_meta = {"captured_at": sos[0].collected_at, "sosreport": sos[0].version}
    return root
