"""`inspector diff BEFORE AFTER`: what changed; exit 0 no regressions, 1 regressions, 2 error."""
from __future__ import annotations

import argparse

from inspector.commands import SUMMARIES
from inspector.commands.common import (
    EXIT_FOUND,
    EXIT_OK,
    CliError,
    add_schema_argument,
    exit_epilog,
    print_json,
)
from inspector.compare.diff import diff_snapshots
from inspector.compare.snapshot import SnapshotError, read_snapshot
from inspector.documents.kinds import stamped
from inspector.model import to_jsonable


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("diff", help=SUMMARIES["diff"],
                       epilog=exit_epilog(ok="no regressions", found="regressions"))
    p.add_argument("before", metavar="BEFORE", help="snapshot file (- reads stdin)")
    p.add_argument("after", metavar="AFTER", help="snapshot file (- reads stdin)")
    p.add_argument("--json", action="store_true", help="the changes as JSON")
    add_schema_argument(p, "diff")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.before == args.after == "-":
        raise CliError("BEFORE and AFTER cannot both be - (stdin holds one snapshot)")
    try:
        before, after = read_snapshot(args.before), read_snapshot(args.after)
    except SnapshotError as exc:
        raise CliError(str(exc)) from None
    try:
        result = diff_snapshots(before, after, args.before, args.after)
    except Exception as exc:   # a shape read_snapshot did not foresee: exit 2, never 1
        raise CliError(f"cannot compare {args.before} and {args.after}: "
                       f"{type(exc).__name__}: {exc}") from None
    status = EXIT_FOUND if result.regressions else EXIT_OK
    if args.json:
        print_json(stamped("inspector-diff", {
            "before": args.before, "after": args.after, "regressions": len(result.regressions),
            "changes": to_jsonable(result.changes)}))
        return status
    from rich.console import Console

    from inspector.render.diff import render_diff
    from inspector.text.escapes import printable
    console = Console(highlight=False)
    try:   # names and messages from the snapshots never reach the terminal as escapes
        lines = render_diff(printable(result), console.width)
    except Exception as exc:   # exit 1 would say "regressions": a failure to show is 2
        raise CliError(f"cannot show the diff ({type(exc).__name__}: {exc}); "
                       "`inspector diff --json` has it") from None
    for line in lines:
        console.print(line, soft_wrap=True)   # lines are already fitted to the width
    return status
