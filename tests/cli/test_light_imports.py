"""Everyday commands import only what they use: `check` from NRPE every minute, `report --json`
from Ansible over a fleet and the suite's hundreds of starts pay for every module imported.

The installed binary runs each command on this host under `python -X importtime`, which names
every module the process imported (function-level imports included, as they happen); a module
named here as heavy for a command fails the test when it comes back. The --root runs show that
the same listing does see them when they are needed."""
from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from conftest import fixture_root, inspector_bin

ROOT = str(fixture_root("flash-mixed"))
# the opening of another tree, a tarball or a sosreport; rich's console; the probes; the live
# sampler (check --live, top); the TUI
FOREIGN_ROOTS = {"tarfile", "inspector.captures.foreign", "inspector.captures.sosreport",
                 "inspector.roots.safe_extract"}
RICH = {"rich", "rich.console"}
PROBES = {"inspector.probes.base", "inspector.probes.request", "inspector.probes.forked_runs"}
LIVE = {"inspector.live", "inspector.live.sampler", "inspector.health.live.session", "tomllib"}
TUI = {"textual", "inspector.tui.app"}
DISCOVERY = {"inspector.report.sections", "inspector.discover.storage", "inspector.discover.virt"}

# command -> (modules it must import: the listing works; modules it must not import)
CASES: dict[str, tuple[list[str], set[str], set[str]]] = {
    "version": (["--version"], {"argparse"},
                FOREIGN_ROOTS | RICH | PROBES | LIVE | TUI | DISCOVERY | {"inspector.roots.host"}),
    "help": (["--help"], {"argparse", "inspector.commands"},
             FOREIGN_ROOTS | RICH | LIVE | TUI | DISCOVERY | {"asyncio", "inspector.roots.host"}),
    "report --json": (["report", "--json"], {"inspector.report.collect", "json"},
                      FOREIGN_ROOTS | RICH | PROBES | LIVE | TUI),
    "report": (["report"], {"inspector.report.collect", "rich.console"},
               FOREIGN_ROOTS | PROBES | LIVE | TUI),
    "check": (["check"], {"inspector.outputs.check"},
              FOREIGN_ROOTS | RICH | PROBES | LIVE | TUI),
    "export --prometheus": (["export", "--prometheus"], {"inspector.outputs.export"},
                            FOREIGN_ROOTS | RICH | PROBES | LIVE | TUI),
    "snapshot": (["snapshot", "-o", "{tmp}/s.json"], {"inspector.compare.snapshot"},
                 FOREIGN_ROOTS | RICH | PROBES | LIVE | TUI),
    "top": (["top", "--count", "1", "--interval", "0.1"], {"inspector.live.sampler"},
            FOREIGN_ROOTS | RICH | PROBES | TUI | {"inspector.outputs.metrics",
                                                   "inspector.record.store", "sqlite3"}),
    # a probe's command builds its own kind's parser only (memcached's imports its load)
    "probe io": (["probe", "io", "{tmp}", "-c", "3", "-i", "0.01"], {"inspector.probes.io.run"},
                 FOREIGN_ROOTS | LIVE | TUI | DISCOVERY | {"inspector.probes.memcached.probe",
                                                           "inspector.probes.dns.run"}),
    # with --root: the same listing shows what a foreign tree needs
    "report --json --root": (["report", "--json", "--root", ROOT], FOREIGN_ROOTS,
                             RICH | PROBES | LIVE | TUI),
}


def imported(args: list[str], timeout: float = 120) -> set[str]:
    """Every module `inspector ARGS` imported, from -X importtime's lines on stderr."""
    res = subprocess.run([sys.executable, "-X", "importtime", inspector_bin(), *args],
                         capture_output=True, text=True, timeout=timeout)
    # check says what it found on this host: WARNING (1), CRITICAL (2) or UNKNOWN (3) too
    done = (0, 1, 2, 3) if args[0] == "check" else (0, 1)
    assert res.returncode in done, (res.returncode, res.stderr[-2000:])
    assert "Traceback" not in res.stderr, res.stderr[-2000:]
    names = set(re.findall(r"^import time:\s+\d+ \|\s+\d+ \|\s*(\S+)$", res.stderr, re.M))
    assert names, res.stderr[-2000:]
    return names


@pytest.mark.parametrize("name", CASES)
def test_a_command_imports_what_it_uses(name, tmp_path):
    args, needed, heavy = CASES[name]
    names = imported([a.format(tmp=tmp_path) for a in args])
    assert needed <= names, sorted(needed - names)
    assert not heavy & names, f"{name} imported {sorted(heavy & names)}"


def test_diff_imports_no_discovery_nor_root_opening(tmp_path):
    """Two snapshots compared: no collector, no capture, no probe."""
    for name in ("a", "b"):
        res = subprocess.run([inspector_bin(), "snapshot", "--root", ROOT, "-o",
                              str(tmp_path / f"{name}.json")],
                             capture_output=True, text=True, timeout=120)
        assert res.returncode == 0, res.stderr
    names = imported(["diff", str(tmp_path / "a.json"), str(tmp_path / "b.json")])
    assert "inspector.compare.diff" in names
    heavy = DISCOVERY | FOREIGN_ROOTS | PROBES | LIVE | TUI | {"inspector.roots.host"}
    assert not heavy & names, sorted(heavy & names)


def test_the_top_level_help_is_the_whole_parsers_help(monkeypatch):
    """`inspector --help` names the commands from their summaries alone: the same text as the
    parser with every command's own parser built."""
    from inspector.cli import build_parser
    monkeypatch.setenv("COLUMNS", "100")
    res = subprocess.run([inspector_bin(), "--help"], capture_output=True, text=True,
                         timeout=60, env={**os.environ, "COLUMNS": "100"})
    assert res.returncode == 0, res.stderr
    assert res.stdout == build_parser().format_help()


def test_history_reads_a_database_without_the_live_samplers(tmp_path):
    """The recorded checks and probe runs: no sampler, no collector, no root opened."""
    db = str(tmp_path / "history.sqlite")
    res = subprocess.run([inspector_bin(), "record", "--once", "--root", ROOT, "--db", db],
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    names = imported(["history", "--db", db, "--checks"])
    assert "inspector.record.history" in names
    heavy = LIVE | DISCOVERY | FOREIGN_ROOTS | PROBES | TUI | {"inspector.record.store"}
    assert not heavy & names, sorted(heavy & names)
