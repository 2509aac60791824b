"""A capture of a host over ssh: the shipped capture.sh run there by its POSIX shell, its
stdout (a tar.gz) received here into a private temporary directory.

Bounds: the whole run has a deadline, a host that sends nothing for `stall` seconds is given
up, and the stream is cut past `max_bytes` (an endless stream). A run cut short keeps the
members that arrived whole (inspector.remote.salvage); either way the result is opened only
through inspector.captures.capture.open_root, the safe extraction every --root goes through.
"""
from __future__ import annotations

import os
from dataclasses import dataclass

from inspector.captures.capture import CaptureError, open_root
from inspector.remote.salvage import Salvaged, salvage
from inspector.remote.ssh import Outcome, SshError, Target, run_to_file
from inspector.roots import tempdirs
from inspector.roots.host import HostRoot
from inspector.shipped import shipped_text

DEADLINE_S = 180.0         # a whole capture (tools bounded by TOOL_TIMEOUT each)
STALL_S = 30.0             # longest silence: a tool at its timeout prints nothing meanwhile
TOOL_TIMEOUT_S = 10.0
MAX_BYTES = 256 * 1024 * 1024   # compressed; real captures are tens of kB to a few MB
MAX_BYTES_ENV = "INSPECTOR_MAX_SSH_BYTES"


@dataclass
class RemoteCapture:
    """`path`: a tar.gz capture of the host, in a private temporary directory removed at exit.
    `partial`: why it lacks parts (None when the run ended in full)."""
    target: Target
    path: str
    outcome: Outcome
    partial: str | None = None
    salvaged: Salvaged | None = None


def capture_script(tool_timeout: float = TOOL_TIMEOUT_S) -> bytes:
    """capture.sh as sent to the host, each tool's timeout set in front of it."""
    return (f"INSPECTOR_TOOL_TIMEOUT={max(1, round(tool_timeout))}\n"
            + shipped_text("capture.sh")).encode()


def max_bytes() -> int:
    try:
        value = int(os.environ.get(MAX_BYTES_ENV, ""))
        return value if value > 0 else MAX_BYTES
    except ValueError:
        return MAX_BYTES


def capture(target: Target, *, tool_timeout: float = TOOL_TIMEOUT_S,
            deadline: float = DEADLINE_S, stall: float = STALL_S,
            limit: int | None = None, script: bytes | None = None) -> RemoteCapture:
    """Run capture.sh on the host; SshError (one line) when nothing usable came back."""
    tmp = tempdirs.make("inspector-ssh-")
    stream = os.path.join(tmp, "stream")
    fd = os.open(stream, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
    try:
        outcome = run_to_file(target, script if script is not None else capture_script(tool_timeout),
                              fd, deadline=deadline, stall=stall,
                              max_bytes=limit if limit is not None else max_bytes())
    finally:
        os.close(fd)
    where = f"ssh {target.destination}"
    if outcome.returncode == 255 or (outcome.received == 0 and outcome.returncode is not None
                                     and outcome.returncode != 0):
        tempdirs.remove(tmp)
        raise SshError(f"{where}: {outcome.ssh_message() or f'ssh exited {outcome.returncode}'}")
    if outcome.received == 0:
        tempdirs.remove(tmp)
        raise SshError(f"{where}: nothing received ({outcome.stopped or 'the script printed nothing'}"
                       + (f"; {outcome.ssh_message()}" if outcome.ssh_message() else "") + ")")
    path = os.path.join(tmp, f"{target.label}.tar.gz")
    if outcome.complete:
        os.rename(stream, path)
        return RemoteCapture(target, path, outcome)
    why = outcome.stopped or f"the script ended with status {outcome.returncode}"
    reason = f"{where}: {why} after {outcome.received} bytes"
    saved = salvage(stream, path, reason)
    os.unlink(stream)
    if not saved.members:
        tempdirs.remove(tmp)
        raise SshError(f"{reason}: nothing in it is a capture")
    return RemoteCapture(target, path, outcome, partial=reason, salvaged=saved)


def open_capture(remote: RemoteCapture) -> HostRoot:
    """The capture as a root (safe extraction), labelled with the host it came from;
    CaptureError when it cannot be read (a hostile or corrupt stream)."""
    root = open_root(remote.path)
    root.label = f"ssh {remote.target.destination}"
    return root


__all__ = ["CaptureError", "RemoteCapture", "SshError", "capture", "capture_script",
           "open_capture"]
