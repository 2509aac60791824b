"""Exit statuses and small lies (issue 31 point 8), each with the real binary: an import of
nothing is exit 1 as --help says, an unreadable resolv.conf is no `nameservers 0` series, and
a root nobody may not read is "permission denied", not "not a host root", and a capture cut
at a member boundary is refused as truncated."""
from __future__ import annotations

import gzip
import io
import os
import shutil
import subprocess
import tarfile
import tempfile
from pathlib import Path

import pytest

from conftest import FIXTURES, inspector_bin, run_bin

AS_NOBODY = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"]


@pytest.fixture
def open_dir():
    """A directory nobody can reach (pytest's own tmp_path is root's, mode 0700)."""
    path = tempfile.mkdtemp(prefix="inspector-lies-")
    os.chmod(path, 0o755)
    yield Path(path)
    shutil.rmtree(path)


def _as_nobody(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([*AS_NOBODY, inspector_bin(), *argv], capture_output=True, text=True,
                          timeout=120, env={**os.environ, "HOME": "/nonexistent"})


@pytest.mark.parametrize("content", ["", "  \n\n\t\n"], ids=["empty", "blank"])
def test_importing_an_empty_log_is_exit_1_and_creates_nothing(tmp_path, content):
    log = tmp_path / "ioping.log"
    log.write_text(content)
    db = tmp_path / "h.sqlite"
    res = run_bin("history", "import-ioping", str(log), "--db", str(db))
    assert res.returncode == 1, (res.returncode, res.stderr)
    assert "imported 0 runs" in res.stderr and res.stderr.count("\n") == 1, res.stderr
    assert not db.exists()


def test_the_help_says_an_import_of_nothing_is_exit_1():
    # once, not once per log above: the help is the same
    assert "1 the log held no run" in " ".join(
        run_bin("history", "import-ioping", "--help").stdout.split())


def test_importing_empty_stdin_is_exit_1(tmp_path):
    db = tmp_path / "h.sqlite"
    res = subprocess.run([inspector_bin(), "history", "import-ioping", "-", "--db", str(db)],
                         stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60)
    assert res.returncode == 1 and "imported 0 runs" in res.stderr, res.stderr
    assert not db.exists()


def test_a_log_with_runs_still_imports_with_exit_0(tmp_path):
    db = tmp_path / "h.sqlite"
    res = run_bin("history", "import-ioping", str(FIXTURES / "samples/ioping/periodic-log.txt"),
                  "--db", str(db))
    assert res.returncode == 0 and db.exists(), res.stderr


def _metrics(text: str) -> dict[str, str]:
    return {line.rsplit(" ", 1)[0]: line.rsplit(" ", 1)[1] for line in text.splitlines()
            if line and not line.startswith("#")}


def test_an_unreadable_resolv_conf_is_no_nameserver_count(open_dir):
    tree = open_dir / "tree"
    shutil.copytree(FIXTURES / "roots" / "dns-four-servers", tree)
    for d, _, files in os.walk(tree):
        os.chmod(d, 0o755)
        for f in files:
            os.chmod(os.path.join(d, f), 0o644)
    readable = _as_nobody("export", "--prometheus", "--root", str(tree))
    assert readable.returncode == 0, readable.stderr
    assert _metrics(readable.stdout)["inspector_resolver_nameservers"] == "3"
    os.chmod(tree / "etc" / "resolv.conf", 0o000)
    res = _as_nobody("export", "--prometheus", "--root", str(tree))
    assert res.returncode == 0, res.stderr
    metrics = _metrics(res.stdout)
    assert "inspector_resolver_nameservers" not in metrics, "unknown exported as a count"
    assert metrics['inspector_section_up{section="dns"}'] == "0"


def test_a_root_nobody_may_not_read_is_permission_denied(open_dir):
    private = open_dir / "private"
    (private / "host" / "proc").mkdir(parents=True)
    os.chmod(private, 0o700)
    for spec in ("/root", str(private / "host")):
        res = _as_nobody("report", "--root", spec)
        assert res.returncode == 2, res.stderr
        assert res.stderr.strip() == f"inspector: --root {spec}: permission denied (as uid " \
                                     f"{65534})", res.stderr
    # root reads the same tree; a directory nobody may read but that is no root still says so
    assert "permission denied" not in run_bin("report", "--root", str(private / "host")).stderr
    assert "not a host root" in _as_nobody("report", "--root", "/tmp").stderr
    assert "no such file" in _as_nobody("report", "--root", "/nonexistent/x").stderr


def _member_ends(tar_bytes: bytes) -> list[int]:
    """The offsets where each member's data (padded to 512) ends: the member boundaries."""
    ends = []
    with tarfile.open(fileobj=io.BytesIO(tar_bytes), mode="r:") as tar:
        for member in tar:
            ends.append(member.offset_data + (member.size + 511) // 512 * 512)
    return ends


def test_a_capture_cut_at_a_member_boundary_is_refused_as_truncated(tmp_path):
    """A copy cut short exactly after a member read as a whole capture with fewer files
    (the README says truncated captures are refused); now it is, and the whole one opens."""
    whole = tmp_path / "whole.tar.gz"
    made = run_bin("capture", "-o", str(whole), timeout=120)
    assert made.returncode == 0, made.stderr
    raw = gzip.decompress(whole.read_bytes())
    ends = _member_ends(raw)
    assert len(ends) > 20
    for keep in (ends[len(ends) // 2], ends[-1]):       # half of it; all but the end blocks
        cut = tmp_path / f"cut-{keep}.tar.gz"
        cut.write_bytes(gzip.compress(raw[:keep]))
        res = run_bin("report", "--root", str(cut), timeout=120)
        assert res.returncode == 2, (res.returncode, res.stderr)
        assert res.stderr.strip() == (f"inspector: --root {cut}: truncated capture: it ends "
                                      "after a member, without the tar end-of-archive blocks "
                                      "(a copy cut short?)"), res.stderr
    assert run_bin("report", "--root", str(whole), timeout=120).returncode in (0, 1)
