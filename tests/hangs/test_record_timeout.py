"""`record --timeout`: the per-collector bound other commands have (it had none: a hung
collector cost every sample 15 s). The real binary against a /sys/block that never answers
(hung_mount.SilentFuse) in a private mount namespace."""
from __future__ import annotations

import json
import sqlite3

import pytest

from conftest import inspector_bin, require_root, run_bin
from hung_mount import run_hung
from slowness import slack


def test_the_option_is_bounded_like_the_others(tmp_path):
    res = run_bin("record", "--once", "--db", str(tmp_path / "h.sqlite"),
                  "--timeout", "99999999999999999999")
    assert res.returncode == 2 and res.stdout == "", res
    assert len(res.stderr.splitlines()) == 1 and "--timeout" in res.stderr, res.stderr
    assert not (tmp_path / "h.sqlite").exists()
    assert "per-collector timeout (default 15s" in run_bin("record", "--help").stdout


@pytest.mark.root
@pytest.mark.slow
def test_a_hung_collector_costs_a_sample_its_timeout(tmp_path):
    require_root()
    db = tmp_path / "h.sqlite"
    res = run_hung(["/sys/block"], [inspector_bin(), "record", "--once", "--timeout", "2",
                                    "--db", str(db)])
    print("record --timeout 2 ended after", res["seconds"], "s")
    assert not res["hung"] and res["held"] >= 1 and res["stuck_after_release"] == 0, res
    assert res["status"] == 0 and res["after_held"] <= 2 + slack(1.5), res
    with sqlite3.connect(db) as con:
        [(worst, findings)] = con.execute("select worst, findings from checks").fetchall()
    assert worst == "unknown" and {"level": "unknown", "subject": "storage",
                                   "code": "storage.not_collected",
                                   "message": "storage not collected: timed out after 2 s"} \
        in json.loads(findings), findings
