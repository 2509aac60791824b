"""`record` on a filesystem that fills up: it said `internal error: OperationalError` and died.
Now the sample that does not fit is skipped with one line, the recorder goes on, stores the
next samples once there is room, and the samples committed before are intact. Every output
(-o, --textfile, a new --db) that does not fit leaves no empty or partial file, and an existing
one is kept whole. A real (tiny) tmpfs mount, filled for real."""
from __future__ import annotations

import os
import sqlite3
import subprocess
import time

import pytest

from conftest import fill_until_full, fixture_root, inspector_bin, run_bin, run_cli

ROOT = str(fixture_root("xen-pv-guest"))


def _samples(db: str) -> int:
    res = run_cli("history", "--db", db, "--checks", "--json")
    assert res.status == 0, res.err
    return sum(b["samples"] for b in res.json()["checks"])


def _wait_for(proc_err: list[str], stream, what: str, timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = stream.readline()
        if not line:
            break
        proc_err.append(line)
        if what in line:
            return
    raise AssertionError(f"never saw {what!r} in: {''.join(proc_err)}")


def test_a_full_disk_skips_samples_and_the_recorder_goes_on(tiny_fs):
    db = str(tiny_fs / "h.sqlite")
    proc = subprocess.Popen([inspector_bin(), "record", "--root", ROOT, "--db", db,
                             "--every", "250ms", "--count", "16"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    err: list[str] = []
    try:
        _wait_for(err, proc.stderr, "sample 2:")
        filler = fill_until_full(tiny_fs)
        _wait_for(err, proc.stderr, "skipped")
        _wait_for(err, proc.stderr, "skipped")        # it goes on, and keeps saying why
        os.unlink(filler)
        _, rest = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    text = "".join(err) + rest
    lines = [line for line in text.splitlines() if " sample " in line]
    stored = [line for line in lines if "skipped" not in line]
    skipped = [line for line in lines if "skipped" in line]
    assert len(lines) == 16, text
    assert skipped and all("database or disk is full" in line for line in skipped), text
    assert "sample 16:" in text, text                       # stored again once there was room
    assert "internal error" not in text and "Traceback" not in text, text
    assert proc.returncode == 1, (proc.returncode, text)     # a timer unit shows the failure
    assert _samples(db) == len(stored)                       # every committed sample intact
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    conn.close()


def test_opening_on_a_full_disk_is_one_line(tiny_fs):
    db = str(tiny_fs / "h.sqlite")
    assert run_cli("record", "--once", "--root", ROOT, "--db", db).status == 0
    filler = fill_until_full(tiny_fs)
    res = run_cli("record", "--once", "--root", ROOT, "--db", db)
    assert res.status in (1, 2), (res.status, res.err)
    assert "internal error" not in res.err and len(res.err.strip().splitlines()) <= 2, res.err
    assert "full" in res.err or "no space" in res.err, res.err
    os.unlink(filler)
    assert _samples(db) == 1


# (argv, the exit status a failed write gives): record goes on past a --textfile it could
# not write and says so at the end (1); everything else could not do its one job (2)
OUTPUTS = {
    "snapshot -o": (["snapshot", "--root", ROOT, "-o"], 2),
    "export --json -o": (["export", "--json", "--root", ROOT, "-o"], 2),
    "export --prometheus -o": (["export", "--prometheus", "--root", ROOT, "-o"], 2),
    "record --db": (["record", "--once", "--root", ROOT, "--db"], 2),
    "record --textfile": (["record", "--once", "--root", ROOT, "--textfile"], 1),
    "capture -o": (["capture", "--timeout", "5s", "-o"], 2),
}


def _argv(command: str, out: str, tmp_path) -> list[str]:
    argv, _ = OUTPUTS[command]
    if command == "record --textfile":       # the database on a disk with room
        return [*argv, out, "--db", str(tmp_path / "h.sqlite")]
    return [*argv, out]


@pytest.mark.parametrize("command", OUTPUTS)
def test_a_new_output_on_a_full_disk_leaves_no_empty_file(tiny_fs, tmp_path, command):
    """The create succeeds (an inode is free) and the write fails: what was created goes
    (a 0-byte history database was left behind), and the error is one line."""
    fill_until_full(tiny_fs)
    res = run_bin(*_argv(command, str(tiny_fs / "out"), tmp_path), timeout=120)
    assert res.returncode == OUTPUTS[command][1], (res.returncode, res.stderr)
    assert "No space left" in res.stderr or "disk is full" in res.stderr, res.stderr
    assert "Traceback" not in res.stderr and "internal error" not in res.stderr, res.stderr
    assert os.listdir(tiny_fs) == ["filler"]


@pytest.mark.parametrize("command", ["snapshot -o", "export --prometheus -o",
                                     "record --textfile"])
def test_an_existing_output_on_a_full_disk_is_kept_whole(tiny_fs, tmp_path, command):
    out = tiny_fs / "out"
    out.write_bytes(b"previous\n")
    fill_until_full(tiny_fs)
    res = run_bin(*_argv(command, str(out), tmp_path), timeout=120)
    assert res.returncode == OUTPUTS[command][1], (res.returncode, res.stderr)
    assert out.read_bytes() == b"previous\n"
    assert sorted(os.listdir(tiny_fs)) == ["filler", "out"]
