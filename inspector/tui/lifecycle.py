"""Leaving for good when the terminal goes away: no process of ours may outlive the TUI.

A SIGHUP (ssh dropped, tmux session killed) or SIGTERM stops the probes and exits; anything
that could keep the process alive after that (a collector thread stuck on a hung disk, which
the interpreter would join at exit; a probe's worker processes, started in their own session
so the terminal's SIGHUP never reaches them; a vendor CLI still running under a collector) is
ended here: children are terminated, then killed, and the process leaves with os._exit.
"""
from __future__ import annotations

import os
import signal
import sys
import threading
import time

CHILD_GRACE_S = 0.5
REAP_AFTER_KILL_S = 0.2
_POLL_S = 0.02


def terminate_children(grace: float = CHILD_GRACE_S) -> list[int]:
    """SIGTERM every descendant of this process, wait up to `grace` seconds for them, SIGKILL
    the ones still there and reap what can be reaped. Returns the pids that were found.

    A child asleep in the kernel on a read that is never answered (psutil's 'disk-sleep': a
    reader of a hung mount) dies of neither signal until the read returns, so it is not
    waited for: the wait ends once every child left is in that state, and the SIGKILL takes
    effect whenever the read returns (init reaps it once we are gone)."""
    import psutil
    try:
        children = psutil.Process().children(recursive=True)
    except psutil.Error:
        return []
    for child in children:
        try:
            child.terminate()
        except psutil.Error:
            pass
    alive = _wait_unless_stuck(children, grace)
    for child in alive:
        try:
            child.kill()
        except psutil.Error:
            pass
    _wait_unless_stuck(alive, REAP_AFTER_KILL_S)
    return [c.pid for c in children]


def _wait_unless_stuck(procs: list, timeout: float) -> list:
    """Wait (reaping our own children) up to `timeout` for `procs` to end, or until each one
    left is stuck in the kernel or a zombie of another; the ones still there."""
    import psutil
    give_up = time.monotonic() + timeout
    alive = procs
    while alive:
        _, alive = psutil.wait_procs(alive, timeout=_POLL_S)
        if time.monotonic() >= give_up or all(_not_waitable(p) for p in alive):
            break
    return alive


def _not_waitable(proc) -> bool:
    """Stuck in the kernel, or a zombie another process must reap (a grandchild)."""
    import psutil
    try:
        return proc.status() in (psutil.STATUS_DISK_SLEEP, psutil.STATUS_ZOMBIE)
    except psutil.Error:
        return False


# what Textual's driver turns on (mouse reports, bracketed paste, focus events, the Kitty
# keyboard protocol, the alternate screen, no line wrap, hidden cursor), turned off
_TERMINAL_RESET = (b"\x1b[?1000l\x1b[?1003l\x1b[?1015l\x1b[?1006l\x1b[?2004l\x1b[?1004l"
                   b"\x1b[<u\x1b[?1049l\x1b[?7h\x1b[?25h")
RESTORE_WAIT_S = 0.2


TERMINAL_CHECK_S = 1.0


def watch_terminal(fd: int, interval: float = TERMINAL_CHECK_S) -> threading.Event | None:
    """Treat a terminal that hung up as a SIGHUP, even when none comes: the hangup signal goes
    to the session leader only, which may ignore it or not pass it on (`nohup`, a shell that
    traps HUP), and Textual then spins on the dead terminal's end of file for good. One
    isatty() a second (a hung-up tty fails every ioctl with EIO). Returns the event that
    stops the watch; None when `fd` is no terminal to begin with."""
    if not os.isatty(fd):
        return None
    stop = threading.Event()

    def watch() -> None:
        while not stop.wait(interval):
            if not os.isatty(fd):
                os.kill(os.getpid(), signal.SIGHUP)   # the app's handler leaves as for ssh's
                return
    threading.Thread(target=watch, daemon=True, name="terminal-watch").start()
    return stop


def restore_terminal(input_fd: int, output_fd: int, attrs: list | None) -> None:
    """Give a terminal that is still there its line mode and main screen back, without going
    through the UI's writer thread (which dies on a hung-up terminal, after which a write to it
    blocks). After a real hangup these writes fail at once (EIO); a write held by flow control
    (Ctrl-S) is given up after RESTORE_WAIT_S."""
    import termios
    import threading

    def restore() -> None:
        try:
            if attrs is not None:
                termios.tcsetattr(input_fd, termios.TCSANOW, attrs)
            if os.isatty(output_fd):
                os.write(output_fd, _TERMINAL_RESET)
        except (OSError, termios.error):
            pass
    writer = threading.Thread(target=restore, daemon=True, name="terminal-restore")
    writer.start()
    writer.join(RESTORE_WAIT_S)


def leave_now(code: int) -> None:
    """End the process at once: children first, then os._exit (no interpreter shutdown, which
    would wait for stuck worker threads)."""
    terminate_children()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:
            pass
    os._exit(code)


M_ARENA_MAX = -8   # glibc mallopt parameter


def limit_malloc_arenas(arenas: int = 2) -> bool:
    """Cap glibc's per-thread malloc arenas. Every thread that allocates (Textual's writer and
    input threads, workers) otherwise gets its own arena, whose partly used pages stay in RSS
    (tests/bench/bench_tui.py prints the Probes screen's peak RSS with and without the cap).
    Called before any thread starts; a no-op off glibc."""
    try:
        import ctypes
        libc = ctypes.CDLL(None)
        return bool(libc.mallopt(M_ARENA_MAX, arenas))
    except (OSError, AttributeError):
        return False


def skip_tls() -> None:
    """asyncio imports ssl at start for TLS transports the TUI never opens; with it came
    OpenSSL's libcrypto and libssl, 3.5 MB of the UI's resident size. Called by the binary
    before Textual (and so asyncio) is imported: `import ssl` then raises ImportError, which
    asyncio expects where ssl is missing. The host is read, and probes run, in children
    forked before this (tui.readers) or started afresh, which keep their own imports."""
    sys.modules.setdefault("ssl", None)  # type: ignore[arg-type]
