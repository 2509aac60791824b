"""A probe's load ends with the command that started it, whatever ends the command: SIGTERM,
SIGHUP, SIGQUIT, SIGINT (the run is stopped, waited for, then the command exits 128 + N) or
SIGKILL of the command (its run gets a parent-death signal). Before, `snapshot --probe ...
--probe-seconds 30s` killed with TERM or HUP exited at once and its two probe processes went on
loading the target for the rest of the 30 s; so did export's.

Each test runs the real binary against a real target (a directory for the IO probe, memcached
on loopback, a DNS responder that resolv.conf points at in a mount namespace of the command's
own), waits until the target sees load, records the command's descendants, sends the signal,
and then asserts that every probe process is gone (those recorded, and any process whose
command line names this test's directory) and that the target sees nothing more."""
from __future__ import annotations

import ctypes
import os
import random
import select
import signal
import sqlite3
import struct
import subprocess
import sys
import textwrap
import time
from collections.abc import Sequence
from pathlib import Path

import psutil
import pytest

from conftest import inspector_bin, require_root
from dns_responders import Responder
from slowness import slack

PROBE_SECONDS = "60s"       # far longer than any test: what ends the load is the signal
LOAD_TIMEOUT_S = 20.0       # start-up, the report's collection and the probe's set-up
EXIT_TIMEOUT_S = 8.0        # a stopped run: its SIGKILL comes 2 s after the stop at worst
GONE_TIMEOUT_S = 3.0        # from the command's end to its last probe process's end (quiet)
# the target must see nothing for this long: a snapshot's DNS probe asks a round a second;
# the IO and memcached probes load without a pause (thousands of requests a second), and
# `probe dns --interval 0.1s` asks ten rounds a second, so half a second of nothing is as
# plain a silence as 1.5 s
DNS_QUIET_S = 1.5
BUSY_QUIET_S = 0.5
LOAD_POLL_S = 0.05          # a poll is a read of inotify's queue or of memcached's counters


# ---------------------------------------------------------------------- what the target sees
class IoActivity:
    """Reads and writes of the files in a directory, as inotify counts them (the IO probe
    works on a temporary file there). Identical events in a row are merged: a count that
    moves is IO happening, not how much."""

    IN_ACCESS, IN_MODIFY, IN_NONBLOCK = 0x1, 0x2, 0o4000
    quiet_s = BUSY_QUIET_S
    # the engine reads without a pause; the set-up child's O_DIRECT check is one read, before
    # the engine forks: reads seen by one poll alone were taken for the load, and a stop then
    # found no child to watch, or a run with no request measured
    polls_of_load = 2
    EVENT = struct.Struct("iIII")

    def __init__(self, directory: Path):
        libc = ctypes.CDLL(None, use_errno=True)
        self.fd = libc.inotify_init1(self.IN_NONBLOCK)
        assert self.fd >= 0, os.strerror(ctypes.get_errno())
        assert libc.inotify_add_watch(self.fd, str(directory).encode(),
                                      self.IN_ACCESS | self.IN_MODIFY) >= 0
        self.events = self.reads = 0

    def count(self) -> int:
        """Reads and writes so far."""
        while select.select([self.fd], [], [], 0)[0]:
            data = os.read(self.fd, 1 << 16)
            at = 0
            while at < len(data):
                _, mask, _, size = self.EVENT.unpack_from(data, at)
                at += self.EVENT.size + size
                self.events += 1
                self.reads += bool(mask & self.IN_ACCESS)
        return self.events

    def measuring(self) -> int:
        """Reads so far: the probe measuring, past the set-up that writes its file."""
        self.count()
        return self.reads

    def close(self) -> None:
        os.close(self.fd)


class McActivity:
    """Requests memcached has served, from its own counters."""

    quiet_s = BUSY_QUIET_S
    polls_of_load = 1

    def __init__(self, server):
        self.server = server

    def count(self) -> int:
        stats = self.server.stats()
        return stats["cmd_get"] + stats["cmd_set"]

    def close(self) -> None:
        pass


class DnsActivity:
    """Queries a responder has received; `quiet_s` as long as a round and a half."""

    def __init__(self, responder: Responder, quiet_s: float = DNS_QUIET_S):
        self.responder = responder
        self.quiet_s = quiet_s
        self.polls_of_load = 1          # a round's queries come together, a second apart

    def count(self) -> int:
        return len(self.responder.queries) + len(self.responder.tcp_queries)

    def close(self) -> None:
        self.responder.close()


# ---------------------------------------------------------------------- targets
def io_target(tmp_path: Path) -> tuple[str, IoActivity, list[str]]:
    target = tmp_path / "target"
    target.mkdir()
    return f"io:{target}", IoActivity(target), []


def mc_target(memcached) -> tuple[str, McActivity, list[str]]:
    server = memcached()
    return f"memcached:{server.address}", McActivity(server), []


def dns_target(tmp_path: Path) -> tuple[str, DnsActivity, list[str]]:
    """A responder on port 53 of a loopback address of its own (glibc's resolv.conf has no
    port), and the command started in a mount namespace where /etc/resolv.conf names it."""
    require_root()
    for _ in range(20):
        address = f"127.{random.randint(1, 254)}.{random.randint(1, 254)}.{random.randint(2, 254)}"
        try:
            responder = Responder(address=address, port=53, mode="ok")
            break
        except OSError:
            continue
    else:
        pytest.fail("no free loopback address for a DNS responder on port 53")
    conf = tmp_path / "resolv.conf"
    conf.write_text(f"nameserver {address}\noptions timeout:1 attempts:1\n")
    wrapper = ["unshare", "--mount", "sh", "-c",
               'mount --bind "$0" /etc/resolv.conf && exec "$@"', str(conf)]
    return "dns:www.probe.test", DnsActivity(responder), wrapper


# ---------------------------------------------------------------------- the command
def still_running(procs: list[psutil.Process]) -> list[psutil.Process]:
    """Those with a thread alive. A killed process's leader thread can be a zombie while
    another thread finishes the O_DIRECT read it was in (the IO engine's workers are threads):
    that read's event came after the process looked gone."""
    alive = []
    for p in procs:
        try:
            if p.status() != psutil.STATUS_ZOMBIE or len(os.listdir(f"/proc/{p.pid}/task")) > 1:
                alive.append(p)
        except (psutil.NoSuchProcess, FileNotFoundError):
            pass
    return alive


def naming(marker: str, but: int) -> list[psutil.Process]:
    """Live processes whose command line names `marker` (a forked probe process has its
    command's command line), other than `but` (this test)."""
    found = []
    for p in psutil.process_iter(["cmdline", "status"]):
        if p.pid != but and p.info["status"] != psutil.STATUS_ZOMBIE and any(
                marker in arg for arg in p.info["cmdline"] or []):
            found.append(p)
    return found


def wait_for_load(proc: subprocess.Popen, activity, err: Path, set_up: bool = False,
                  children: bool = False) -> None:
    """Until the probe measures (`activity.polls_of_load` polls in a row see load), or
    (`set_up`) until the target sees its first IO; with `children`, measures while the
    command has a child to watch."""
    given = slack(LOAD_TIMEOUT_S)   # the report's collection comes first: slow when loaded
    deadline = time.monotonic() + given
    measuring = activity.count if set_up else getattr(activity, "measuring", activity.count)
    polls_of_load = 1 if set_up else activity.polls_of_load
    before, streak = measuring(), 0
    while time.monotonic() < deadline:
        assert proc.poll() is None, f"the command ended first: {err.read_text()}"
        time.sleep(0.001 if set_up else LOAD_POLL_S)
        now = measuring()
        streak, before = (streak + 1 if now > before else 0), now
        if streak >= polls_of_load and (not children or psutil.Process(proc.pid).children()):
            return
    pytest.fail(f"no load on the target after {given:.0f} s: {err.read_text()}")


def as_from_a_terminal() -> None:
    """The stop signals at their default, as a shell in a terminal leaves them (a test
    runner's worker may ignore SIGINT)."""
    for signum in (signal.SIGINT, signal.SIGQUIT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, signal.SIG_DFL)


def stop_and_check(argv: list[str], activity, signum: int, tmp_path: Path,
                   wrapper: Sequence[str] = (), children: bool = True,
                   set_up: bool = False) -> tuple[int, str]:
    """Start the command, wait for its load, signal it; assert that it ends in time, that no
    probe process outlives it, and that the target then sees nothing. Its status and stderr.
    `children`: the load comes from child processes (not `probe dns`: its own threads);
    `set_up`: the signal comes at the target's first IO (the IO probe writing its file)."""
    err = tmp_path / "stderr"
    with open(err, "w") as err_file:
        proc = subprocess.Popen([*wrapper, inspector_bin(), *argv], stdin=subprocess.DEVNULL,
                                stdout=subprocess.DEVNULL, stderr=err_file,
                                preexec_fn=as_from_a_terminal)
    probes: list[psutil.Process] = []
    try:
        wait_for_load(proc, activity, err, set_up, children and not set_up)
        probes = psutil.Process(proc.pid).children(recursive=True)
        assert probes or not children, "no probe process to watch"
        sent = time.monotonic()
        proc.send_signal(signum)
        status = proc.wait(EXIT_TIMEOUT_S)
        ended = time.monotonic()
        while still_running(probes) and time.monotonic() - ended < slack(GONE_TIMEOUT_S):
            time.sleep(0.02)
        left = still_running(probes) + naming(str(tmp_path), os.getpid())
        print(f"{signal.Signals(signum).name}: the command ended {ended - sent:.2f} s after "
              f"the signal, its {len(probes)} probe processes "
              f"{time.monotonic() - ended:.2f} s after it")
        assert not left, f"probe processes outlived the command: {left}"
        before = activity.count()
        time.sleep(activity.quiet_s)
        assert activity.count() == before, "the target still sees load"
        return status, err.read_text()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(5)
        for p in still_running(probes):
            p.kill()
        activity.close()


def exit_status(signum: int) -> int:
    """What Popen reports: 128 + N for a signal the command handles, -9 for SIGKILL."""
    return -signal.SIGKILL if signum == signal.SIGKILL else 128 + signum


STOPPED: dict[int, str] = {signal.SIGINT: "interrupted", signal.SIGTERM: "stopped by SIGTERM",
           signal.SIGHUP: "stopped by SIGHUP", signal.SIGQUIT: "stopped by SIGQUIT"}


def check_status(status: int, err: str, signum: int) -> None:
    assert status == exit_status(signum), err
    if signum in STOPPED:
        assert STOPPED[signum] in err, err


# ---------------------------------------------------------------------- snapshot, export
CASES = [("io", signal.SIGTERM), ("io", signal.SIGHUP), ("io", signal.SIGKILL),
         ("io", signal.SIGQUIT), ("io", signal.SIGINT),
         ("memcached", signal.SIGTERM), ("memcached", signal.SIGHUP),
         ("memcached", signal.SIGKILL),
         ("dns", signal.SIGTERM), ("dns", signal.SIGHUP), ("dns", signal.SIGKILL)]


def target_for(kind: str, tmp_path: Path, memcached):
    if kind == "io":
        return io_target(tmp_path)
    if kind == "memcached":
        return mc_target(memcached)
    return dns_target(tmp_path)


@pytest.mark.parametrize("kind,signum", CASES, ids=[f"{k}-{signal.Signals(s).name}"
                                                    for k, s in CASES])
def test_snapshot_probe_ends_with_the_command(tmp_path, memcached, kind, signum):
    spec, activity, wrapper = target_for(kind, tmp_path, memcached)
    out = tmp_path / "s.json"
    status, err = stop_and_check(["snapshot", "-o", str(out), "--probe", spec,
                                  "--probe-seconds", PROBE_SECONDS], activity, signum,
                                 tmp_path, wrapper)
    check_status(status, err, signum)
    assert not out.exists()         # stopped: no snapshot, as with Ctrl-C


EXPORT_CASES = [("io", signal.SIGTERM), ("io", signal.SIGKILL), ("memcached", signal.SIGHUP),
                ("memcached", signal.SIGKILL), ("dns", signal.SIGTERM), ("dns", signal.SIGQUIT)]


@pytest.mark.parametrize("kind,signum", EXPORT_CASES,
                         ids=[f"{k}-{signal.Signals(s).name}" for k, s in EXPORT_CASES])
def test_export_probe_ends_with_the_command(tmp_path, memcached, kind, signum):
    spec, activity, wrapper = target_for(kind, tmp_path, memcached)
    out = tmp_path / "m.prom"
    status, err = stop_and_check(["export", "--prometheus", "-o", str(out), "--probe", spec,
                                  "--probe-seconds", PROBE_SECONDS], activity, signum,
                                 tmp_path, wrapper)
    check_status(status, err, signum)
    assert not out.exists()


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGKILL],
                         ids=lambda s: signal.Signals(s).name)
def test_a_signal_during_the_io_set_up_leaves_no_writer(tmp_path, signum):
    """The IO probe first writes its 64 MiB test file, in a child of the run's process: the
    signal at its first write must end that child too."""
    spec, activity, _ = io_target(tmp_path)
    status, err = stop_and_check(["snapshot", "-o", str(tmp_path / "s.json"), "--probe", spec,
                                  "--probe-seconds", PROBE_SECONDS], activity, signum,
                                 tmp_path, set_up=True)
    check_status(status, err, signum)


# ---------------------------------------------------------------------- record
def test_record_keeps_the_stopped_run_and_starts_no_other(tmp_path, memcached):
    """record finishes its sample on a signal: the run cut short is kept with its partial
    figures, the next probe of the sample is not started."""
    spec, activity, _ = io_target(tmp_path)
    server = memcached()
    db = tmp_path / "history.db"
    status, err = stop_and_check(["record", "--once", "--db", str(db), "--probe", spec,
                                  "--probe", f"memcached:{server.address}",
                                  "--probe-seconds", PROBE_SECONDS], activity, signal.SIGTERM,
                                 tmp_path)
    assert status in (0, 128 + signal.SIGTERM), err
    assert McActivity(server).count() == 0          # the second probe never ran
    with sqlite3.connect(db) as conn:
        runs = dict((probe, (requests, error)) for probe, requests, error in conn.execute(
            "SELECT probe, requests, error FROM probe_runs"))
    assert runs["io"][0] > 0 and "stopped by SIGTERM" in runs["io"][1], runs
    assert runs["memcached"] == (None, "not run: the command was stopped by SIGTERM"), runs


def test_record_killed_leaves_no_probe(tmp_path):
    spec, activity, _ = io_target(tmp_path)
    status, err = stop_and_check(["record", "--once", "--db", str(tmp_path / "history.db"),
                                  "--probe", spec, "--probe-seconds", PROBE_SECONDS],
                                 activity, signal.SIGKILL, tmp_path)
    assert status == -signal.SIGKILL, err


# ---------------------------------------------------------------------- probe
@pytest.mark.parametrize("signum", [signal.SIGQUIT, signal.SIGKILL],
                         ids=lambda s: signal.Signals(s).name)
def test_probe_io_ends_with_the_command(tmp_path, signum):
    spec, activity, _ = io_target(tmp_path)
    status, err = stop_and_check(["probe", "io", spec[3:], "-w", PROBE_SECONDS], activity,
                                 signum, tmp_path)
    assert status == exit_status(signum), err


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP],
                         ids=lambda s: signal.Signals(s).name)
def test_a_signal_during_probe_ios_set_up_ends_it_and_its_writer(tmp_path, signum):
    """`probe io` writes its test file in a child before the driver takes over: a stop signal
    at its first write ends the command at once (128 + N) and the writer with it."""
    spec, activity, _ = io_target(tmp_path)
    status, err = stop_and_check(["probe", "io", spec[3:], "-w", PROBE_SECONDS], activity,
                                 signum, tmp_path, set_up=True)
    check_status(status, err, signum)


def the_engine(proc: subprocess.Popen, activity: IoActivity, err: Path) -> list[psutil.Process]:
    """The IO engine, the command's one child while the target sees reads. The set-up child
    reads once too (its O_DIRECT check) and exits before the engine forks: a first read can be
    its own, with no child alive yet on a loaded machine (CI). The one child alive through two
    spells of new reads is the engine (the set-up child reads once)."""
    deadline = time.monotonic() + slack(LOAD_TIMEOUT_S)
    spells: list[int] = []          # the lone child's pid, per spell that saw new reads
    while time.monotonic() < deadline:
        assert proc.poll() is None, f"the command ended first: {err.read_text()}"
        before, reads = still_running(psutil.Process(proc.pid).children()), activity.measuring()
        time.sleep(0.1)
        after = still_running(psutil.Process(proc.pid).children())
        alone = len(before) == 1 and [p.pid for p in after] == [before[0].pid]
        spells = spells + [after[0].pid] if alone and activity.measuring() > reads else []
        if len(spells) >= 2 and spells[-1] == spells[-2]:
            return after
    pytest.fail(f"no engine child measuring after {slack(LOAD_TIMEOUT_S):.0f} s: {err.read_text()}")


def test_the_io_engine_ends_with_a_killed_command_even_when_it_cannot_run(tmp_path):
    """The IO probe's engine runs in a child of the command; killed, the command's socket
    closes, which a running engine notices. One that cannot run (stopped here, as a child
    busy in the kernel cannot act) must still go: the kernel's parent-death signal."""
    spec, activity, _ = io_target(tmp_path)
    err = tmp_path / "stderr"
    with open(err, "w") as err_file:
        proc = subprocess.Popen([inspector_bin(), "probe", "io", spec[3:], "-w", PROBE_SECONDS],
                                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=err_file, preexec_fn=as_from_a_terminal)
    engines: list[psutil.Process] = []
    try:
        wait_for_load(proc, activity, err)
        engines = the_engine(proc, activity, err)
        engines[0].send_signal(signal.SIGSTOP)
        proc.kill()
        proc.wait(EXIT_TIMEOUT_S)
        ended = time.monotonic()
        while still_running(engines) and time.monotonic() - ended < slack(GONE_TIMEOUT_S):
            time.sleep(0.02)
        assert not still_running(engines), "the stopped engine outlived its command"
        print(f"the engine was gone {time.monotonic() - ended:.2f} s after its command")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(5)
        for p in still_running(engines):
            p.kill()
        activity.close()


@pytest.mark.parametrize("signum", [signal.SIGHUP, signal.SIGKILL],
                         ids=lambda s: signal.Signals(s).name)
def test_probe_memcached_workers_end_with_the_command(tmp_path, memcached, signum):
    server = memcached()
    status, err = stop_and_check(["probe", "memcached", server.address, "--workers", "2",
                                  "-c", "4", "--duration", "60"], McActivity(server),
                                 signum, tmp_path)
    assert status == exit_status(signum), err


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGKILL],
                         ids=lambda s: signal.Signals(s).name)
def test_probe_dns_ends_with_the_command(tmp_path, signum):
    responder = Responder(mode="ok")
    status, err = stop_and_check(["probe", "dns", "www.probe.test", "--server",
                                  responder.server, "--count", "600", "--interval", "0.1s"],
                                 DnsActivity(responder, BUSY_QUIET_S), signum, tmp_path,
                                 children=False)
    assert status == exit_status(signum), err


# ---------------------------------------------------------------------- a run that will not stop
# A forked run whose process ignores the stop (SIGTERM): the command kills it STOP_WAIT_S (2 s)
# after the signal, or at once on a second signal, and then stops as for Ctrl-C.
STUBBORN = textwrap.dedent("""
    import signal, time
    from inspector.probes import forked_runs
    from inspector.probes.request import ProbeRequest

    def stubborn(request, signals=()):
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        time.sleep(60)

    forked_runs.run_probe = stubborn
    try:
        forked_runs.run_probe_forked(ProbeRequest("io", "/nonexistent", 60), 60)
    except KeyboardInterrupt as exc:
        print("stopped by", getattr(exc, "signum", None), flush=True)
""")


@pytest.mark.parametrize("second", [None, signal.SIGINT], ids=["one-signal", "two-signals"])
def test_a_run_that_ignores_the_stop_is_killed(second):
    proc = subprocess.Popen([sys.executable, "-c", STUBBORN], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, preexec_fn=as_from_a_terminal)
    assert proc.stderr is not None
    try:
        deadline = time.monotonic() + 10
        while not (runs := psutil.Process(proc.pid).children()):
            assert time.monotonic() < deadline and proc.poll() is None, proc.stderr.read()
            time.sleep(0.05)
        give_up = time.monotonic() + 30      # until it ignores SIGTERM, however slow its start
        while not _ignores_sigterm(runs[0].pid):
            assert time.monotonic() < give_up, "the run never set SIGTERM aside"
            time.sleep(0.02)
        sent = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        if second is not None:
            time.sleep(0.3)
            sent = time.monotonic()
            proc.send_signal(second)
        out, err = proc.communicate(timeout=30)
        took = time.monotonic() - sent
        print("ended", took, "s after the last signal")
        assert out.strip() == f"stopped by {signal.SIGTERM:d}", err
        assert not still_running(runs)
        if second is None:
            assert 1.8 <= took <= 2 + slack(3.0)    # the stop's grace (2 s), then SIGKILL
        else:
            assert took <= slack(1.5)               # no more waiting
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(5)


def _ignores_sigterm(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/status") as f:
            ignored = next(int(line.split()[1], 16) for line in f if line.startswith("SigIgn:"))
    except (OSError, StopIteration):
        return False
    return bool(ignored & 1 << (signal.SIGTERM - 1))
