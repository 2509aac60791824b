"""Who reads the live loop's files on the host (inspector.remote.live): one awk started with the
loop where the host has an awk, one grep a frame where it has none. Against the real sshd: the
host itself (dash, mawk) and roots holding busybox's tools under busybox sh, dash and bash, one
of them without awk."""
from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from ssh_fixtures import chroot_sshd, host_sshd  # noqa: F401  (fixtures)
from sshd import Chroot, SshServer

from conftest import require_root
from inspector.remote.frames import Frame, StreamTimeout
from inspector.remote.live import BASE, LiveStream
from inspector.remote.ssh import Target

# a command line of several words, one with a space in it: its NULs must arrive
ARGV = [sys.executable, "-c", "import time; time.sleep(600)", "two words", "--last"]


def _stream(server: SshServer) -> LiveStream:
    return LiveStream(Target(server.destination, tuple(server.options())))


def _descendants(pid: int) -> set[int]:
    out, todo = set(), [pid]
    while todo:
        try:
            text = Path(f"/proc/{(p := todo.pop())}/task/{p}/children").read_text()
        except OSError:
            continue
        children = {int(c) for c in text.split()}
        out |= children
        todo += children
    return out


def _names(pids: set[int]) -> dict[int, str]:
    out = {}
    for pid in pids:
        try:
            out[pid] = Path(f"/proc/{pid}/comm").read_text().strip()
        except OSError:
            pass
    return out


@pytest.fixture(scope="module")
def no_awk_sshd():
    """A busybox root under dash without awk: the loop reads with one grep a frame."""
    require_root()
    chroot = Chroot.make("dash")
    (chroot.path / "bin" / "awk").unlink()
    server = SshServer.start(force=f"exec /usr/sbin/chroot {chroot.path} /bin/sh -s")
    yield server
    server.stop()
    chroot.remove()


def test_the_hosts_awk_reads_every_frame_and_no_grep_runs_for_a_plain_one(host_sshd):  # noqa: F811
    before = _descendants(host_sshd.proc.pid)
    stream = _stream(host_sshd)
    try:
        assert stream.has.get("read") == "awk", stream.has
        stream.ask("-", timeout=10)
        loop = _descendants(host_sshd.proc.pid) - before
        awks = {pid for pid, name in _names(loop).items() if "awk" in name}
        assert len(awks) == 1, _names(loop)
        for _ in range(20):
            frame = stream.ask("-", timeout=10)
            assert "proc/1/stat" in frame.files and "proc/vmstat" in frame.files
            # the same processes serve every frame: none is started for one
            assert _descendants(host_sshd.proc.pid) - before == loop, _names(
                _descendants(host_sshd.proc.pid) - before)
    finally:
        stream.close()


def _same_request(streams: list[LiveStream], flags: str, words: list[str]) -> list[Frame]:
    return [s.ask(flags, words, timeout=15) for s in streams]


def test_awk_and_grep_give_the_same_frames(chroot_sshd, no_awk_sshd):  # noqa: F811
    """The same requests answered by busybox's awk (under busybox sh, dash, bash) and by grep:
    the same files, every line behind its path, the command line's NULs and a wait channel
    without its newline kept."""
    sleeper = subprocess.Popen(ARGV)
    streams = [_stream(chroot_sshd), _stream(no_awk_sshd)]
    try:
        assert [s.has.get("read") for s in streams] == ["awk", "grep"]
        me, pid = os.getpid(), sleeper.pid
        words = [f"c{pid}", f"s{pid}", f"w{pid}", f"w{pid}/{pid}", f"s{me}/{me}", f"t{me}",
                 "c1", "sx", "w1/2/3", "c../1"]
        for s in streams:
            s.read_io_of([str(pid), str(me)])
            s.read_io_of(remove=[str(me)])
        for _ in range(3):
            awk, grep = _same_request(streams, "m", words)
            for frame in (awk, grep):
                assert frame.files[f"proc/{pid}/cmdline"] == "\0".join(ARGV).encode() + b"\0"
                assert frame.files[f"proc/{pid}/cmdline"] == Path(
                    f"/proc/{pid}/cmdline").read_bytes()
                assert frame.files[f"proc/{pid}/wchan"] == Path(f"/proc/{pid}/wchan").read_bytes()
                assert frame.files[f"proc/{pid}/task/{pid}/wchan"] == frame.files[
                    f"proc/{pid}/wchan"]
                assert f"proc/{pid}/io" in frame.files and f"proc/{me}/io" not in frame.files
                assert f"proc/{pid}/status" in frame.files
                assert f"proc/{me}/task/{me}/status" in frame.files
                assert f"proc/{me}/task/{me}/stat" in frame.files
                assert all(f"{p[1:]}" in frame.files for p in BASE.split()
                           if os.path.exists(p)), sorted(frame.files)[:20]
            # what neither moves nor depends on the reader
            steady = [k for k in grep.files if k.startswith(("sys/class/net/", f"proc/{pid}/"))
                      and not k.endswith(("/stat", "/io", "/status"))]
            assert steady and {k: awk.files.get(k) for k in steady} == {
                k: grep.files[k] for k in steady}
            # every process's stat from both (but those that started or ended in between)
            alive = [{k for k in f.files if k.count("/") == 2 and k.endswith("/stat")}
                     for f in (awk, grep)]
            assert len(alive[0] ^ alive[1]) <= len(alive[1]) // 10, alive[0] ^ alive[1]
            # flag a: every process's io beside its stat
            for frame in _same_request(streams, "a", []):
                procs = [k.split("/") for k in frame.files if k.count("/") == 2]
                stats = {p[1] for p in procs if p[1].isdigit() and p[2] == "stat"}
                ios = {p[1] for p in procs if p[1].isdigit() and p[2] == "io"}
                assert ios <= stats and len(stats - ios) <= 3, stats - ios
        assert [s.reader.garbage for s in streams] == [0, 0]
    finally:
        for s in streams:
            s.close()
        sleeper.kill()
        sleeper.wait()


def test_after_a_frame_given_up_on_grep_waits_for_a_whole_one(host_sshd):  # noqa: F811
    """grep (command lines, wait channels, df, the kernel log) writes on the loop's stdout
    before awk's part of a frame: after a frame the client gave up on, awk may still be writing
    it, so the next request leaves them out and a later one, after a whole frame, has them.
    Nothing interleaves: every frame after comes whole, no line is garbage."""
    sleeper = subprocess.Popen(ARGV)
    stream = _stream(host_sshd)
    words = [f"c{sleeper.pid}", f"w{sleeper.pid}"]
    try:
        stream.ask("-", timeout=10)
        for _ in range(5):
            with pytest.raises(StreamTimeout):
                stream.ask("a", words, timeout=0.0)    # every process's io: awk busy a while
            assert not stream.direct_ok
            left_out = stream.ask("fk", words, timeout=10)
            assert f"proc/{sleeper.pid}/stat" in left_out.files
            grep_read = {"proc/self/mountinfo", "proc/self/fd/5"} | (
                {f"proc/{sleeper.pid}/cmdline", f"proc/{sleeper.pid}/wchan"}
                if stream.by_grep else set())
            assert not grep_read & set(left_out.files)
            assert stream.direct_ok
            whole = stream.ask("f", words, timeout=10)
            assert whole.files[f"proc/{sleeper.pid}/cmdline"] == "\0".join(ARGV).encode() + b"\0"
            assert f"proc/{sleeper.pid}/wchan" in whole.files
            assert "proc/self/mountinfo" in whole.files and "proc/self/fd/6" in whole.files
        assert stream.reader.garbage == 0
    finally:
        stream.close()
        sleeper.kill()
        sleeper.wait()


def test_the_loop_ends_with_the_client(host_sshd):  # noqa: F811
    """Its stdin closed, the shell, its subshell and awk are gone: nothing keeps running."""
    before = _descendants(host_sshd.proc.pid)
    stream = _stream(host_sshd)
    stream.ask("-", timeout=10)
    loop = _descendants(host_sshd.proc.pid) - before
    assert any("awk" in n for n in _names(loop).values()), _names(loop)
    assert stream.proc.stdin is not None
    stream.proc.stdin.close()
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and any(os.path.exists(f"/proc/{p}") for p in loop):
        time.sleep(0.1)
    assert not [p for p in loop if os.path.exists(f"/proc/{p}")], _names(loop)
    stream.close()


def test_a_process_name_cannot_forge_awks_frames(host_sshd):  # noqa: F811
    """A process named 'a NEWLINE @@end 3 NEWLINE b' (the kernel keeps 15 bytes): awk prints
    each part of its stat behind the path, as grep does, so frame 3 ends where the loop ends it
    and the stat reads back whole."""
    name = b"a\n@@end 3\nb"
    code = (f"import ctypes, time; ctypes.CDLL(None).prctl(15, ctypes.c_char_p({name!r}), 0, "
            "0, 0); time.sleep(600)")
    named = subprocess.Popen([sys.executable, "-c", code])
    stream = _stream(host_sshd)
    try:
        deadline = time.monotonic() + 20
        while Path(f"/proc/{named.pid}/comm").read_bytes() != name + b"\n":
            assert time.monotonic() < deadline
            time.sleep(0.05)
        assert stream.has.get("read") == "awk"
        for _ in range(5):
            frame = stream.ask("-", [f"s{named.pid}"], timeout=10)
            stat = frame.files[f"proc/{named.pid}/stat"]
            assert stat.startswith(b"%d (a\n@@end 3\nb) S " % named.pid), stat
            assert stat == Path(f"/proc/{named.pid}/stat").read_bytes()
            assert "proc/vmstat" in frame.files and f"proc/{named.pid}/status" in frame.files
        assert stream.reader.garbage == 0
    finally:
        stream.close()
        named.kill()
        named.wait()
