"""QA of `inspector capture` on this machine: it says when the capture is incomplete."""
from __future__ import annotations

import time

from conftest import replace_section, run_cli


def test_capture_warns_about_a_section_it_could_not_collect(tmp_path, monkeypatch):
    def hang(root):
        time.sleep(1.5)
    replace_section(monkeypatch, "cpu", collect=hang)
    out = tmp_path / "cap.tar.gz"
    res = run_cli("capture", "-o", str(out), "--timeout", "0.3")
    assert res.status == 0 and out.exists()
    assert "warning: cpu not collected (timed out after 0.3 s)" in res.err
    assert "storage not collected" not in res.err


def test_complete_capture_has_no_warning(tmp_path):
    res = run_cli("capture", "-o", str(tmp_path / "cap.tar.gz"))
    assert res.status == 0 and "wrote" in res.err and "warning" not in res.err
