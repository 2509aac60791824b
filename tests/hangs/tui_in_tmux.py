"""Drive the real TUI in a tmux pane, for hung_mount.py's runner (so inside the private mount
namespace with the silent mounts): wait until the screen shows every expected text, then end the
TUI (a key or a signal) and time how long its process takes to be gone.

    tui_in_tmux.py --expect TEXT [--expect TEXT ...] --end q|C-c|SIGTERM [--wait S] -- CMD...

Prints one JSON object: {"started" (the TUI's pid appeared), "shown_after" (seconds from start
to a screen with every expected text, None if never), "screen" (the last screen captured),
"exit_after" (seconds from the key or signal to the process gone and reaped by its shell),
"status" (its exit status as the shell saw it)}. The tmux server is killed at the end, so what
stays behind is only what the TUI itself left (the runner then checks none of it stays stuck).
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--expect", action="append", default=[])
    parser.add_argument("--end", default="q")
    parser.add_argument("--wait", type=float, default=20.0)
    parser.add_argument("--size", default="200x50")
    parser.add_argument("argv", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    argv = args.argv[1:] if args.argv[:1] == ["--"] else args.argv
    work = tempfile.mkdtemp(prefix="tui-hung-")
    status_file = os.path.join(work, "status")
    sock = os.path.join(work, "tmux.sock")
    width, height = args.size.split("x")

    def tmux(*words: str) -> str:
        return subprocess.run(["tmux", "-S", sock, *words], capture_output=True, text=True,
                              timeout=10).stdout

    # the shell records the exit status once the TUI's process is gone for good (reaped): a
    # process that cannot finish exiting never gets there
    command = " ".join(_quote(a) for a in argv)
    shell = f"env -u COLUMNS -u LINES {command}; echo $? > {status_file}"
    start = time.monotonic()
    tmux("new-session", "-d", "-s", "ui", "-x", width, "-y", height, "sh", "-c", shell)
    result: dict = {"started": False, "shown_after": None, "screen": "", "exit_after": None,
                    "status": None}
    try:
        pane = int(tmux("list-panes", "-t", "ui", "-F", "#{pane_pid}").strip())
        pid = _wait_child(pane, 10.0)
        result["started"] = pid is not None
        if pid is None:
            return _done(result)
        while time.monotonic() - start < args.wait:
            screen = tmux("capture-pane", "-p", "-t", "ui")
            result["screen"] = screen
            if all(text in screen for text in args.expect):
                result["shown_after"] = round(time.monotonic() - start, 3)
                break
            time.sleep(0.1)
        sent = time.monotonic()
        if args.end.startswith("SIG"):
            os.kill(pid, getattr(signal, args.end))
        else:
            tmux("send-keys", "-t", "ui", args.end)
        while time.monotonic() - sent < 15.0:
            if os.path.exists(status_file) and Path(status_file).read_text().strip():
                result["exit_after"] = round(time.monotonic() - sent, 3)
                result["status"] = int(Path(status_file).read_text().strip())
                break
            time.sleep(0.02)
    finally:
        tmux("kill-server")
    return _done(result)


def _wait_child(pid: int, timeout: float) -> int | None:
    """The first child of the pane's shell: the TUI."""
    give_up = time.monotonic() + timeout
    while time.monotonic() < give_up:
        try:
            with open(f"/proc/{pid}/task/{pid}/children") as f:
                children = f.read().split()
        except OSError:
            return None
        if children:
            return int(children[0])
        time.sleep(0.02)
    return None


def _quote(word: str) -> str:
    import shlex
    return shlex.quote(word)


def _done(result: dict) -> int:
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
