"""Subcommands: one module each, `register(subparsers)` sets `func(args) -> exit status`.

SUMMARIES holds each command's one-line help, here rather than in its module: the top-level
`inspector --help` (and an unknown command's list) shows them without importing the modules,
which import their machinery (every collector, the live sampler, asyncio for the probes)."""
from __future__ import annotations

SUMMARIES: dict[str, str] = {
    "report": "print the host report (findings first)",
    "capture": "write what discovery reads to a tar.gz (for --root)",
    "top": "live rates like iostat/vmstat (plain text or JSON lines)",
    "probe": "run a bounded probe: io, memcached or dns",
    "snapshot": "save the report plus short probe runs (for diff)",
    "diff": "compare two snapshots (exit 1 on regressions)",
    "record": "record findings and probe runs into SQLite on a schedule",
    "history": "recorded probe history by hour of day or by day",
    "check": "Nagios/Icinga plugin or Checkmk local check: status line, perfdata, exit 0/1/2/3",
    "export": "Prometheus textfile or JSON export of the report",
    "fleet": "one row per host from snapshots fetched with Ansible; two directories: per-host diff",
    "tui": "open the terminal UI (the default)",
    "completion": "print the bash or zsh completion script",
    "files": "where the man page, completions, systemd units and monitoring rules are installed",
}
