"""`diff` on snapshots whose strings are megabytes long: a 10 MB hostname took 152 s (its text
wrapped whole); the human diff shows a bounded window of each value, where they differ, and
`diff --json` keeps every character."""
from __future__ import annotations

import json
import time

from conftest import run_bin

SIZE = 10 << 20


def _snapshot(tmp_path, name: str, hostname: str):
    """A real snapshot of this machine with its hostname replaced."""
    base = tmp_path / "base.json"
    if not base.exists():
        made = run_bin("snapshot", "-o", str(base), timeout=120)
        assert made.returncode == 0, made.stderr
    doc = json.loads(base.read_text())
    doc["report"]["host"]["hostname"] = hostname
    path = tmp_path / name
    path.write_text(json.dumps(doc))
    return path


def test_a_ten_megabyte_hostname_diffs_in_seconds_and_shows_where_it_differs(tmp_path):
    words = "a b " * (SIZE // 4)          # spaces: the worst case for wrapping
    before = _snapshot(tmp_path, "before.json", words + "x")
    after = _snapshot(tmp_path, "after.json", words + "y")
    started = time.monotonic()
    res = run_bin("diff", str(before), str(after), timeout=120)
    took = time.monotonic() - started
    assert res.returncode in (0, 1), res.stderr
    assert took < 30, f"diff took {took:.1f} s"          # was 152 s; ~2 s here, idle
    assert len(res.stdout) < 5000 and res.stdout.count("\n") < 40, res.stdout[:500]
    # the window is where the values differ: both ends are shown, with the length
    assert "x (" in res.stdout and "y (" in res.stdout, res.stdout
    assert f"{SIZE + 1} characters" in res.stdout and "diff --json has all" in res.stdout


def test_diff_json_keeps_the_whole_values(tmp_path):
    before = _snapshot(tmp_path, "before.json", "h" * (1 << 20))
    after = _snapshot(tmp_path, "after.json", "g" * (1 << 20))
    res = run_bin("diff", "--json", str(before), str(after), timeout=120)
    assert res.returncode in (0, 1), res.stderr
    changes = [c for c in json.loads(res.stdout)["changes"] if c["path"] == "host.hostname"]
    assert changes and changes[0]["before"] == "h" * (1 << 20)
    assert changes[0]["after"] == "g" * (1 << 20)


def test_short_values_are_shown_whole(tmp_path):
    before = _snapshot(tmp_path, "before.json", "db-01")
    after = _snapshot(tmp_path, "after.json", "db-02")
    res = run_bin("diff", str(before), str(after), timeout=120)
    assert "db-01 -> db-02" in res.stdout and "characters" not in res.stdout, res.stdout
