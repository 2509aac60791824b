"""QA defects in `inspector probe io`, found side by side with ioping."""
import json
import os
import subprocess

import pytest

from conftest import inspector_bin, run_cli


@pytest.fixture
def data_file(tmp_path):
    path = tmp_path / "data.bin"
    path.write_bytes(os.urandom(4 << 20))
    return str(path)


def test_ping_mode_does_not_pause_after_the_last_request(data_file):
    # ioping -c 3 -i 0.5 sleeps twice (between requests): 3 requests in ~1.0 s. The probe
    # used to sleep once more after the last one: "generated 3 requests in 1.50 s" and a run
    # half a second longer than asked.
    r = run_cli("probe", "io", data_file, "-c", "3", "-i", "0.5", "--json")
    assert r.status == 0, r.err
    summary = json.loads(r.out)["summary"]
    assert summary["total_requests"] == 3
    assert 0.95e9 <= summary["wall_ns"] < 1.25e9, summary["wall_ns"]


def test_one_request_in_ping_mode_does_not_wait_for_the_interval(data_file):
    r = run_cli("probe", "io", data_file, "-c", "1", "-i", "2", "--json")
    assert r.status == 0, r.err
    summary = json.loads(r.out)["summary"]
    assert summary["total_requests"] == 1
    assert summary["wall_ns"] < 0.5e9, summary["wall_ns"]


def test_workers_in_ping_mode_stop_after_their_share(data_file):
    # 6 requests over 2 workers: 3 each, 2 pauses each (0.4 s), not 3 (0.6 s)
    r = run_cli("probe", "io", data_file, "-c", "6", "-j", "2", "-i", "0.2", "--json")
    assert r.status == 0, r.err
    summary = json.loads(r.out)["summary"]
    assert summary["total_requests"] == 6
    assert summary["wall_ns"] < 0.55e9, summary["wall_ns"]


def test_directory_where_no_file_can_be_created_says_so():
    # /proc exists: "/proc: No such file or directory" read as if the path were missing
    proc = subprocess.run([inspector_bin(), "probe", "io", "-c", "3", "/proc"],
                          capture_output=True, text=True, timeout=30)
    assert proc.returncode == 2
    assert proc.stderr.strip() == ("inspector: /proc: cannot create a temporary file: "
                                   "No such file or directory")
