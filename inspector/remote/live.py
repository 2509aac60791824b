"""The live samplers' reads over one ssh connection: a small loop in the host's POSIX shell
prints, each time it is asked, the files one sample needs, and nothing in between.

The loop reads one request line per sample on its stdin, `SEQ FLAGS [PATH...]`, and answers
with one frame (inspector.remote.frames): one `grep` over the /proc and /sys files of every
sample (BASE below) and the PATHs asked for (new processes' command lines and status, tasks
in D), and when FLAGS holds `s` (every STATUS_EVERY samples: swap use moves slowly) a second
over every process's status keeping the lines the samplers read (Uid, VmSwap, the context
switches): a tenth of the bytes. When
the client goes, its stdin ends and so does the loop: nothing is left running on the host,
nothing is written there. A request is answered only when made, so the host does nothing
between samples and the interval is the client's.
"""
from __future__ import annotations

import dataclasses
import shlex
import subprocess
import time

from inspector.live.netstats import COUNTERS
from inspector.remote import ssh
from inspector.remote.frames import Frame, FrameReader, StreamError, StreamTimeout

# what every sample reads (inspector.live.sampler's sources, but topology, filesystems and
# the kernel log): the patterns are globbed by the host's shell
BASE = ("/proc/uptime /proc/stat /proc/diskstats /proc/loadavg /proc/meminfo /proc/vmstat "
        "/proc/net/softnet_stat /proc/pressure/cpu /proc/pressure/io /proc/pressure/memory "
        + " ".join(f"/sys/class/net/*/statistics/{c}" for c in COUNTERS)
        + " /sys/class/net/*/operstate /sys/class/net/*/carrier /sys/class/net/*/ifindex "
        "/sys/block/md*/md/sync_action /sys/block/md*/md/sync_completed "
        "/sys/block/md*/md/sync_speed /sys/block/md*/md/degraded "
        "/proc/[0-9]*/stat /proc/[0-9]*/io")
STATUS = "/proc/[0-9]*/status"
HELLO_TIMEOUT_S = 15.0

LOOP = r"""
exec 2>/dev/null
export LC_ALL=C
G=grep
if printf 'a\000b\n' | grep -a b >/dev/null 2>&1; then G='grep -a'; fi
W=$(date +%s 2>/dev/null)
printf '@@inspector-live 1 %s\n' "${W:-0}"
set -f
while IFS= read -r request; do
    set -- $request
    seq=$1; flags=$2
    case $seq in ''|*[!0-9]*) continue ;; esac
    shift 2 2>/dev/null || shift $#
    files="$BASE" status=
    case $flags in *s*) status="$STATUS" ;; esac
    for path in "$@"; do
        case $path in *..*) ;; /proc/[0-9]*|/sys/*) files="$files $path" ;; esac
    done
    printf '@@frame %s\n' "$seq"
    set +f
    $G '' $files /dev/null
    [ -n "$status" ] && $G -e '^Uid:' -e '^VmSwap:' -e '_ctxt_switches:' $status /dev/null
    set -f
    printf '@@end %s\n' "$seq"
done
"""


def loop_script() -> bytes:
    return (f"BASE={shlex.quote(BASE)}\nSTATUS={shlex.quote(STATUS)}\n{LOOP}").encode()


class LiveStream:
    """The loop running on the host: `ask(flags, paths, timeout)` -> Frame, one request at a
    time (a frame given up on is skipped when the next one is read). Asked in this process:
    what it waits on is a pipe with a deadline, never a read the kernel may not answer, so
    the sampler needs no child process of its own here (inspector.live.worker)."""

    def __init__(self, target: ssh.Target, hello_timeout: float = HELLO_TIMEOUT_S):
        self.target = target
        keys = {o.replace("=", " ", 1).split(" ", 1)[0].lower() for o in target.options}
        if "compression" not in keys:       # the frames are text that compresses tenfold
            target = dataclasses.replace(target, options=(*target.options, "Compression=yes"))
        self.proc: subprocess.Popen = ssh.start(target, loop_script(), keep_stdin=True)
        assert self.proc.stdout is not None and self.proc.stdin is not None
        self.reader = FrameReader(self.proc.stdout.fileno())
        self.seq = 0
        self.sent = 0
        try:
            words = self.reader.hello(time.monotonic() + hello_timeout)
        except StreamError as exc:
            message = self._ssh_message()
            self.close()
            raise ssh.SshError(f"ssh {target.destination}: live loop did not start ("
                               f"{message or exc})") from None
        self.remote_wall = float(words[1]) if len(words) > 1 and words[1].isdigit() \
            and int(words[1]) > 0 else None

    def ask(self, flags: str = "-", paths: list[str] | None = None,
            timeout: float = 2.0) -> Frame:
        """One frame: StreamTimeout when it has not come whole in `timeout` seconds (the next
        request skips it), StreamError when the stream is over."""
        self.seq += 1
        line = " ".join([str(self.seq), flags or "-", *(paths or [])]) + "\n"
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write(line.encode())
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError, ValueError):
            raise StreamError(f"the connection closed{self._said()}") from None
        self.sent += len(line)
        try:
            return self.reader.frame(self.seq, time.monotonic() + timeout)
        except StreamTimeout:
            raise
        except StreamError as exc:
            raise StreamError(f"{exc}{self._said()}") from None

    def _ssh_message(self) -> str:
        if self.proc.poll() is None or self.proc.stderr is None:
            return ""
        try:
            data = self.proc.stderr.read(ssh.STDERR_KEEP)
        except (OSError, ValueError):
            return ""
        return ssh.Outcome(stderr=data or b"").ssh_message()

    def _said(self) -> str:
        message = self._ssh_message()
        return f" ({message})" if message else ""

    def close(self) -> None:
        ssh.stop(self.proc)
