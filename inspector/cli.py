"""`inspector` command line: argparse subcommands, each a thin shell over the core.

Every subcommand module in inspector/commands/ exposes `register(subparsers)`, which adds its
parser and sets `func(args) -> int`. `--root` is accepted before or after the subcommand.
With no subcommand, the TUI opens."""
from __future__ import annotations

import argparse
import importlib
import os
import signal
import sys

from inspector import __version__
from inspector.commands import SUMMARIES
from inspector.commands.common import (
    EXIT_ERROR,
    SIGNAL_EXIT,
    CliError,
    add_root_argument,
    exit_epilog,
)
from inspector.commands.console_encoding import replace_unencodable
from inspector.commands.ssh import add_ssh_arguments

COMMANDS = list(SUMMARIES)      # in the order --help lists them

EPILOG = exit_epilog(
    ok="success", signals=True,
    found="the command ran and found what it looks for (diff, fleet: regressions; probe: a "
          "failed request, errors from the server or a server down; history: nothing "
          "recorded; record: a sample not written)") + (
    " check is a Nagios plugin: 0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN (usage mistakes too). "
    "Each command's --help says its own.")


class OneLineErrorParser(argparse.ArgumentParser):
    """Usage mistakes in one line, like every other error of ours (the usage block scrolls the
    mistake off a small SSH window); --help has the rest. Subparsers inherit the class."""

    # `inspector check` is run by Nagios/Icinga: a usage mistake there is UNKNOWN (3) with the
    # reason on stdout, where the monitoring system looks, not exit 2 (which reads CRITICAL)
    monitoring_plugin = False

    def error(self, message: str):
        line = f"{self.prog}: {message} (see {self.prog} --help)"
        if self.monitoring_plugin:   # '|' starts perfdata for Nagios: not in our text
            print(f"INSPECTOR UNKNOWN - {line}".replace("|", "/"))
            self.exit(3)
        self.exit(EXIT_ERROR, line + "\n")


def build_parser(argv: list[str] | None = None) -> OneLineErrorParser:
    """The parser; given argv, only the named command's module is imported (each command
    imports its own machinery, and `inspector report` over a slow SSH link should not pay
    for the probes' imports). `--help` and unknown commands get every command's name and
    summary; without argv, every command's whole parser."""
    needed, at = _find_command(argv)
    description = None
    # only where the top-level help can be shown (a named command shows its own): the probe
    # specs it names would import the probes for `inspector report`
    if needed == COMMANDS or needed == ["tui"]:
        from inspector.probes.request import SPEC_HELP
        description = (
            "Storage stack and health, virtualization layers, NICs and resolver at a glance; "
            "live probes. With no command, opens the terminal UI: `inspector --probe SPEC "
            "[--probe SPEC]... [--probe-seconds DURATION]` opens it with those probes "
            f"started, in order ({SPEC_HELP}; see `inspector tui --help`).")
    parser = OneLineErrorParser(prog="inspector", description=description, epilog=EPILOG)
    parser.add_argument("-V", "--version", action="version", version=f"inspector {__version__}")
    add_root_argument(parser, top_level=True)
    add_ssh_arguments(parser)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    if argv is not None and needed == COMMANDS:
        # the top-level help or an unknown command: no command's own parser is used, only its
        # name and one-line help (importing every command's machinery took ~0.2 s of CPU)
        for name in needed:
            sub.add_parser(name, help=SUMMARIES[name])
    else:
        for name in needed:
            module = importlib.import_module(f"inspector.commands.{name}")
            if name == "probe" and argv is not None and at is not None:
                module.register(sub, argv[at + 1:])     # only the kind named is built
            else:
                module.register(sub)
    # unknown options are reported by the top-level parser: it speaks for check too
    parser.monitoring_plugin = needed == ["check"]
    return parser


# the TUI's options that take a value, accepted with no command (`inspector --probe io:/srv`)
TUI_VALUE_OPTIONS = ("--probe", "--probe-seconds", "--refresh", "--live-interval", "--db")
# global options that take a value: they stay in front of an implied `tui`
GLOBAL_VALUE_OPTIONS = ("--root", "--ssh", "--ssh-option")


def _find_command(argv: list[str] | None) -> tuple[list[str], int | None]:
    """(the commands whose parsers are needed, where the command's word is in argv)."""
    if argv is None:
        return COMMANDS, None
    words = iter(enumerate(argv))
    for at, word in words:
        if word in (*GLOBAL_VALUE_OPTIONS, *TUI_VALUE_OPTIONS):
            next(words, None)
        elif word.startswith(tuple(f"{o}=" for o in (*GLOBAL_VALUE_OPTIONS, *TUI_VALUE_OPTIONS))):
            continue
        elif word in COMMANDS:
            return [word], at
        elif word in ("-V", "--version"):
            return [], None   # printed as the top-level options are parsed: no command needed
        elif not word.startswith("-") or word in ("-h", "--help"):
            return COMMANDS, None   # an unknown command or top-level help: list them all
    return ["tui"], None      # no command: the TUI opens


def _tui_options_without_command(argv: list[str]) -> bool:
    """The TUI's own options given with no command: the top-level parser does not know them."""
    return _find_command(argv)[0] == ["tui"] and "tui" not in argv and any(
        w in TUI_VALUE_OPTIONS or w.startswith(tuple(f"{o}=" for o in TUI_VALUE_OPTIONS))
        for w in argv)


def _with_tui(argv: list[str]) -> list[str]:
    """argv with the implied `tui` command after --ssh and --ssh-option (the TUI's parser does
    not know them) and before the rest."""
    front: list[str] = []
    rest = list(argv)
    while rest and (rest[0] in ("--ssh", "--ssh-option")
                    or rest[0].startswith(("--ssh=", "--ssh-option="))):
        word = rest.pop(0)
        front.append(word)
        if "=" not in word and rest:
            front.append(rest.pop(0))
    return [*front, "tui", *rest]


def _interrupted(exc: KeyboardInterrupt) -> int:
    """Ctrl-C, or another stop signal raised the same way once the probe runs it stopped were
    over (inspector.probes.driver.StoppedBySignal): 128 + N."""
    signum = getattr(exc, "signum", signal.SIGINT)
    print("inspector: interrupted" if signum == signal.SIGINT
          else f"inspector: stopped by {signal.Signals(signum).name}", file=sys.stderr)
    return SIGNAL_EXIT + signum


def main(argv: list[str] | None = None) -> int:
    # Die quietly when piped into `head`; the TUI installs its own handlers.
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    replace_unencodable()     # print in any locale's charset (ja_JP.eucJP, ISO-8859-1 ...)
    argv = sys.argv[1:] if argv is None else list(argv)
    try:   # Ctrl-C while the command's modules import: no traceback either
        parser = build_parser(argv)
        if _tui_options_without_command(argv):
            args = parser.parse_args(_with_tui(argv))
        else:
            args = parser.parse_args(argv)
            if not args.command:
                args = parser.parse_args(_with_tui(argv))
    except KeyboardInterrupt as exc:
        return _interrupted(exc)
    try:
        if getattr(args, "ssh", None):
            from inspector.commands.ssh import run_over_ssh
            return run_over_ssh(args)
        return int(args.func(args) or 0)
    except CliError as exc:
        print(f"inspector: {exc}", file=sys.stderr)
        return exc.status
    except KeyboardInterrupt as exc:
        return _interrupted(exc)
    except Exception as exc:
        # a bug of ours must not read as a verdict: exit 1 means "regressions" to diff and
        # WARNING to Nagios; 2 (3 for check) says the command itself failed
        line = f"internal error: {type(exc).__name__}: {exc}"
        if os.environ.get("INSPECTOR_DEBUG"):
            raise
        if parser.monitoring_plugin:
            print(f"INSPECTOR UNKNOWN - {line}".replace("|", "/"))
            return 3
        print(f"inspector: {line} (INSPECTOR_DEBUG=1 shows the traceback)", file=sys.stderr)
        return EXIT_ERROR


if __name__ == "__main__":
    raise SystemExit(main())
