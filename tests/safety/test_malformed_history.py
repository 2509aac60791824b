"""A malformed history database (text in numeric columns, timestamps like 1e300, findings that
are not JSON, damaged pages) ended in "internal error: TypeError/OverflowError/JSONDecodeError"
and `record --once` wrote into a database that failed its integrity check. Now: one line saying
what is wrong, everything readable still shown, and nothing written into a damaged file.
The recording is made by the real binary; the damage by SQLite itself and by overwriting
pages."""
from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
from contextlib import closing

import pytest

from conftest import FIXTURES, run_bin, run_cli

READERS = [["history"], ["history", "--json"], ["history", "--by", "day"],
           ["history", "--checks"], ["history", "--checks", "--json"],
           ["history", "--samples"], ["top", "--count", "3"], ["top", "--count", "3", "--json"]]

ROW_DAMAGE = {
    "text_times": "UPDATE probe_runs SET ts = 'noon' || id, ops_per_s = 'fast' WHERE id = 1;"
                  "UPDATE checks SET ts = 'x' WHERE id = 1;"
                  "UPDATE sample_intervals SET ts = 'late' WHERE id = 1;",
    "huge_times": "UPDATE probe_runs SET ts = 1e300 WHERE id = 1;"
                  "UPDATE checks SET ts = -1e300 WHERE id = 1;"
                  "UPDATE sample_intervals SET ts = 1e300, tz_offset_s = 1e18 WHERE id = 1;",
    "bad_json": "UPDATE checks SET findings = '{not json' WHERE id = 1;"
                "UPDATE checks SET findings = '\"text\"', worst = 7 WHERE id = 2;",
    "bad_figures": "UPDATE probe_runs SET lat_avg_us = x'00ff', tz_offset_s = 'z' WHERE id = 2;"
                   "UPDATE sample_disks SET rd_ios = 'many';"
                   "UPDATE sample_procs SET pid = 'x', since = 1e300;"
                   "UPDATE sample_intervals SET load1 = 'high', cpu_user = 'busy' WHERE id = 2;",
}


@pytest.fixture(scope="module")
def recording(tmp_path_factory):
    """A real recording: 3 samples with an io probe run each, and live sample intervals."""
    where = tmp_path_factory.mktemp("recording")
    (where / "io").mkdir()
    db = where / "history.sqlite"
    made = run_bin("record", "--db", str(db), "--samples", "--sample-every", "200ms",
                   "--every", "1s", "--count", "3", "--probe", f"io:{where / 'io'}",
                   "--probe-seconds", "250ms", timeout=120)
    assert made.returncode == 0, made.stderr
    with sqlite3.connect(db) as conn:
        counts = {t: conn.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0]
                  for t in ("probe_runs", "checks", "sample_intervals")}
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    assert counts["probe_runs"] == 3 and counts["checks"] == 3 and counts["sample_intervals"] >= 4
    return db


def _copy(recording, tmp_path, name: str):
    path = tmp_path / f"{name}.sqlite"
    shutil.copy(recording, path)
    return path


def _reads(path, argv, binary: bool = True):
    """The reader `argv` on the database at `path`: the real binary, or in-process."""
    full = ["top", "--db", str(path), *argv[1:]] if argv[0] == "top" else [*argv, "--db", str(path)]
    if binary:
        return run_bin(*full, timeout=60)
    res = run_cli(*full)
    return subprocess.CompletedProcess(full, res.status, res.out, res.err)


def _by_binary(damage: str) -> list[list[str]]:
    """The readers the real binary runs on this damage: two per damage, each reader on one
    damage (the others run in-process; 32 starts of the binary cost 8 s of CPU). `history`,
    whose skipped-runs line is checked, by the binary on text_times."""
    at = sorted(ROW_DAMAGE, reverse=True).index(damage) * 2
    return READERS[at:at + 2]


@pytest.mark.parametrize("damage", sorted(ROW_DAMAGE))
def test_malformed_rows_are_skipped_said_once_and_the_rest_is_read(recording, tmp_path, damage):
    path = _copy(recording, tmp_path, damage)
    # closed before the readers run: an in-process reader's forked child (BoundedHistory)
    # would inherit this connection's SQLite state for the file and wait on it
    with closing(sqlite3.connect(path)) as conn, conn:
        conn.executescript(ROW_DAMAGE[damage])
    stderr_of = {}
    for argv in READERS:
        res = _reads(path, argv, binary=argv in _by_binary(damage))
        stderr_of[" ".join(argv)] = res.stderr
        assert "internal error" not in res.stderr and "Traceback" not in res.stderr, \
            (argv, res.stderr)
        assert res.returncode == 0, (argv, res.returncode, res.stderr)   # the rest is there
        warnings = [line for line in res.stderr.splitlines() if "damaged" in line]
        assert len(warnings) <= 1, res.stderr
        assert res.stdout.strip(), argv
    # the time-level damage is said where it was skipped
    if damage in ("text_times", "huge_times"):
        assert "1 probe runs with a malformed time skipped" in stderr_of["history"], \
            stderr_of["history"]
        res = _reads(path, ["top", "--count", "100"])
        assert "sample intervals with a malformed time or length skipped" in res.stderr


def _overwrite_page(path, page: int) -> None:
    """Garble the body of one page (1-based), past its header, as a bad sector would."""
    size = sqlite3.connect(path).execute("PRAGMA page_size").fetchone()[0]
    with open(path, "r+b") as f:
        f.seek((page - 1) * size + 16)
        f.write(bytes(range(256)) * ((size - 32) // 256))


def _damaged_page(recording, tmp_path):
    """A copy with one damaged table page that quick_check reports (the probe_runs table's
    root: the other tables stay readable)."""
    path = _copy(recording, tmp_path, "pages")
    root = sqlite3.connect(path).execute(
        "SELECT rootpage FROM sqlite_master WHERE name = 'probe_runs'").fetchone()[0]
    _overwrite_page(path, root)
    problems = sqlite3.connect(f"file:{path}?mode=ro", uri=True).execute(
        "PRAGMA quick_check").fetchall()
    assert problems != [("ok",)]
    return path


def test_record_never_writes_into_a_damaged_database(recording, tmp_path):
    path = _damaged_page(recording, tmp_path)
    before = path.read_bytes()
    for argv in (["record", "--once"], ["record", "--samples", "--count", "1"]):
        res = run_bin(*argv, "--db", str(path), timeout=120)
        assert res.returncode == 2, (argv, res.returncode, res.stderr)
        line = res.stderr.strip()
        assert line.count("\n") == 0 and "damaged, not written" in line, line
        assert path.read_bytes() == before
        assert not os.path.exists(f"{path}-wal") or os.path.getsize(f"{path}-wal") == 0
    log = FIXTURES / "samples/ioping/periodic-log.txt"        # real runs to import
    res = run_bin("history", "import-ioping", str(log), "--db", str(path), timeout=60)
    assert res.returncode == 2 and "damaged, not written" in res.stderr, res.stderr
    assert path.read_bytes() == before


def test_a_damaged_page_loses_only_what_is_on_it(recording, tmp_path):
    path = _damaged_page(recording, tmp_path)
    res = _reads(path, ["history", "--checks"])          # the checks table is intact
    assert res.returncode == 0 and "internal error" not in res.stderr, res.stderr
    assert res.stdout.strip()
    runs = _reads(path, ["history"])
    assert "internal error" not in runs.stderr and "Traceback" not in runs.stderr
    assert runs.returncode in (0, 1)
    assert "damaged" in runs.stderr or "no recorded runs" in runs.stderr, runs.stderr
    top = _reads(path, ["top", "--count", "3"])
    assert top.returncode == 0 and top.stdout.strip(), top.stderr


def test_an_intact_database_is_still_written(recording, tmp_path):
    path = _copy(recording, tmp_path, "intact")
    res = run_bin("record", "--once", "--db", str(path), timeout=120)
    assert res.returncode == 0, res.stderr
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT COUNT(*) FROM checks").fetchone()[0] == 4
