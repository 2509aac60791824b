"""The live samplers' reads over one ssh connection: a small loop in the host's POSIX shell
prints, each time it is asked, the files one sample needs, and nothing in between.

The loop reads one line per request on its stdin:

- `SEQ FLAGS [WORD...]` asks for frame SEQ (inspector.remote.frames): one `grep` over the
  /proc files of every sample (BASE below), every process's stat and every NIC's sysfs files,
  the io files of the processes named by `io+` (below) and what the WORDs ask for this once:
  `cPID` a process's command line, `sPID` its status, `wPID` where it waits in D (wchan,
  stack; `sPID/TID` and `wPID/TID` for a thread), `tPID` the stat of its threads. FLAGS may
  hold `a`: every process's io, not only those named; `m`: md arrays' resync files; `f`:
  filesystem fill, df under the host's `timeout` (inspector.remote.fill), the host's mount
  table beside it; `k`: nothing but the kernel log (/dev/kmsg read without blocking, or
  `dmesg -r`).
- `io+ PID...` and `io- PID...`: the processes whose /proc/PID/io every frame reads, added and
  taken out (inspector.remote.process_io); no answer.

grep and df's lines reach the client behind the name of the file they came from (df's and
the kernel log's through /proc/self/fd/N, one descriptor each), so no content can forge a
frame. When the client goes, its stdin ends and so does the loop: nothing is left running on
the host, nothing is written there. A request is answered only when made, so the host does
nothing between samples and the interval is the client's.
"""
from __future__ import annotations

import dataclasses
import shlex
import subprocess
import time
from collections.abc import Iterable

from inspector.remote import ssh
from inspector.remote.fill import GNU_COLUMNS
from inspector.remote.frames import Frame, FrameReader, StreamError, StreamTimeout
from inspector.remote.netdev import FROM_SYSFS

# what every sample reads (inspector.live.sampler's sources, but topology, filesystems,
# the kernel log and per-process io), beside what the loop lists itself: each process's
# stat, and each NIC's files but the counters /proc/net/dev has (inspector.remote.netdev)
BASE = ("/proc/uptime /proc/stat /proc/diskstats /proc/loadavg /proc/meminfo /proc/vmstat "
        "/proc/net/softnet_stat /proc/pressure/cpu /proc/pressure/io /proc/pressure/memory "
        "/proc/net/dev")
NIC_FILES = (*(f"statistics/{c}" for c in FROM_SYSFS), "operstate", "carrier", "ifindex")
# md arrays' resync progress (flag m: while the host's diskstats list md devices)
MD = ("/sys/block/md*/md/sync_action /sys/block/md*/md/sync_completed "
      "/sys/block/md*/md/sync_speed /sys/block/md*/md/degraded")
HELLO_TIMEOUT_S = 15.0
DF_TIMEOUT_S = 2          # the host's `timeout` ends a df stuck on a hung mount
# where the frame puts what is not a file: df -P -k, df -P -i, the kernel log
DF_BLOCKS, DF_INODES, KERNEL_LOG = "proc/self/fd/3", "proc/self/fd/4", "proc/self/fd/5"
DF_GNU = "proc/self/fd/6"
MOUNTINFO = "proc/self/mountinfo"

LOOP = r"""
exec 2>/dev/null
export LC_ALL=C
G=grep
if printf 'a\000b\n' | grep -a b >/dev/null 2>&1; then G='grep -a'; fi
T=
if timeout 9 true; then T="timeout $DF_TIMEOUT"; elif timeout -t 9 true; then T="timeout -t $DF_TIMEOUT"; fi
D=
if [ -n "$T" ]; then     # (by what df prints: one mount it cannot read makes its status 1)
    case $($T df -k --output=$DF_COLUMNS) in Filesystem*) D=gnu ;; *)
        case $($T df -P -k) in Filesystem*) D=posix ;; esac ;;
    esac
fi
K=
if dd if=/dev/null iflag=nonblock count=0; then K=dd; elif command -v dmesg >/dev/null; then K=dmesg; fi
W=$(date +%s 2>/dev/null)
printf '@@inspector-live 1 %s df=%s kmsg=%s\n' "${W:-0}" "${D:--}" "${K:--}"
# what is not a file reaches grep on a descriptor of its own, read as /proc/self/fd/N beside
# the frame's files (one grep a frame): GNU df's lines on 6; other dfs' -k and -i on 3 and 4,
# the two run at once (a hung mount costs one timeout); the kernel log on 5
frame() {
    case $flags in
    *k*)
        case $K in
        dd) dd if=/dev/kmsg iflag=nonblock bs=8192 | $G '' /proc/self/fd/5 /dev/null 5<&0 ;;
        dmesg) dmesg -r | $G '' /proc/self/fd/5 /dev/null 5<&0 ;;
        esac ;;
    *f*)
        if [ "$D" = gnu ]; then
            $T df -k --output=$DF_COLUMNS |
                $G '' $files /proc/self/mountinfo /proc/self/fd/6 6<&0
        else
            $T df -P -k | { $T df -P -i |
                $G '' $files /proc/self/mountinfo /proc/self/fd/3 /proc/self/fd/4 3<&9 4<&0
            } 9<&0
        fi ;;
    *) $G '' $files /dev/null ;;
    esac
}
IO=
set -f
while IFS= read -r request; do
    set -- $request
    case $1 in
    io+)
        shift
        for pid in "$@"; do
            case $pid in ''|*[!0-9]*) ;; *) IO="$IO /proc/$pid/io" ;; esac
        done
        continue ;;
    io-)
        shift
        for pid in "$@"; do
            rest="$IO "
            case $rest in *" /proc/$pid/io "*)
                rest="${rest%%" /proc/$pid/io "*} ${rest#*" /proc/$pid/io "}"
                IO="${rest% }" ;;
            esac
        done
        continue ;;
    ''|*[!0-9]*) continue ;;
    esac
    seq=$1; flags=$2
    shift 2 2>/dev/null || shift $#
    case $flags in *a*) files="$BASE" stat='stat io' ;; *) files="$BASE$IO" stat=stat ;; esac
    case $flags in *f*) [ -n "$D" ] || flags=- ;; esac
    for word in "$@"; do
        task=${word#?}
        case $task in ''|*[!0-9/]*|*/*/*) continue ;; esac
        case $task in */*) dir=/proc/${task%/*}/task/${task#*/} ;; *) dir=/proc/$task ;; esac
        case $word in
        c*) files="$files $dir/cmdline" ;;
        s*) files="$files $dir/status" ;;
        w*) files="$files $dir/wchan $dir/stack" ;;
        t*) files="$files $dir/task/*/stat" ;;
        esac
    done
    printf '@@frame %s\n' "$seq"
    set +f
    case $flags in *m*) files="$files $MD" ;; esac
    # one readdir each, no stat of every name a 'DIR/*/file' glob would cost
    for dir in /sys/class/net/*; do
        for name in $NIC_FILES; do files="$files $dir/$name"; done
    done
    for dir in /proc/[0-9]*; do
        for name in $stat; do files="$files $dir/$name"; done
    done
    frame
    set -f
    printf '@@end %s\n' "$seq"
done
"""


def loop_script() -> bytes:
    return (f"BASE={shlex.quote(BASE)}\nMD={shlex.quote(MD)}\n"
            f"NIC_FILES={shlex.quote(' '.join(NIC_FILES))}\n"
            f"DF_TIMEOUT={DF_TIMEOUT_S}\nDF_COLUMNS={GNU_COLUMNS}\n{LOOP}").encode()


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
        # what the host has: df=df (a df under `timeout`), kmsg=dd|dmesg; '-' for none
        self.has = dict(w.decode("ascii", "replace").partition("=")[::2] for w in words[2:])

    def read_io_of(self, add: Iterable[str] = (), remove: Iterable[str] = ()) -> None:
        """Processes whose io every frame reads from now on, added and taken out. Said with
        the next request; StreamError when the stream is over."""
        for word, pids in (("io-", list(remove)), ("io+", list(add))):
            if pids:
                self._send(" ".join([word, *pids]) + "\n")

    def ask(self, flags: str = "-", words: list[str] | None = None,
            timeout: float = 2.0) -> Frame:
        """One frame: StreamTimeout when it has not come whole in `timeout` seconds (the next
        request skips it), StreamError when the stream is over."""
        self.seq += 1
        self._send(" ".join([str(self.seq), flags or "-", *(words or [])]) + "\n")
        try:
            return self.reader.frame(self.seq, time.monotonic() + timeout)
        except StreamTimeout:
            raise
        except StreamError as exc:
            raise StreamError(f"{exc}{self._said()}") from None

    def _send(self, line: str) -> None:
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write(line.encode())
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError, ValueError):
            raise StreamError(f"the connection closed{self._said()}") from None
        self.sent += len(line)

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
