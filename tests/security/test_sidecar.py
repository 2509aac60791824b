"""The sidecar of a capture is foreign input: bounded, never blocking, never a traceback."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from conftest import CliResult, inspector_bin, run_bin, run_cli
from inspector.model import Unknown
from inspector.roots.host import MAX_SIDECAR_BYTES, HostRoot, Unavailable
from slowness import slack

SIDECAR = "inspector-sidecar.json"


def tree_with(tmp_path, content: bytes | str):
    (tmp_path / "proc").mkdir(exist_ok=True)
    (tmp_path / "proc" / "stat").write_text("cpu 1 2 3 4 5 6 7 8\n")
    path = tmp_path / SIDECAR
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    return tmp_path


def report(tmp_path, *args):
    return run_bin("report", "--root", str(tmp_path), *args, timeout=60)


def one_line_error(res, words: str) -> None:
    assert res.returncode == 2, res
    assert res.stderr.count("\n") == 1 and words in res.stderr, res.stderr
    assert "Traceback" not in res.stderr and "internal error" not in res.stderr


def test_a_fifo_sidecar_does_not_hang_report_check_or_top(tmp_path):
    (tmp_path / "proc").mkdir()
    os.mkfifo(tmp_path / SIDECAR)
    for argv in (["report"], ["check"], ["top", "--count", "1"]):
        start = time.monotonic()
        res = run_bin(*argv, "--root", str(tmp_path), timeout=30)     # a FIFO's open: for ever
        assert time.monotonic() - start < slack(2.5), (argv, res)     # refused at once
        assert "a FIFO, not a file" in res.stdout + res.stderr, (argv, res)


def test_a_sidecar_over_the_bound_is_refused_before_it_is_read(tmp_path):
    path = tree_with(tmp_path, b"") / SIDECAR
    with open(path, "wb") as f:
        f.truncate(1 << 30)                        # 1 GiB, sparse: nothing to read for real
    start = time.monotonic()
    with pytest.raises(Unavailable, match="over 64 MiB"):
        HostRoot(str(tmp_path))
    assert time.monotonic() - start < 1
    one_line_error(report(tmp_path), "over 64 MiB")


def max_rss_of(argv) -> tuple[subprocess.CompletedProcess, int]:
    """Run argv; the peak RSS in MiB of it and the processes it waited for."""
    code = ("import json, resource, subprocess, sys\n"
            "res = subprocess.run(sys.argv[1:], capture_output=True, text=True)\n"
            "print(json.dumps([res.returncode, res.stderr,\n"
            "                  resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024]))")
    out = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True,
                         timeout=120, check=True)
    status, err, rss = json.loads(out.stdout)
    return subprocess.CompletedProcess(argv, status, "", err), rss


def test_a_huge_string_costs_no_gigabytes(tmp_path):
    """A string as big as the bound allows, and one over it: the report (or its refusal) stays
    far below the 2.1 GB that a 1 GiB string cost when the whole file was parsed."""
    big = "a" * (MAX_SIDECAR_BYTES - 1000)
    tree_with(tmp_path, json.dumps({"facts": {"env": {"X": big}}}))
    res, rss = max_rss_of([inspector_bin(), "report", "--root", str(tmp_path)])
    assert res.returncode == 0, res.stderr
    assert rss < 600, rss
    (tmp_path / SIDECAR).write_text(json.dumps({"facts": {"env": {"X": big + "a" * 2000}}}))
    res, rss = max_rss_of([inspector_bin(), "report", "--root", str(tmp_path)])
    assert res.returncode == 2 and "over 64 MiB" in res.stderr
    assert rss < 200, rss


@pytest.mark.parametrize("depth, words", [(100_000, "nested too deeply"),
                                          (500, "nested more than 64 levels deep"),
                                          (65, "nested more than 64 levels deep")])
def test_deep_nesting_is_refused_cleanly(tmp_path, depth, words):
    tree_with(tmp_path, '{"facts": {"x": {"y": ' + "[" * depth + "]" * depth + "}}}")
    with pytest.raises(Unavailable, match=words):
        HostRoot(str(tmp_path))
    one_line_error(report(tmp_path), words)


def test_too_many_objects_are_refused(tmp_path):
    tree_with(tmp_path, '{"facts": {"x": {"y": [' + ",".join(["{}"] * 2_000_001) + "]}}}")
    one_line_error(report(tmp_path), "more than 2000000 objects")


IMPOSSIBLE_STAMPS = ["NaN", "Infinity", "-Infinity", "1e308", "-5", "1e20", '"yesterday"', "true"]
IMPOSSIBLE_STAMP_COMMANDS = [["report"], ["report", "--json"], ["top", "--count", "1"], ["check"],
                             ["export", "--prometheus"]]


def binary_command_for(stamp: str) -> list[str]:
    """The one command the real binary runs for this stamp: each command by one or two of the
    eight stamps."""
    return IMPOSSIBLE_STAMP_COMMANDS[IMPOSSIBLE_STAMPS.index(stamp) % len(IMPOSSIBLE_STAMP_COMMANDS)]


def as_completed(res: CliResult) -> subprocess.CompletedProcess:
    return subprocess.CompletedProcess([], res.status, res.out, res.err)


@pytest.mark.parametrize("stamp", IMPOSSIBLE_STAMPS)
def test_impossible_capture_times_are_unknown(tmp_path, stamp):
    tree_with(tmp_path, '{"captured_at": %s, "facts": {"time": {"collected_at": %s}, '  # noqa: UP031
                        '"uname": {"uname": {"nodename": "h1", "release": "6.1", '
                        '"machine": "x86_64"}}}}' % (stamp, stamp))   # % keeps JSON's braces as they are
    root = HostRoot(str(tmp_path))
    assert root.sidecar_meta["captured_at"] is None
    assert isinstance(root.fact("time", "collected_at", time.time), Unknown)
    # every stamp through every command; the real binary runs one command per stamp (each
    # command by one or two stamps), the rest run in-process: the stamp reaches them all as
    # the same Unknown (asserted above), and a start of the binary costs 0.3 s of CPU
    for argv in IMPOSSIBLE_STAMP_COMMANDS:
        binary = argv == binary_command_for(stamp)
        res = run_bin(*argv, "--root", str(tmp_path), timeout=60) if binary else \
            as_completed(run_cli(*argv, "--root", str(tmp_path)))
        assert res.returncode in (0, 1, 3), (argv, res.stderr)
        assert "Traceback" not in res.stderr and "internal error" not in res.stderr
        if argv == ["report", "--json"]:
            doc = json.loads(res.stdout)
            assert doc["host"]["hostname"] == "h1" and doc["host"]["collected_at"] == 0.0


def test_a_plausible_capture_time_is_kept(tmp_path):
    tree_with(tmp_path, '{"captured_at": 1700000000.5, "facts": {"time": '
                        '{"collected_at": 1700000000}}}')
    root = HostRoot(str(tmp_path))
    assert root.sidecar_meta["captured_at"] == 1700000000.5
    assert root.fact("time", "collected_at", time.time) == 1700000000
