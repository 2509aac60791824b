"""The shell completions and the man page in inspector/share/, generated from the argparse
definitions: shtab writes the completions, argparse-manpage the man page. Both are development
dependencies (the `test` extra), not run-time ones: the generated files are shipped, and
tests/cli/test_shipped_files.py fails when they no longer match the parser.

    python -m inspector.cli_docs      # rewrite them after changing an option
"""
from __future__ import annotations

import argparse
import os
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from unittest import mock

from inspector import __version__

SHARE = Path(__file__).resolve().parent / "share"

# Arguments that name a file or a directory, completed as paths (by dest; the rest complete
# their choices, or nothing)
PATH_DESTS = {"root", "output", "db", "textfile", "before", "after", "log", "resolv_conf",
              "target"}
DIRECTORY_DESTS = {"directory"}


@contextmanager
def _stable_parser() -> Iterator[argparse.ArgumentParser]:
    """The full parser, built the same for whoever generates: argparse wraps help at $COLUMNS,
    and the default history database named in --db's help depends on the user (the man page
    and the completions describe a system install, where it is root's)."""
    with mock.patch.dict(os.environ, {"COLUMNS": "80"}), \
            mock.patch("os.geteuid", return_value=0):
        from inspector.cli import build_parser
        parser = build_parser()
        yield parser


def _subparsers(parser: argparse.ArgumentParser) -> Iterator[argparse.ArgumentParser]:
    yield parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in dict.fromkeys(action.choices.values()):
                yield from _subparsers(sub)


def closed_values() -> dict[tuple[str, str], tuple[tuple[str, ...], str]]:
    """(command, dest) -> values of an option whose set is closed but which argparse does not
    check as choices (repeatable, aliases, METRIC=RANGE ...), and what follows each value: ""
    it is the whole word, "=" or ":" the rest is typed after it."""
    from inspector.compare.fleet import WHERE_KEYS
    from inspector.outputs.check import THRESHOLD_METRICS
    from inspector.probes.request import KINDS
    from inspector.report.sections import NAMES
    specs = tuple(f"{kind}:" if kind != "dns" else "dns" for kind in map(str, KINDS))
    metrics = tuple(f"{name}=" for name in THRESHOLD_METRICS)
    return {
        ("inspector report", "section"): (NAMES, ""),
        ("inspector check", "section"): (NAMES, ""),
        ("inspector check", "warn"): (metrics, "="),
        ("inspector check", "crit"): (metrics, "="),
        ("inspector fleet", "where"): (tuple(f"{key}=" for key in WHERE_KEYS), "="),
        **{(f"inspector {command}", "probe"): (specs, ":")
           for command in ("snapshot", "record", "export", "tui", "history")},
    }


# bash: a value that ends in = or : is the start of the word, not all of it (no space after)
BASH_NO_SPACE_AFTER_PREFIX = """
# Inspector: after a value that ends in = or : (check -w steal=, fleet --where virt=, io:) the
# word goes on, so no space is added
_inspector_complete() {
  _shtab_inspector "$@"
  if [[ ${#COMPREPLY[@]} = 1 && ${COMPREPLY[0]} == *[=:] ]]; then
    compopt -o nospace 2>/dev/null || :
  fi
}
complete -o bashdefault -F _inspector_complete inspector
"""


def completion(shell: str) -> str:
    import shtab
    closed = closed_values()
    functions: dict[tuple[str, ...], str] = {}
    with _stable_parser() as parser:
        for p in _subparsers(parser):
            for action in p._actions:
                if action.dest in PATH_DESTS:
                    action.complete = shtab.FILE            # type: ignore[attr-defined]
                elif action.dest in DIRECTORY_DESTS:
                    action.complete = shtab.DIRECTORY       # type: ignore[attr-defined]
                elif (p.prog, action.dest) in closed:
                    values, goes_on = closed[(p.prog, action.dest)]
                    name = functions.setdefault(values, f"_inspector_values_{len(functions)}")
                    words = " ".join(values)
                    zsh = f"{{compadd -S '' -- {words}}}" if goes_on else f"({words})"
                    action.complete = {"bash": name, "zsh": zsh}  # type: ignore[attr-defined]
        preamble = "".join(f'{name}() {{ compgen -W "{" ".join(values)}" -- "$1"; }}\n'
                           for values, name in functions.items())
        script = shtab.complete(parser, shell=shell,
                                preamble=preamble if shell == "bash" else "")
    return script + BASH_NO_SPACE_AFTER_PREFIX if shell == "bash" else script


def exit_statuses(parser: argparse.ArgumentParser) -> dict[str, str]:
    """Command -> the exit status paragraph of its --help (argparse-manpage leaves the
    commands' epilogs out: the man page gathers these in an EXIT STATUS section)."""
    found = {}
    for p in _subparsers(parser):
        text = "\n\n".join(t for t in (p.description, p.epilog) if t)
        match = re.search(r"exit status.*?(?:\n\s*\n|\Z)", text,
                          re.IGNORECASE | re.DOTALL)
        if match and p is not parser:
            found[p.prog] = " ".join(match.group(0).split())
    return found


def man_page() -> str:
    from argparse_manpage.manpage import Manpage, _markup
    with _stable_parser() as parser:
        page = Manpage(parser)
        page.source = f"live-inspector {__version__}"
        page.manual = "Inspector manual"
        page.description = "storage, virtualization, NICs and resolver at a glance; live probes"
        page.date = ""            # no build date: the file changes only with the parser
        entries = [f".TP\n\\fB{_markup(prog)}\\fR\n{_markup(text)}"
                   for prog, text in exit_statuses(parser).items()]
        page.add_section("EXIT STATUS", ">", "\n".join(entries))
        for heading, items in (("ENVIRONMENT", ENVIRONMENT), ("FILES", FILES)):
            page.add_section(heading, ">", "\n".join(
                f".TP\n\\fB{_markup(name)}\\fR\n{_markup(text)}" for name, text in items))
        page.add_section("SEE ALSO", ">", _markup(SEE_ALSO))
        return str(page)


ENVIRONMENT = [
    ("INSPECTOR_DEBUG", "set (to anything): an internal error shows its traceback instead of "
                        "one line"),
    ("INSPECTOR_MAX_UNPACKED_BYTES, INSPECTOR_MAX_ENTRIES",
     "limits for unpacking a --root archive (default: 20 times its size, at least 256 MiB; "
     "200,000 entries)"),
    ("INSPECTOR_STATE_DIR", "where drive readings are kept between runs, to see a bad block "
                            "rate rise (default: /var/lib/inspector as root, else "
                            "$XDG_STATE_HOME/inspector)"),
    ("XDG_DATA_HOME", "the history database of a user other than root: "
                      "$XDG_DATA_HOME/inspector/history.sqlite (~/.local/share), created 0700"),
    ("XDG_CONFIG_HOME", "the user's inspector.toml: $XDG_CONFIG_HOME/inspector/inspector.toml "
                        "(~/.config)"),
    ("NO_COLOR", "no colours in the report or the terminal UI"),
    ("TERM", "dumb: no terminal UI, the report is printed instead"),
    ("COLUMNS", "the width top, fleet and the report fit to when stdout is a terminal"),
    ("LC_ALL, LC_CTYPE, LANG", "the charset output is written in; a character it lacks is "
                               "printed as ?"),
]
FILES = [
    ("/etc/inspector/inspector.toml", "the live rules' thresholds (the user's file overrides "
                                      "it key by key)"),
    ("/var/lib/inspector/history.sqlite", "the history database of record, history, top --db "
                                          "and tui --db, as root"),
    ("/var/lib/prometheus/node-exporter/inspector.prom", "the Prometheus textfile the shipped "
                                                         "inspector-export.timer writes"),
    ("inspector files", "prints where the shipped man page, completions, systemd units, alert "
                        "rules and dashboard are installed"),
]
SEE_ALSO = ("smartctl(8), nvme(1), mdadm(8), dmsetup(8), lsblk(8), ethtool(8), ioping(1), "
            "systemd.timer(5), promtool(1), prometheus-node-exporter(1)")


GENERATED: dict[str, Callable[[], str]] = {
    "completion/inspector.bash": lambda: completion("bash"),
    "completion/_inspector": lambda: completion("zsh"),
    "man/inspector.1": man_page,
}


def main() -> None:
    for name, generate in GENERATED.items():
        path = SHARE / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(generate(), encoding="utf-8")
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
