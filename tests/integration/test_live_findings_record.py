"""`record --samples` keeps the live findings with each interval, so `top --db --from --to`
shows when one began and when it ended: a tmpfs filling for real under a recorder whose
thresholds come from an inspector.toml in $XDG_CONFIG_HOME."""
from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

from conftest import run_cli

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
    recorder = start_recorder(db, every="0.5s")
    writer = None
    try:
        wait_for_intervals(db, 2, recorder)
        writer = subprocess.Popen(["sh", "-c", f"while :; do head -c 4194304 /dev/zero > "
                                   f"{mnt}/f.$(date +%s%N); sleep 0.5; done"])
        deadline = time.monotonic() + 14
        seen = False
        while time.monotonic() < deadline and not seen:
            time.sleep(1)
            res = run_cli("top", "--db", db, "--json")
            seen = CODE in res.out
        assert seen, "no time-to-full finding recorded within 14 s"
        writer.kill()
        writer.wait(5)
        for f in mnt.iterdir():
            f.unlink()
        time.sleep(4)
    finally:
        if writer is not None and writer.poll() is None:
            writer.kill()
            writer.wait(5)
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
    text = run_cli("top", "--db", db)
    assert text.status == 0, text.err
    assert f"CRIT {mnt}: {mnt} full in " in text.out and f"OK {mnt}: ended " in text.out
