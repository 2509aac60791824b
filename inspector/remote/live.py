"""The live samplers' reads over one ssh connection: a small loop in the host's POSIX shell
prints, each time it is asked, the files one sample needs, and nothing in between.

The loop reads one line per request on its stdin:

- `SEQ FLAGS [WORD...]` asks for frame SEQ (inspector.remote.frames): the /proc files of every
  sample (BASE below), every process's stat and every NIC's sysfs files, the io files of the
  processes named by `io+` (below) and what the WORDs ask for this once: `cPID` a process's
  command line, `sPID` its status, `wPID` where it waits in D (wchan, stack; `sPID/TID` and
  `wPID/TID` for a thread), `tPID` the stat of its threads. FLAGS may hold `a`: every
  process's io, not only those named; `m`: md arrays' resync files; `f`: filesystem fill, df
  under the host's `timeout` (inspector.remote.fill), the host's mount table beside it; `k`:
  nothing but the kernel log (/dev/kmsg read without blocking, or `dmesg -r`).
- `io+ PID...` and `io- PID...`: the processes whose /proc/PID/io every frame reads, added and
  taken out (inspector.remote.process_io); no answer.

Who reads the files (the hello's `read=`): where the host has awk, one awk started with the
loop reads them (AWK_READER), told by the shell what it globbed: no process is started for a
frame of files, which is what most of the loop's CPU went to beside the kernel's (a fork and
exec of grep, ~1 ms a sample, and the shell's list of 200 paths). df and the kernel log, and
command lines and wait channels where awk cuts a line at its NUL (mawk -W interactive and
busybox: `cmdline=grep`; gawk keeps them: `cmdline=awk`), are read by a grep the shell starts
(for live processes only), printed before awk's part of the frame; the client asks for those
only when the previous frame came whole (LiveStream.direct_ok), so awk is idle then and the
two never write at once. Without awk (`read=grep`): one grep a frame reads the lot.

grep prints every line behind the name of its file, and awk as grep does; df's and the kernel
log's lines come through /proc/self/fd/N, one descriptor each; so no content can forge a
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

from inspector.children.pipes import no_sigpipe
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

# The whole script is one `{ ... }`: the host's shell parses all of it before it prints the
# hello, so no request can be read as script text.
LOOP = r"""{
exec 2>/dev/null 7>&1
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
# awk, reading its input a line at a time: mawk reads a pipe ahead until its buffer is full,
# and stops at a file's read error (a down NIC's carrier), unless -W interactive (gawk and
# busybox refuse it); and whether it keeps a NUL inside a line (a command line's): mawk -W
# interactive and busybox end the line there
A= N=
for awk in 'awk -W interactive' awk; do
    if $awk 'BEGIN { printf "" > "/proc/self/fd/1" }' >/dev/null; then
        A=$awk
        if $awk 'BEGIN { getline l < "/proc/self/cmdline"; x = l ":"; exit !(length(x) > 9) }'
        then N=1; fi
        break
    fi
done
W=$(date +%s 2>/dev/null)
R=grep C=grep
[ -z "$A" ] || R=awk
[ -z "$N" ] || C=awk
printf '@@inspector-live 1 %s df=%s kmsg=%s read=%s cmdline=%s\n' "${W:-0}" "${D:--}" \
    "${K:--}" "$R" "$C"
# what is not a file reaches grep on a descriptor of its own, read as /proc/self/fd/N beside
# the files it is given: GNU df's lines on 6; other dfs' -k and -i on 3 and 4, the two run at
# once (a hung mount costs one timeout); the kernel log on 5
fill() {
    if [ "$D" = gnu ]; then
        $T df -k --output=$DF_COLUMNS | $G '' "$@" /proc/self/mountinfo /proc/self/fd/6 6<&0
    else
        $T df -P -k | { $T df -P -i |
            $G '' "$@" /proc/self/mountinfo /proc/self/fd/3 /proc/self/fd/4 3<&9 4<&0
        } 9<&0
    fi
}
kernel_log() {
    case $K in
    dd) dd if=/dev/kmsg iflag=nonblock bs=8192 | $G '' /proc/self/fd/5 /dev/null 5<&0 ;;
    dmesg) dmesg -r | $G '' /proc/self/fd/5 /dev/null 5<&0 ;;
    esac
}
# read=awk: the shell globs, awk reads (AWK_READER: its input is this function's output); df,
# the kernel log and, where awk cuts at a NUL (cmdline=grep), command lines and wait channels
# (mawk's line reads also garble a last line without newline, as wchan's) go out first, on 7
# (the loop's stdout), read by grep
awk_frames() {
    while IFS= read -r request; do
        set -- $request
        case $1 in
        io+|io-) printf '%s\n' "$request"; continue ;;
        ''|*[!0-9]*) continue ;;
        esac
        case $2 in *k*)
            { printf '@@frame %s\n' "$1"; kernel_log; printf '@@end %s\n' "$1"; } >&7
            continue ;;
        esac
        seq=$1 flags=$2
        shift 2 2>/dev/null || shift $#
        direct=
        [ -n "$N" ] || case " $request" in *" c"*|*" w"*)
            for word; do
                task=${word#?}
                case $task in ''|*[!0-9/]*|*/*/*) continue ;; esac
                case $task in */*) dir=/proc/${task%/*}/task/${task#*/} ;; *) dir=/proc/$task ;; esac
                [ -e "$dir" ] || continue      # gone since the last frame: no grep for it
                case $word in
                c*) direct="$direct $dir/cmdline" ;;
                w*) direct="$direct $dir/wchan" ;;
                esac
            done ;;
        esac
        case $flags in *f*) [ -n "$D" ] || flags=${flags%%f*}${flags#*f} ;; esac
        case $flags in
        *f*) printf '@@frame %s\n' "$seq" >&7; fill $direct >&7 ;;
        *) [ -z "$direct" ] || { printf '@@frame %s\n' "$seq"; $G '' $direct /dev/null; } >&7 ;;
        esac
        case $flags$direct in
        *f*|*/*) printf 'S %s %s\n' "$seq" "$flags" ;;
        *) printf 'R %s %s\n' "$seq" "$flags" ;;
        esac
        [ $# = 0 ] || printf 'x%s\n' "$@"
        set +f
        printf 'p%s\n' /proc/[0-9]*
        printf 'n%s\n' /sys/class/net/*
        case $flags in *m*) printf 'f%s\n' $MD ;; esac
        case " $request" in *" t"*)
            for word; do
                case $word in t|t*[!0-9]*) ;; t*) printf 't%s\n' /proc/${word#t}/task/[0-9]* ;; esac
            done ;;
        esac
        set -f
        echo E
    done
}
# read=grep: one grep a frame over the files the loop lists itself
grep_frames() {
    IO=
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
        case $flags in
        *k*) kernel_log ;;
        *f*) fill $files ;;
        *) $G '' $files /dev/null ;;
        esac
        set -f
        printf '@@end %s\n' "$seq"
    done
}
set -f
if [ -n "$A" ]; then
    awk_frames | $A -v BASE="$BASE" -v NIC_FILES="$NIC_FILES" -v NUL="$N" "$AWK_READER"
else
    grep_frames
fi
}
"""

# Reads each frame's files, listed by the shell's awk_frames() above (R or S SEQ FLAGS, then a
# line per word, glob and file, then E), and prints them as grep does (PATH:LINE), a file's
# lines in one print (not printf: its %s ends at a NUL), on a stream of its own: mawk -W
# interactive writes stdout unbuffered, a write per print; this one is written at frame's end.
AWK_READER = r"""
function put(path,   line) {
    while ((getline line < path) > 0) print path ":" line > OUT
    close(path)
}
# a stat is one line: read no further (no read to see its end), but where a newline in the
# process's name cut it (the line then holds at most "PID (" and 15 bytes of name)
function put_stat(path,   line) {
    if ((getline line < path) > 0) {
        print path ":" line > OUT
        if (length(line) < 64)
            while ((getline line < path) > 0) print path ":" line > OUT
    }
    close(path)
}
function frame(   i, j, w, t, d) {
    for (i = 1; i <= nbase; i++) put(base[i])
    if (flags ~ /a/)
        for (i = 1; i <= npid; i++) { put_stat(pid[i] "/stat"); put(pid[i] "/io") }
    else {
        for (i = 1; i <= npid; i++) put_stat(pid[i] "/stat")
        for (w in io) put("/proc/" w "/io")
    }
    for (i = 1; i <= nword; i++) {
        w = substr(word[i], 1, 1); t = substr(word[i], 2)
        if (t !~ /^[0-9]+(\/[0-9]+)?$/) continue
        j = index(t, "/")
        d = j ? "/proc/" substr(t, 1, j - 1) "/task/" substr(t, j + 1) : "/proc/" t
        if (w == "s") put(d "/status")
        else if (w == "c" && NUL) put(d "/cmdline")
        else if (w == "w") { if (NUL) put(d "/wchan"); put(d "/stack") }
    }
    for (i = 1; i <= ntask; i++) put_stat(task[i] "/stat")
    for (i = 1; i <= nfile; i++) put(file[i])
    for (i = 1; i <= nnic; i++) for (j = 1; j <= nnicfile; j++) put(nic[i] "/" nicfile[j])
}
BEGIN {
    OUT = "/proc/self/fd/1"
    nbase = split(BASE, base, " "); nnicfile = split(NIC_FILES, nicfile, " ")
}
{ c = substr($0, 1, 1) }
c == "p" { pid[++npid] = substr($0, 2); next }
c == "n" { nic[++nnic] = substr($0, 2); next }
c == "t" { task[++ntask] = substr($0, 2); next }
c == "f" { file[++nfile] = substr($0, 2); next }
c == "x" { word[++nword] = substr($0, 2); next }
c == "R" || c == "S" {
    seq = $2; flags = $3
    npid = nnic = ntask = nfile = nword = 0
    if (c == "R") print "@@frame " seq > OUT
    next
}
c == "E" {
    frame()
    print "@@end " seq > OUT
    fflush(OUT)
    next
}
$1 == "io+" { for (i = 2; i <= NF; i++) if ($i ~ /^[0-9]+$/) io[$i] = 1; next }
$1 == "io-" { for (i = 2; i <= NF; i++) delete io[$i]; next }
"""


def loop_script() -> bytes:
    return (f"BASE={shlex.quote(BASE)}\nMD={shlex.quote(MD)}\n"
            f"NIC_FILES={shlex.quote(' '.join(NIC_FILES))}\n"
            f"DF_TIMEOUT={DF_TIMEOUT_S}\nDF_COLUMNS={GNU_COLUMNS}\n"
            f"AWK_READER={shlex.quote(AWK_READER)}\n{LOOP}").encode()


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
        # what the host has: df=gnu|posix (a df under `timeout`), kmsg=dd|dmesg ('-' for
        # none); who reads the files: read=awk|grep, and command lines: cmdline=awk|grep
        self.has = dict(w.decode("ascii", "replace").partition("=")[::2] for w in words[2:])
        self._whole = True          # the last frame came whole: the host's awk has written it
        # the words grep reads beside awk: command lines and wait channels where awk cuts a
        # line at its NUL (mawk -W interactive, busybox)
        self.by_grep = "cw" if self.has.get("read") == "awk" and \
            self.has.get("cmdline") == "grep" else ""

    @property
    def direct_ok(self) -> bool:
        """Whether the next frame may ask for what grep reads beside awk (df and the kernel log:
        flags `f` and `k`; the words of `by_grep`): grep writes them before awk's part, so only
        while awk has nothing left to write, i.e. when the last frame came whole. Always with
        read=grep."""
        return self.has.get("read") != "awk" or self._whole

    def read_io_of(self, add: Iterable[str] = (), remove: Iterable[str] = ()) -> None:
        """Processes whose io every frame reads from now on, added and taken out. Said with
        the next request; StreamError when the stream is over."""
        for word, pids in (("io-", list(remove)), ("io+", list(add))):
            if pids:
                self._send(" ".join([word, *pids]) + "\n")

    def ask(self, flags: str = "-", words: list[str] | None = None,
            timeout: float = 2.0) -> Frame:
        """One frame: StreamTimeout when it has not come whole in `timeout` seconds (the next
        request skips it), StreamError when the stream is over. What direct_ok forbids is
        left out of the request."""
        if not self.direct_ok:       # (see direct_ok: the caller asks again later)
            flags = "".join(f for f in flags if f not in "fk")
            words = [w for w in words or [] if w[:1] not in self.by_grep]
        self.seq += 1
        self._send(" ".join([str(self.seq), flags or "-", *(words or [])]) + "\n")
        try:
            frame = self.reader.frame(self.seq, time.monotonic() + timeout)
        except StreamTimeout:
            self._whole = False
            raise
        except StreamError as exc:
            raise StreamError(f"{exc}{self._said()}") from None
        self._whole = True
        return frame

    def _send(self, line: str) -> None:
        assert self.proc.stdin is not None
        try:
            with no_sigpipe():
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
