"""`inspector --ssh [USER@]HOST [COMMAND]`: a host with nothing installed, over the system ssh.

report, snapshot, check and export read a capture made on the host by its POSIX shell
(inspector.remote.capture); top and the TUI also sample it live over one ssh connection
(inspector.remote.live). Probes run on this machine only: over --ssh they would measure this
machine, not the host, so they are refused.
"""
from __future__ import annotations

import argparse
import time

from inspector.commands.common import EXIT_ERROR, CliError

# commands that read a host and take --ssh; the rest read files here or run probes
SSH_COMMANDS = ("report", "snapshot", "check", "export", "capture", "top", "tui")
NOT_OVER_SSH = "probes run on this machine only (over --ssh they would measure it, not {host})"


def _destination(text: str) -> str:
    from inspector.remote.ssh import check_destination
    try:
        return check_destination(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _option(text: str) -> str:
    from inspector.remote.ssh import check_option
    try:
        return check_option(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def add_ssh_arguments(parser: argparse.ArgumentParser) -> None:
    """The global --ssh and --ssh-option (`inspector --ssh HOST report`)."""
    parser.add_argument("--ssh", metavar="[USER@]HOST", type=_destination, default=None,
                        help="read HOST over the system ssh (its config, agent and known_hosts) "
                             "with only a POSIX shell there: report, snapshot, check, export, "
                             "capture, top and the TUI; also ssh://[USER@]HOST[:PORT]")
    parser.add_argument("--ssh-option", metavar="OPTION", type=_option, action="append",
                        default=[], help="an ssh -o option (ProxyJump=bastion, Port=2222; "
                                         "repeatable); host key checking stays on")


def target_from_args(args: argparse.Namespace, destination: str | None = None, batch=False):
    from inspector.remote.ssh import Target
    return Target(destination or args.ssh, tuple(getattr(args, "ssh_option", []) or []),
                  batch=batch)


def run_over_ssh(args: argparse.Namespace) -> int:
    command = args.command or "tui"
    if command not in SSH_COMMANDS:
        raise CliError(f"--ssh goes with {', '.join(SSH_COMMANDS)}; {command} reads files here"
                       + (" or runs probes, which run on this machine only"
                          if command in ("probe", "record") else ""))
    if getattr(args, "root", None) not in (None, "/"):
        raise CliError("--ssh and --root name two different hosts: give one")
    if getattr(args, "probe", None):
        raise CliError("--probe: " + NOT_OVER_SSH.format(host=args.ssh))
    if command == "capture":
        return int(args.func(args) or 0)
    if command == "check":
        return _check(args)
    if command == "top":
        from inspector.commands.ssh_live import run_top
        return run_top(args, target_from_args(args), open_remote(args))
    if command == "tui":
        from inspector.commands.tui import no_terminal_reason
        if no_terminal_reason() is None:
            from inspector.commands.ssh_live import run_tui
            return run_tui(args, target_from_args(args), open_remote(args))
    args.opened_root = open_remote(args)
    return int(args.func(args) or 0)


def open_remote(args: argparse.Namespace, deadline: float | None = None):
    """The host's capture over ssh, opened as a root; CliError (one line) when it cannot be.
    A capture cut short is used with what it holds, and said on stderr."""
    from inspector.captures.capture import CaptureError
    from inspector.commands.common import eprint
    from inspector.remote.capture import DEADLINE_S, TOOL_TIMEOUT_S, capture, open_capture
    from inspector.remote.ssh import SshError
    timeout = getattr(args, "timeout", None)
    tool_timeout = min(TOOL_TIMEOUT_S, timeout) if isinstance(timeout, (int, float)) \
        else TOOL_TIMEOUT_S
    try:
        remote = capture(target_from_args(args), tool_timeout=tool_timeout,
                         deadline=deadline or DEADLINE_S,
                         stall=min(30.0, deadline or 30.0))
        if remote.partial:
            eprint(f"warning: {remote.partial}: reading what arrived whole "
                   f"({remote.salvaged.members if remote.salvaged else 0} entries)")
        return open_capture(remote)
    except SshError as exc:
        raise CliError(str(exc)) from None
    except CaptureError as exc:
        raise CliError(f"ssh {args.ssh}: what came back is not a readable capture: "
                       f"{str(exc).partition(': ')[2] or exc}") from None


def _check(args: argparse.Namespace) -> int:
    """check is a Nagios plugin: a host that cannot be read is UNKNOWN (3) on stdout, within
    its --timeout."""
    from inspector.commands import check
    if args.timeout is None:
        args.timeout = check.CHECK_TIMEOUT + args.live
    if args.live:
        _unknown(args, f"--live: {NOT_OVER_SSH.format(host=args.ssh)}; the live rules need "
                       "`inspector --ssh HOST top`")
        return 3
    left = args.timeout - (time.monotonic() - args.started) - 2 * check.OUTPUT_MARGIN
    try:
        args.opened_root = open_remote(args, deadline=max(1.0, left * 0.6))
    except CliError as exc:
        _unknown(args, check.plugin_text(str(exc)))
        return 3
    return int(check.run(args) or 0)


def _unknown(args: argparse.Namespace, reason: str) -> None:
    if getattr(args, "checkmk", False):
        print(f'3 "Inspector" - {reason}')
    else:
        print(f"INSPECTOR UNKNOWN - {reason}")


__all__ = ["EXIT_ERROR", "SSH_COMMANDS", "add_ssh_arguments", "open_remote", "run_over_ssh"]
