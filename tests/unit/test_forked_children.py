"""A bounded reader's forked child never collects the parent's garbage: an object that owns a
descriptor (here a file in a reference cycle, waiting for the collector) would close its
number in the child, where that number was closed on start and may have been reused for what
the child opened since (a capture's extraction failed with EBADF in full runs). And the child
of a closed worker is reaped as it exits, not at the next fork."""
from __future__ import annotations

import gc
import os
import warnings

from inspector.roots.bounded import run_forked


class _Cycle:
    pass


def test_the_parents_garbage_is_not_collected_in_the_child(tmp_path):
    data = tmp_path / "data"
    data.write_bytes(b"x")
    gc.disable()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ResourceWarning)
            garbage = _Cycle()
            garbage.me = garbage                        # type: ignore[attr-defined]
            garbage.file = open(data, "rb")             # type: ignore[attr-defined]  # noqa: SIM115
            number = garbage.file.fileno()              # type: ignore[attr-defined]
            del garbage

            def child() -> bytes:
                # open until the garbage's old number is ours again (closed at the child's start)
                opened = []
                while (fd := os.open(data, os.O_RDONLY)) != number:
                    opened.append(fd)
                    assert len(opened) < 4096, "the number never came back"
                gc.collect()                            # the parent's cycle must not close it
                return os.read(fd, 1)

            assert run_forked(child, 30) == b"x"
    finally:
        gc.enable()
        gc.collect()


def test_a_closed_workers_child_is_reaped_without_another_fork():
    """The child exits once it reads the closed socket, after close() returned; it was left a
    zombie until the next fork (a TUI that opened a capture showed a <defunct> child until
    quit). Now reaped as it exits."""
    import time

    from inspector.roots.bounded import Worker
    from slowness import slack
    worker = Worker(lambda request: request)
    assert worker.call(7, 30) == 7
    pid = worker.pid
    worker.close()

    def gone_or_zombie() -> str:
        try:
            with open(f"/proc/{pid}/stat") as stat:
                return stat.read().rsplit(")", 1)[1].split()[0]
        except FileNotFoundError:
            return "gone"
    deadline = time.monotonic() + slack(3.0)
    while gone_or_zombie() != "gone" and time.monotonic() < deadline:
        time.sleep(0.02)
    assert gone_or_zombie() == "gone"
