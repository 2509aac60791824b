"""`inspector top --db FILE [--from TIME] [--to TIME]`: the intervals `record --samples` stored,
printed as `top` prints live ones (the same blocks, the same JSON lines), times on the
recorded host's clock."""
from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from inspector.commands.common import CliError, eprint, path_argument, print_json
from inspector.documents.kinds import stamped
from inspector.model import to_jsonable
from inspector.record.time_points import FORMS, BadTime, describe, parse_point

if TYPE_CHECKING:
    from inspector.record.bounded_history import BoundedHistory, BoundedSamples


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--db", metavar="FILE", default=None, type=path_argument,
                   help="print the intervals `inspector record --samples` stored in this "
                        "history database instead of sampling (read-only)")
    p.add_argument("--from", dest="since", metavar="TIME", default=None,
                   help=f"with --db: the first interval to print ({FORMS}; times of day are "
                        "on the recorded host's clock; default: the first recorded)")
    p.add_argument("--to", dest="until", metavar="TIME", default=None,
                   help="with --db: the last interval to print (default: the last recorded)")


def wants_replay(args: argparse.Namespace) -> bool:
    if args.db is None and (args.since or args.until):
        raise CliError("--from and --to read a recording: give its --db FILE")
    return args.db is not None


def open_samples(path: str) -> tuple[BoundedHistory, BoundedSamples]:
    """The database read-only (never created, never written) and its samples, read from a
    child process (a database on a hung filesystem is given up in seconds); CliError for a
    missing or foreign file."""
    # here, not at the top: the database's modules serve --db only, not a live `top`
    from inspector.record.bounded_history import BoundedHistory
    from inspector.record.history import HistoryError, NoHistory
    try:
        db = BoundedHistory(path, create=False)
    except NoHistory:
        raise CliError(f"{path}: no such history database") from None
    except (HistoryError, OSError) as exc:
        raise CliError(str(exc)) from None
    if db.note:
        eprint(f"note: {db.path}: {db.note}")
    return db, db.samples()


def run_replay(args: argparse.Namespace, width: int | None) -> int:
    if getattr(args, "root", None):
        raise CliError("--db prints a recording; --root does not apply to it")
    from inspector.record.history import HistoryError
    db, reader = open_samples(args.db)
    try:
        with db:
            return _replay(args, width, reader)
    except HistoryError as exc:        # its filesystem stopped answering, a damaged page
        raise CliError(str(exc)) from None


def _replay(args: argparse.Namespace, width: int | None, reader: BoundedSamples) -> int:
    from inspector.live.text import format_block
    span = reader.span()
    if not span.intervals or span.first_ts is None or span.last_ts is None:
        _warn_damaged(reader, args.db)
        raise CliError(f"{args.db}: no recorded samples (`inspector record --samples` "
                       "records them)", status=1)
    try:
        start = _point(args.since, reader, span.last_ts)
        end = _point(args.until, reader, span.last_ts)
    except BadTime as exc:
        raise CliError(str(exc)) from None
    if start is not None and end is not None and start > end:
        raise CliError(f"--from {describe(start, reader.offset_near(start))} is after "
                       f"--to {describe(end, reader.offset_near(end))}")
    printed = 0
    for r in reader.between(start, end, limit=args.count or None):
        if args.json:
            print_json(stamped("inspector-top", to_jsonable(r)), indent=None)
        else:
            if printed:
                sys.stdout.write("\n")
            sys.stdout.write(format_block(r, show_idle=args.all, width=width))
        printed += 1
    sys.stdout.flush()
    _warn_damaged(reader, args.db)
    if not printed:
        first = describe(span.first_ts, reader.offset_near(span.first_ts))
        last = describe(span.last_ts, reader.offset_near(span.last_ts))
        raise CliError(f"no recorded interval in that period (recorded from {first} to "
                       f"{last})", status=1)
    return 0


def _warn_damaged(reader: BoundedSamples, path: str) -> None:
    """One line for what a malformed recording made the replay skip (inspector.record.damage)."""
    if reader.damage:
        from inspector.text.escapes import visible
        eprint(f"warning: {visible(reader.damage.line(path))}")


def _point(text: str | None, reader: BoundedSamples, latest: float | None) -> float | None:
    if text is None:
        return None
    return parse_point(text, offset_near=reader.offset_near, latest=latest)
