"""`record --samples` keeps the live findings with each interval, so `top --db --from --to`
shows when one began and when it ended, and its --textfile has a gauge per active one: a tmpfs filling for real under a recorder whose
thresholds come from an inspector.toml in $XDG_CONFIG_HOME."""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

from conftest import inspector_bin, run_cli

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "recording"))
from recording_helpers import start_recorder, stop, wait_for_intervals  # noqa: E402

CODE = "live.fs.time_to_full"


def test_a_recorded_fill_shows_its_begin_and_end_in_top_db(tmp_path, monkeypatch):
    config = tmp_path / "config" / "inspector"
    config.mkdir(parents=True)
    (config / "inspector.toml").write_text("[live.fs]\ncrit_growth_span_s = 4\n")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    mnt = tmp_path / "fill"
    mnt.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=96m", "tmpfs", str(mnt)], check=True,
                   timeout=20)
    db = str(tmp_path / "h.sqlite")
    prom = tmp_path / "inspector.prom"
    # discovery and the textfile every 2 s (the samples every 0.5 s)
    recorder = start_recorder(db, "--every", "2s", "--textfile", str(prom), every="0.5s")
    writer = None
    try:
        wait_for_intervals(db, 2, recorder)
        writer = _fill(mnt)
        deadline = time.monotonic() + 14
        seen = gauge = False
        series = (f'inspector_live_finding{{code="{CODE}",level="crit",subject="{mnt}"}} 1')
        while time.monotonic() < deadline and not (seen and gauge):
            time.sleep(1)
            res = run_cli("top", "--db", db, "--json")
            seen = CODE in res.out
            gauge = gauge or (prom.exists() and series in prom.read_text())
        assert seen, "no time-to-full finding recorded within 14 s"
        assert gauge, "no live finding gauge in the textfile within 14 s"
        _end(writer)
        for f in mnt.iterdir():
            f.unlink()
        time.sleep(4)
    finally:
        if writer is not None:
            _end(writer)
        status, err = stop(recorder)
        subprocess.run(["umount", "-l", str(mnt)], capture_output=True, timeout=20)
    assert status == 0, err
    res = run_cli("top", "--db", db, "--json")
    assert res.status == 0, res.err
    lines = [json.loads(line) for line in res.out.splitlines()]
    rows = [(d["wall"], f) for d in lines for f in d["findings"] if f["code"] == CODE
            and f["subject"] == str(mnt)]
    active = [(w, f) for w, f in rows if f["level"] == "crit"]
    ended = [(w, f) for w, f in rows if f["level"] == "ok"]
    assert active and "(since " in active[0][1]["message"]
    assert " full in " in active[0][1]["message"]
    assert len(ended) == 1 and ended[0][1]["message"].startswith("ended ")
    assert ended[0][0] > active[-1][0]          # it ends after its last active interval
    text = run_cli("top", "--db", db, "--wide")     # a finding is one line, whatever COLUMNS
    assert text.status == 0, text.err
    assert f"CRIT {mnt}: {mnt} full in " in text.out and f"OK {mnt}: ended " in text.out


def test_check_live_is_critical_for_a_filling_tmpfs_unless_ignored(tmp_path):
    config = tmp_path / "config" / "inspector"
    config.mkdir(parents=True)
    (config / "inspector.toml").write_text("[live.fs]\ncrit_growth_span_s = 3\n")
    env = {"XDG_CONFIG_HOME": str(tmp_path / "config")}
    mnt = tmp_path / "fill"
    mnt.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=128m", "tmpfs", str(mnt)], check=True,
                   timeout=20)
    writer = _fill(mnt)
    try:
        both = [subprocess.Popen([inspector_bin(), "check", "--live", "7s", *extra],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                 env={**os.environ, **env})
                for extra in ([], ["--ignore", "live.fs.*"])]     # side by side: 8 s
        res, ignored = (_finished(p) for p in both)
    finally:
        _end(writer)
        subprocess.run(["umount", "-l", str(mnt)], capture_output=True, timeout=20)
    assert res.returncode == 2, res.stdout + res.stderr
    status, _, perf = res.stdout.splitlines()[0].partition(" | ")
    assert status.startswith("INSPECTOR CRITICAL - ") and f"{mnt} full in " in status
    # at least this one (a machine others load may add a saturated CPU)
    live_crit = re.search(r"live_crit=(\d+);", perf)
    assert live_crit, perf
    crit = int(live_crit.group(1))
    assert crit >= 1 and "live_samples=" in perf
    assert f"[CRIT] {mnt}: {mnt} full in " in res.stdout and "(live.fs.time_to_full)" in res.stdout
    assert "live.fs.time_to_full" not in ignored.stdout and "live_crit=" in ignored.stdout


def _fill(mnt: Path) -> subprocess.Popen:
    """4 MiB every half second into `mnt`, in a session of its own: _end() ends the shell and
    the `head` it is waiting for (a head left writing after the files were deleted started
    the trend again)."""
    return subprocess.Popen(["sh", "-c", f"while :; do head -c 4194304 /dev/zero > "
                             f"{mnt}/f.$(date +%s%N); sleep 0.5; done"], start_new_session=True)


def _end(writer: subprocess.Popen) -> None:
    try:
        os.killpg(writer.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    writer.wait(5)


def _finished(proc: subprocess.Popen) -> subprocess.CompletedProcess:
    out, err = proc.communicate(timeout=40)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)
