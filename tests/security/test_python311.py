"""Debian 12's own Python (3.11.2: no tarfile `filter=`, CVE-2025-4517 unfixed) opens captures
safely: `requires-python >= 3.11` admits it (pipx install --python /usr/bin/python3.11)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import run_bin

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_extract import cve_2025_4517, cve_component_len  # noqa: E402

DEBIAN_PYTHON = "/usr/bin/python3.11"
REPO = Path(__file__).resolve().parents[2]


def debian_python(code: str, *args: str) -> subprocess.CompletedProcess:
    if not os.access(DEBIAN_PYTHON, os.X_OK):
        pytest.fail(f"{DEBIAN_PYTHON} is missing: install Debian's python3 (apt-get install "
                    "python3); this test runs the capture reader on it")
    # only inspector.roots.host, .capture, .model and what they import must load: no venv
    code = f"import sys; sys.path.insert(0, {str(REPO)!r})\n" + code
    return subprocess.run([DEBIAN_PYTHON, "-I", "-c", code, *args], capture_output=True,
                          text=True, timeout=120)


def test_the_interpreter_is_the_one_without_the_filter():
    out = debian_python("import sys, tarfile; print(sys.version_info[:3], "
                        "hasattr(tarfile, 'data_filter'))")
    assert out.stdout.strip() == "(3, 11, 2) False", out


OPEN_CAPTURE = """
import json, sys
from inspector.captures.capture import open_root
root = open_root(sys.argv[1])
print(json.dumps({"hostname": root.try_line("proc/sys/kernel/hostname"),
                  "uname": root.uname(), "stat": root.read_text("proc/stat")[:3],
                  "version": list(sys.version_info[:3])}))
"""


def test_open_root_on_a_capture_with_debian_python(tmp_path):
    capture = tmp_path / "cap.tar.gz"
    assert run_bin("capture", "-o", str(capture)).returncode == 0
    out = debian_python(OPEN_CAPTURE, str(capture))
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert doc["version"] == [3, 11, 2]
    assert doc["uname"]["release"] == os.uname().release
    assert doc["hostname"] == Path("/proc/sys/kernel/hostname").read_text().strip()
    assert doc["stat"] == "cpu"


def test_cve_2025_4517_tarball_on_debian_python(tmp_path):
    outside = tmp_path / "outside"
    dest = outside / "dest"
    dest.mkdir(parents=True)
    (outside / "victim").write_text("original\n")
    archive = cve_2025_4517(tmp_path / "cve.tar", dest, 20)
    out = debian_python("import sys\nfrom inspector.roots.safe_extract import extract\n"
                        "print(extract(sys.argv[1], sys.argv[2]).skipped)", str(archive), str(dest))
    assert out.returncode == 0, out.stderr
    assert "hardlink" in out.stdout
    assert sorted(os.listdir(outside)) == ["dest", "victim"]
    assert (outside / "victim").read_text() == "original\n"
    archive = cve_2025_4517(tmp_path / "cve-long.tar", dest, cve_component_len(dest))
    out = debian_python("import sys\nfrom inspector.captures.capture import open_root\n"
                        "open_root(sys.argv[1])", str(archive))
    assert "unsafe member name" in out.stderr and "over 1024 bytes" in out.stderr
    assert sorted(os.listdir(outside)) == ["dest", "victim"]
