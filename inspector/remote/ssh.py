"""The system `ssh` client running a shell script on a host, bounded.

The operator's own ssh: ~/.ssh/config, ProxyJump, agents, ControlMaster and known_hosts work
as they do for them. Options are passed through with `-o`, but none that turns host key
checking off: a capture read from a host nobody verified could be anyone's. The script goes
to the host on stdin (`sh -s`), so nothing is written there.
"""
from __future__ import annotations

import ctypes
import os
import re
import select
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass, field

from inspector.children.parent_death import PR_SET_PDEATHSIG
from inspector.children.pipes import no_sigpipe

SSH_ENV = "INSPECTOR_SSH"          # the ssh client to run (default: ssh on PATH)
REMOTE_SHELL = "sh -s"             # what the host runs: its POSIX shell reading the script
CONNECT_TIMEOUT_S = 10             # ConnectTimeout unless the options say otherwise
STDERR_KEEP = 64 * 1024            # what is kept of ssh's own messages
_KILL_WAIT_S = 2.0

# A destination is a host name, an address, [USER@]HOST or ssh://[USER@]HOST[:PORT]: never an
# option (a leading '-' would be one to ssh), never blanks or control characters.
_DESTINATION = re.compile(r"(ssh://)?([A-Za-z0-9_][A-Za-z0-9._%+~-]*@)?"
                          r"(\[[0-9A-Fa-f:.]+\]|[0-9A-Fa-f]*:[0-9A-Fa-f:.]+|"
                          r"[A-Za-z0-9_][A-Za-z0-9._:-]*)(:[0-9]{1,5})?")
# Options that turn host key verification off, refused whatever their case or spacing
# (accept-new still refuses a changed key: it is what fleets of new hosts use)
_NO_HOST_KEY_CHECK = {"stricthostkeychecking": {"no", "off", "false"},
                      "userknownhostsfile": {"/dev/null", "none"},
                      "globalknownhostsfile": {"/dev/null", "none"}}


class SshError(Exception):
    """ssh could not run the script on the host; str() is one line for the user."""


def check_destination(text: str) -> str:
    """`text` as an ssh destination, or ValueError saying why it is not one."""
    if not text or text.startswith("-") or not _DESTINATION.fullmatch(text) or len(text) > 512:
        raise ValueError(f"{text[:80]!r} is not an ssh destination ([USER@]HOST or "
                         "ssh://[USER@]HOST[:PORT])")
    return text


def check_option(text: str) -> str:
    """An ssh `-o` option (KEY=VALUE or "KEY VALUE"), or ValueError: options that disable host
    key checking are refused."""
    key, _, value = text.replace("=", " ", 1).partition(" ")
    key, value = key.strip().lower(), value.strip().strip('"').lower()
    if not key or not value or "\n" in text or "\0" in text:
        raise ValueError(f"{text[:80]!r} is not an ssh option (KEY=VALUE)")
    if key in _NO_HOST_KEY_CHECK and value in _NO_HOST_KEY_CHECK[key]:
        raise ValueError(f"-o {text}: Inspector never turns host key checking off (add the "
                         "host's key to known_hosts, or name a known_hosts file with "
                         "UserKnownHostsFile=FILE)")
    return text


def host_label(destination: str) -> str:
    """The host part of a destination, safe as a file name: root@db1 -> db1,
    ssh://u@[fe80::1]:22 -> fe80__1."""
    host = destination.removeprefix("ssh://").rpartition("@")[2]
    if host.startswith("["):
        host = host[1:].partition("]")[0]
    elif host.count(":") == 1:
        host = host.partition(":")[0]
    return re.sub(r"[^A-Za-z0-9._-]", "_", host).strip(".") or "host"


@dataclass(frozen=True)
class Target:
    """One host as ssh reaches it."""
    destination: str
    options: tuple[str, ...] = ()
    batch: bool = False        # no password or passphrase prompt (fleets: no one to answer)

    @property
    def label(self) -> str:
        return host_label(self.destination)

    def argv(self, remote_command: str = REMOTE_SHELL) -> list[str]:
        ssh = os.environ.get(SSH_ENV) or shutil.which("ssh")
        if not ssh:
            raise SshError("ssh is not installed here (the openssh-client package)")
        keys = {o.replace("=", " ", 1).split(" ", 1)[0].lower() for o in self.options}
        argv = [ssh, "-T", "-x", "-a"]        # no terminal, no X11 or agent forwarding
        if "connecttimeout" not in keys:
            argv += ["-o", f"ConnectTimeout={CONNECT_TIMEOUT_S}"]
        if self.batch and "batchmode" not in keys:
            argv += ["-o", "BatchMode=yes"]
        for option in self.options:
            argv += ["-o", option]
        return [*argv, "--", self.destination, remote_command]


@dataclass
class Outcome:
    """How a run ended: `complete` when ssh and the script exited 0 in time."""
    returncode: int | None = None
    received: int = 0                  # bytes of stdout
    stopped: str | None = None         # why it was cut short (deadline, stall, byte cap)
    stderr: bytes = b""
    seconds: float = 0.0
    extra: dict = field(default_factory=dict)

    @property
    def complete(self) -> bool:
        return self.stopped is None and self.returncode == 0

    def ssh_message(self) -> str:
        """ssh's own last words (Host key verification failed., Connection refused ...)."""
        lines = [line.strip() for line in self.stderr.decode("utf-8", "replace").splitlines()
                 if line.strip() and not line.startswith("Warning: Permanently added")]
        return lines[-1][:300] if lines else ""


def _prctl():
    try:
        return ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None


_PRCTL = _prctl()      # looked up here: the forked child only calls it (fleets fork from threads)


def _end_with_parent() -> None:
    """In ssh's child before exec: SIGTERM when the thread that started it ends (the thread
    waits for ssh, so: when this process ends, however it ends)."""
    if _PRCTL is not None:
        _PRCTL(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)


def start(target: Target, script: bytes, keep_stdin: bool = False) -> subprocess.Popen:
    """ssh running `script` on the host; stdin stays open when `keep_stdin` (the live loop
    reads its requests there), else it is closed after the script."""
    try:
        proc = subprocess.Popen(
            target.argv(), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, start_new_session=True, close_fds=True,
            # ssh ends with this process however it ends (its session is its own, so the
            # terminal's signals do not reach it first)
            preexec_fn=_end_with_parent)
    except OSError as exc:
        raise SshError(f"cannot start ssh: {exc.strerror or exc}") from None
    assert proc.stdin is not None
    try:
        with no_sigpipe():
            proc.stdin.write(script)
            proc.stdin.flush()
            if not keep_stdin:
                proc.stdin.close()
    except (BrokenPipeError, OSError):
        pass        # ssh ended before reading: its exit status and stderr say why
    return proc


def stop(proc: subprocess.Popen) -> None:
    """End ssh and whatever it started here (its process group)."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(proc.pid, sig)
        except OSError:
            pass
        try:
            proc.wait(_KILL_WAIT_S)
            break
        except subprocess.TimeoutExpired:
            continue
    for pipe in (proc.stdin, proc.stdout, proc.stderr):
        try:
            if pipe is not None:
                pipe.close()
        except OSError:
            pass


def run_to_file(target: Target, script: bytes, out_fd: int, *, deadline: float, stall: float,
                max_bytes: int) -> Outcome:
    """Run `script` on the host, its stdout into `out_fd`, until it ends or: `deadline`
    seconds pass, no byte comes for `stall` seconds, or more than `max_bytes` come (an endless
    stream). What came before the cut is in `out_fd` either way."""
    started = time.monotonic()
    proc = start(target, script)
    out = Outcome()
    assert proc.stdout is not None and proc.stderr is not None
    pipes = {proc.stdout.fileno(): "out", proc.stderr.fileno(): "err"}
    last = started
    try:
        while pipes:
            now = time.monotonic()
            if now - started >= deadline:
                out.stopped = f"no end after {deadline:g} s (deadline)"
                break
            if now - last >= stall:
                out.stopped = f"nothing received for {stall:g} s (the host stopped answering)"
                break
            wait = max(0.01, min(deadline - (now - started), stall - (now - last), 1.0))
            ready, _, _ = select.select(list(pipes), [], [], wait)
            for fd in ready:
                chunk = os.read(fd, 1 << 16)
                if not chunk:
                    del pipes[fd]
                    continue
                if pipes[fd] == "err":
                    if len(out.stderr) < STDERR_KEEP:
                        out.stderr += chunk[:STDERR_KEEP - len(out.stderr)]
                    continue
                last = time.monotonic()
                room = max_bytes - out.received
                _write_all(out_fd, chunk[:room])
                out.received += min(len(chunk), room)
                if len(chunk) > room:
                    out.stopped = f"more than {max_bytes} bytes (an endless stream?)"
                    pipes.clear()
                    break
        if out.stopped is None:
            try:
                out.returncode = proc.wait(max(0.1, deadline - (time.monotonic() - started)))
            except subprocess.TimeoutExpired:
                out.stopped = f"no end after {deadline:g} s (deadline)"
    finally:
        stop(proc)         # a process still running is ended; the pipes are closed
        out.seconds = time.monotonic() - started
    return out


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]
