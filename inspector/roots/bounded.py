"""Bounded work: every read of the host ends by a deadline, even when the kernel never answers.

A read from a FUSE filesystem whose server took the request and never replies (a hung lxcfs
serving /proc/diskstats in a container), from a hard NFS mount or from a dying disk cannot be
cancelled: the thread doing it sleeps in the kernel until the answer comes. Two layers:

- Threads (`run_bounded`, `Reads`): the read runs in a daemon thread and the caller moves on
  at its deadline with "timed out after N s". The rest of the result is kept.
- A forked child process (`Worker`, `run_forked`): the same work, done by a child whose
  stdin, stdout and stderr are /dev/null. A process cannot finish exiting while one of its
  threads waits on a FUSE request the server has read (that wait ignores even SIGKILL), so
  its parent never gets the exit status and a pipe on its stdout never reaches EOF: a command
  that did its host reads in its own threads would print on time and still hang its caller
  (check_nrpe, a shell pipeline, a systemd unit). Commands therefore read the host in a child
  and exit on time; a stuck child stays behind until the filesystem answers, holding nothing
  of the caller's.

multiprocessing is not used for the child: its exit handler joins every child process, which
is the very wait this module exists to avoid.
"""
from __future__ import annotations

import gc
import os
import pickle
import select
import signal
import socket
import struct
import threading
import time
import traceback
from collections.abc import Callable
from typing import Any

from inspector.model import Unknown
from inspector.roots.fork_locks import lock_renewed_at_fork

_HEADER = struct.Struct("<Q")
# children given up on or not yet reaped: waited for without blocking now and then, so a
# long `record` does not collect zombies (one stuck in the kernel stays until it can exit)
_unreaped: set[int] = set()
_unreaped_lock = lock_renewed_at_fork()


class WithFds:
    """A child's result with open file descriptors, which travel beside the pickle (SCM_RIGHTS):
    a file opened in the child, where the open could hang, is usable here."""

    def __init__(self, value: Any, fds: list[int]):
        self.value, self.fds = value, fds


class TimedOut(Exception):
    """The work did not finish in time; str() is "timed out after N s"."""


class WorkerFailed(Exception):
    """The child raised (the message names the exception) or died before answering."""

    def __init__(self, message: str, trace: str = ""):
        super().__init__(message)
        self.trace = trace


def timed_out(seconds: float) -> str:
    return f"timed out after {seconds:g} s"


# ---------------------------------------------------------------------------- threads
def run_bounded(func: Callable[[], Any], timeout: float, name: str = "bounded") -> Any:
    """`func()` in a daemon thread; TimedOut when it has not returned after `timeout` s.
    Its exception, if it raised, is raised here (with the thread's traceback attached as
    `__inspector_trace__`)."""
    call = _Call(func, name)
    call.in_thread()
    if not call.done.wait(max(0.0, timeout)):
        raise TimedOut(timed_out(timeout))
    return call.outcome()


class _Call:
    """One function call, run once by whichever thread claims it first."""

    _claims = lock_renewed_at_fork()

    def __init__(self, func: Callable[[], Any], name: str):
        self.name = name
        self.started: float | None = None
        self.done = threading.Event()
        self.delivered = False          # a Read handed its result to a caller
        self._value: Any = None
        self._error: BaseException | None = None
        self._trace = ""
        self._func: Callable[[], Any] | None = func

    def claim(self) -> bool:
        with self._claims:
            if self.started is not None:
                return False
            self.started = time.monotonic()
            return True

    def in_thread(self) -> None:
        """Run in a daemon thread of its own, unless a thread has claimed it already."""
        if self.claim():
            threading.Thread(target=self.run, daemon=True, name=self.name).start()

    def run(self) -> None:
        func = self._func
        assert func is not None      # run once: claim() lets one thread in
        try:
            self._value = func()
        except BaseException as exc:     # handed to the caller, never lost
            self._error = exc
            self._trace = traceback.format_exc()
        finally:
            self._func = None
            self.done.set()

    def outcome(self) -> Any:
        if self._error is not None:
            self._error.__inspector_trace__ = self._trace  # type: ignore[attr-defined]
            raise self._error
        return self._value


def _in_turn(calls: list[_Call]) -> None:
    for call in calls:
        if call.claim():
            call.run()


class Reads:
    """Named reads of the host under a deadline, for a sampler; results never raise.

    `start_all` runs a sample's reads one after the other in one daemon thread (a sample is a
    few milliseconds of small reads: one thread each would cost half as much CPU again in
    thread starts and GIL hand-offs); if they are not all done after `patience` seconds, each
    read not begun yet gets a thread of its own, so one that hangs costs the others nothing.
    A read that did not come back is not started again while it hangs (hundreds of threads
    stuck on one file help nobody): its result is Unknown("timed out: no answer for N s")
    until it returns. Keep one `Reads` per sampler."""

    def __init__(self, patience: float = 0.1) -> None:
        self.patience = patience
        self._pending: dict[str, _Call] = {}

    def start(self, name: str, func: Callable[[], Any], reuse_late: bool = False) -> Read:
        """One read in its own thread. `reuse_late`: a read that timed out earlier and has
        since finished gives its result now instead of a new read (for slow walks whose
        result does not age, like sysfs topology on a host with thousands of paths, where a
        fresh walk would time out again)."""
        read = self._read(name, func, reuse_late)
        read.call.in_thread()
        return read

    def start_all(self, funcs: dict[str, Callable[[], Any]]) -> dict[str, Read]:
        """Start the reads in turn in one thread; follow with `settle`."""
        reads = {name: self._read(name, func) for name, func in funcs.items()}
        queued = [r.call for r in reads.values() if r.call.started is None]
        if queued:
            threading.Thread(target=_in_turn, args=(queued,), daemon=True,
                             name="reads in turn").start()
        return reads

    def settle(self, reads: dict[str, Read], deadline: float) -> None:
        """Wait up to `patience` for the reads in turn; then each not begun gets a thread."""
        give_up = min(deadline, time.monotonic() + self.patience)
        calls = [r.call for r in reads.values() if r.fresh]
        for call in calls:
            if not call.done.wait(max(0.0, give_up - time.monotonic())):
                for waiting in calls:
                    waiting.in_thread()          # only those no thread has claimed
                return

    def peek(self, name: str) -> Any:
        """The latest read of `name` if it is done (no waiting), else Unknown: for a read
        that uses another one's result."""
        call = self._pending.get(name)
        return Read(name, call, True).peek() if call is not None else Unknown("not read")

    def _read(self, name: str, func: Callable[[], Any], reuse_late: bool = False) -> Read:
        call = self._pending.get(name)
        if call is not None and call.done.is_set() and (call.delivered or not reuse_late):
            call = None
        if call is None:
            call = self._pending[name] = _Call(func, f"read {name}")
            return Read(name, call, True)
        return Read(name, call, call.done.is_set())


class Read:
    """A read of one source; `result(deadline)` is its value, or Unknown why not (never
    raises). After it, `timed_out` holds the reason when the read did not answer in time."""

    def __init__(self, name: str, call: _Call, fresh: bool):
        self.name, self.call, self.fresh = name, call, fresh
        self.timed_out: str | None = None

    def result(self, deadline: float) -> Any:
        call = self.call
        self.timed_out = None
        if not self.fresh:        # still hung from an earlier sample: do not wait for it again
            waited = time.monotonic() - (call.started or time.monotonic())
            self.timed_out = f"timed out: no answer for {waited:.0f} s"
            return Unknown(self.timed_out)
        if not call.done.wait(max(0.0, deadline - time.monotonic())):
            if call.started is None:
                self.timed_out = "timed out before it could start"
            else:
                self.timed_out = timed_out(round(max(0.0, deadline - call.started), 1))
            return Unknown(self.timed_out)
        call.delivered = True
        return self.peek()

    def peek(self) -> Any:
        """The value if the read is done (no waiting, no side effect), else Unknown."""
        if not self.call.done.is_set():
            return Unknown("not read yet")
        try:
            return self.call.outcome()
        except Exception as exc:   # a reader bug: unknown for this source, the rest stands
            return Unknown(f"read failed: {type(exc).__name__}: {exc}")


# ---------------------------------------------------------------------------- a child process
class Worker:
    """A forked child that answers `call(request, timeout)` with `serve(request)`.

    The child's stdin, stdout and stderr are /dev/null and it keeps no other descriptor of
    ours, so a child stuck in the kernel holds no pipe of the caller open. A call that times
    out abandons the child (killed, never waited for); `alive` is then False. Fork this before
    starting threads where possible (a lock held by another thread stays held in the child)."""

    def __init__(self, serve: Callable[[Any], Any]):
        pid, [sock] = _fork_serving([serve])
        self._adopt(pid, sock, _Child())

    @classmethod
    def in_one_child(cls, serves: list[Callable[[Any], Any]]) -> list[Worker]:
        """Workers answered by one child, each `serve` on a socket and in a thread of its own:
        one interpreter's memory for several services instead of one each. Abandoning one
        ends the child for all: the others are then not `alive` (their owners fork anew)."""
        pid, socks = _fork_serving(serves)
        child = _Child()
        workers = []
        for sock in socks:
            worker = cls.__new__(cls)
            worker._adopt(pid, sock, child)
            workers.append(worker)
        return workers

    def _adopt(self, pid: int, sock: socket.socket, child: _Child) -> None:
        self.pid, self._sock, self._child = pid, sock, child
        self._open = True

    @property
    def alive(self) -> bool:
        return self._open and not self._child.killed

    def call(self, request: Any, timeout: float) -> Any:
        """The child's answer; TimedOut or WorkerFailed otherwise (the child is then gone)."""
        return self._call(request, timeout, None)

    def call_while_progressing(self, request: Any, stall: float,
                               deadline: float | None = None) -> Any:
        """As call(), for work whose length depends on its input (unpacking an archive): waited
        for as long as the child keeps reading, writing or using CPU, and given up when it has
        done none of those for `stall` seconds (a read the kernel never answers), or at
        `deadline` (time.monotonic()) however it progresses: a command's whole bound."""
        return self._call(request, stall, stall, deadline)

    def _call(self, request: Any, timeout: float, stall: float | None,
              until: float | None = None) -> Any:
        if not self.alive:
            raise WorkerFailed("the worker process is gone")
        try:
            _send(self._sock, ("request", request))   # a tuple: never None, which is EOF
            if stall is not None:
                self._wait_while_progressing(stall, until)
            deadline = time.monotonic() + timeout
            if until is not None:
                deadline = min(deadline, until)
            reply = _receive(self._sock, deadline)
        except TimedOut as exc:
            self.abandon()
            if str(exc) == _PAST_DEADLINE or (until is not None and time.monotonic() >= until):
                raise TimedOut(_PAST_DEADLINE) from None
            raise TimedOut(f"no progress for {stall:g} s" if stall is not None
                           else timed_out(timeout)) from None
        except OSError as exc:                # the child died: the send or receive failed
            self.abandon()
            raise WorkerFailed(f"the worker process is gone ({exc.strerror or exc})") from None
        except BaseException:                 # Ctrl-C while waiting: the child goes too
            self.abandon()
            raise
        if reply is None:
            self.abandon()
            raise WorkerFailed("the worker process ended without answering")
        if reply[0] == "error":
            raise WorkerFailed(reply[1], reply[2])
        if reply[2]:
            return WithFds(reply[1], self._receive_fds(reply[2], deadline))
        return reply[1]

    def _wait_while_progressing(self, stall: float, until: float | None = None) -> None:
        """Until the reply starts to arrive; TimedOut once the child's progress stands still
        for `stall` seconds, or at `until`."""
        poller = select.poll()
        poller.register(self._sock, select.POLLIN)
        seen, still_since = _progress(self.pid), time.monotonic()
        while True:
            wait = PROGRESS_POLL_S if until is None else \
                min(PROGRESS_POLL_S, max(0.0, until - time.monotonic()))
            if poller.poll(wait * 1000):
                return
            if until is not None and time.monotonic() >= until:
                raise TimedOut(_PAST_DEADLINE)
            now = _progress(self.pid)
            if now != seen:
                seen, still_since = now, time.monotonic()
            elif time.monotonic() - still_since >= stall:
                raise TimedOut("no progress")

    def _receive_fds(self, count: int, deadline: float) -> list[int]:
        poller = select.poll()
        poller.register(self._sock, select.POLLIN)
        if not poller.poll(max(0.0, deadline - time.monotonic()) * 1000):
            self.abandon()
            raise TimedOut("timed out while receiving descriptors")
        _, fds, _, _ = socket.recv_fds(self._sock, 1, count)
        return fds

    def abandon(self) -> None:
        """Kill the child and stop talking to it; it is reaped later if it can exit."""
        if self.alive:
            try:
                os.kill(self.pid, signal.SIGKILL)
            except OSError:
                pass
            self._child.killed = True
        self.close()

    def close(self) -> None:
        """End the child: its socket closes, so it exits once its work is done (the work of
        every worker it serves)."""
        if not self._open:
            return
        self._open = False
        self._sock.close()
        with _unreaped_lock:
            _unreaped.add(self.pid)
        reap()
        _reap_soon()

    def __enter__(self) -> Worker:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


PROGRESS_POLL_S = 0.2
_PAST_DEADLINE = "past its deadline"


def _progress(pid: int) -> tuple[str, ...]:
    """What moves while a process works: the bytes it read and wrote (/proc/PID/io rchar and
    wchar, page cache included) and its CPU time. A process waiting on a read the kernel
    never answers moves none of them. () once the process is gone."""
    try:
        with open(f"/proc/{pid}/io", "rb") as f:
            io = [line for line in f.read().split(b"\n") if line[:5] in (b"rchar", b"wchar")]
        with open(f"/proc/{pid}/stat", "rb") as f:
            cpu = f.read().rsplit(b")", 1)[-1].split()[11:13]     # utime stime
    except OSError:
        return ()
    return tuple(x.decode() for x in (*io, *cpu))


def run_forked(func: Callable[[], Any], timeout: float) -> Any:
    """`func()` in a forked child, its result pickled back: TimedOut, WorkerFailed or the
    value. For work that reads the host and must not leave this process unable to exit."""
    with Worker(lambda _request: func()) as worker:
        return worker.call(None, timeout)


def run_forked_while_progressing(func: Callable[[], Any], stall: float, reading: str,
                                 started: Callable[[int | None], None] | None = None,
                                 deadline: float | None = None) -> Any:
    """`func()` in a forked child, waited for while it reads, writes or computes
    (Worker.call_while_progressing): for reading files whose mount may answer a stat and then
    stall every read, which would leave this process asleep in the kernel, deaf to Ctrl-C.
    `deadline` (time.monotonic()) ends the wait however the child progresses. TimedOut says
    what was being read (`reading`); `started` is told the child's pid while it runs, then
    None (never a pid the kernel may since have given to another process)."""
    begun = time.monotonic()
    with Worker(lambda _request: func()) as worker:
        if started is not None:
            started(worker.pid)
        try:
            return worker.call_while_progressing(None, stall, deadline)
        except TimedOut as exc:
            if str(exc) == _PAST_DEADLINE:
                raise TimedOut(f"{reading} not read within the command's time bound "
                               f"({time.monotonic() - begun:.1f} s)") from None
            raise TimedOut(f"no progress reading {reading} for {stall:g} s (a hung filesystem? "
                           "look for processes in D state)") from None
        finally:
            if started is not None:
                started(None)


def reap() -> None:
    """Wait for finished children without blocking; one stuck in the kernel stays listed."""
    with _unreaped_lock:
        for pid in list(_unreaped):
            try:
                done, _ = os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                done = pid
            if done:
                _unreaped.discard(pid)


_reaper: threading.Thread | None = None


def _reap_soon() -> None:
    """Reap the closed children as they exit, in a thread while any is listed: a child
    exits once it has read the closed socket, after close() returned, and would otherwise stay
    a zombie until the next fork (a TUI that opened a capture kept a `<defunct>` until quit)."""
    global _reaper
    with _unreaped_lock:
        if not _unreaped or _reaper is not None:
            return
        _reaper = threading.Thread(target=_reap_while_listed, name="inspector-reaper",
                                   daemon=True)
        _reaper.start()


def _reap_while_listed() -> None:
    global _reaper
    waited = 0.0
    while True:
        reap()
        with _unreaped_lock:
            if not _unreaped:       # under the lock: a close() from now on starts another
                _reaper = None
                return
        # quick for the usual child that exits at once; a child stuck in the kernel is polled
        # once a second for as long as it stays
        step = 0.05 if waited < 2.0 else 1.0
        time.sleep(step)
        waited += step


def _no_reaper_in_child() -> None:
    global _reaper
    _reaper = None
    _unreaped.clear()           # the parent's children, never this process's to wait for


os.register_at_fork(after_in_child=_no_reaper_in_child)


class _Child:
    """What the workers of one child share: whether one of them killed it."""

    def __init__(self) -> None:
        self.killed = False


def _fork_serving(serves: list[Callable[[Any], Any]]) -> tuple[int, list[socket.socket]]:
    """Fork a child answering each of `serves` on its own socket; (pid, our sockets)."""
    reap()
    # socket pairs, not pipes: a send to a child that died must be an error here, not a
    # SIGPIPE (the CLI leaves SIGPIPE at its default so `| head` ends it quietly)
    pairs = [socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM) for _ in serves]
    pid = os.fork()
    if pid == 0:                          # the child: never returns
        for ours, _ in pairs:
            ours.close()
        _child_main(serves, [theirs for _, theirs in pairs])
    for _, theirs in pairs:
        theirs.close()
    return pid, [ours for ours, _ in pairs]


def _child_main(serves: list[Callable[[Any], Any]], socks: list[socket.socket]) -> None:
    """Set the child apart (signals, descriptors), then serve: one service in this thread,
    several each in a thread of its own; the child exits when every socket has closed."""
    status = 0
    try:
        # The parent's objects are never the child's to collect: one that owns a descriptor
        # (a file, a socket, a pipe left for the collector) would close its number, closed
        # below and perhaps reused by then for what the child opened (an extraction got EBADF)
        gc.freeze()
        signal.signal(signal.SIGINT, signal.SIG_IGN)     # Ctrl-C is the parent's to handle
        for signum in (signal.SIGTERM, signal.SIGHUP):   # a command's handlers are not ours
            signal.signal(signum, signal.SIG_DFL)
        try:
            signal.set_wakeup_fd(-1)                     # an event loop's, closed below
        except ValueError:
            pass
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(null, fd)
        low = 3
        for keep in sorted(sock.fileno() for sock in socks):
            os.closerange(low, keep)
            low = keep + 1
        os.closerange(low, os.sysconf("SC_OPEN_MAX"))
        if len(serves) == 1:
            _serve(serves[0], socks[0])
        else:
            threads = [threading.Thread(target=_serve, args=pair, daemon=True,
                                        name="serve") for pair in zip(serves, socks)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
    except BaseException:
        status = 1
    finally:
        os._exit(status)       # never the parent's atexit handlers or buffered output


def _serve(serve: Callable[[Any], Any], sock: socket.socket) -> None:
    """Answer requests on `sock` until it closes."""
    while True:
        try:
            request = _receive(sock, None)
        except (OSError, EOFError, pickle.UnpicklingError):
            break
        if request is None:
            break
        fds: list[int] = []
        try:
            value = serve(request[1])
            if isinstance(value, WithFds):
                value, fds = value.value, value.fds
            reply: tuple[str, Any, int | str] = ("ok", value, len(fds))
        except BaseException as exc:
            reply = ("error", f"{type(exc).__name__}: {exc}", traceback.format_exc())
        try:
            _send(sock, reply)
        except (pickle.PicklingError, TypeError, AttributeError) as exc:
            _send(sock, ("error", f"result not transferable: {exc}", ""))
            fds = []
        if fds:
            socket.send_fds(sock, [b"F"], fds)
            for fd in fds:
                os.close(fd)


def _send(sock: socket.socket, obj: Any) -> None:
    data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    sock.sendall(_HEADER.pack(len(data)) + data, socket.MSG_NOSIGNAL)


def _receive(sock: socket.socket, deadline: float | None) -> Any:
    """One framed message (always a tuple); None at end of file; TimedOut at the deadline."""
    header = _read_exact(sock, _HEADER.size, deadline)
    if header is None:
        return None
    body = _read_exact(sock, _HEADER.unpack(header)[0], deadline)
    if body is None:
        return None
    return pickle.loads(body)


def _read_exact(sock: socket.socket, size: int, deadline: float | None) -> bytes | None:
    chunks, left = [], size
    poller = select.poll()
    poller.register(sock, select.POLLIN)
    while left:
        if deadline is not None:
            wait_ms = (deadline - time.monotonic()) * 1000
            if wait_ms <= 0 or not poller.poll(wait_ms):
                raise TimedOut("deadline")
        chunk = sock.recv(min(left, 1 << 20))
        if not chunk:
            return None
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)
