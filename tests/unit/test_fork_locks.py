"""A lock another thread holds at a fork is free in the child. A snapshot's IO probe child
waited forever in bounded.reap(): the command's reaper thread held the reaper's lock at the
fork (about one run in ten; the probe then "timed out" after its seconds plus grace)."""
from __future__ import annotations

import os
import threading
import time

import pytest

from inspector.discover import drive_state
from inspector.roots import bounded, tempdirs
from inspector.roots.bounded import _Call
from inspector.roots.host import HostRoot

CHILD_WAIT_S = 10.0


def held_by_another_thread(lock):
    """A thread that takes `lock` and keeps it until the returned event is set."""
    taken, release = threading.Event(), threading.Event()

    def hold() -> None:
        with lock:
            taken.set()
            release.wait()
    thread = threading.Thread(target=hold, daemon=True)
    thread.start()
    assert taken.wait(5)
    return thread, release


def child_status(in_child) -> int | None:
    """Fork; the child runs `in_child` and exits 0. Its exit status, or None if it is still
    running after CHILD_WAIT_S (killed then)."""
    pid = os.fork()
    if pid == 0:
        try:
            in_child()
            os._exit(0)
        finally:
            os._exit(1)
    give_up = time.monotonic() + CHILD_WAIT_S
    while time.monotonic() < give_up:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        time.sleep(0.01)
    os.kill(pid, 9)
    os.waitpid(pid, 0)
    return None


LOCKS = {"reaper": lambda: bounded._unreaped_lock, "call claims": lambda: _Call._claims,
         "temporary trees": lambda: tempdirs._lock, "drive trends": lambda: drive_state._lock,
         "a root's facts": lambda: HostRoot("/")._facts_lock}


@pytest.mark.parametrize("name", LOCKS)
def test_a_lock_held_at_the_fork_is_free_in_the_child(name):
    lock = LOCKS[name]()
    thread, release = held_by_another_thread(lock)
    try:
        status = child_status(lambda: os._exit(0 if lock.acquire(timeout=5) else 2))
    finally:
        release.set()
        thread.join(5)
    assert status == 0, f"the {name} lock stayed held in the child (status {status})"


def test_a_child_forked_while_the_reaper_reaps_can_fork_in_turn():
    """The case seen: the reaper thread inside reap() at the fork; the child's own fork (the
    IO probe's set-up child) calls reap() first."""
    thread, release = held_by_another_thread(bounded._unreaped_lock)
    try:
        status = child_status(lambda: os._exit(bounded.run_forked(lambda: 7, 5) - 7))
    finally:
        release.set()
        thread.join(5)
    assert status == 0, f"the child's fork did not come back (status {status})"
