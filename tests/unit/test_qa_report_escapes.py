"""QA: strings from the host (a device model, vendor tool output, a capture made elsewhere) never
reach the operator's terminal as escape sequences in `inspector report`."""
from __future__ import annotations

import shutil

from conftest import fixture_root, run_cli

HOSTILE = "EVIL\x1b]0;pwned\x07\x1b[2J\x1b[31mRED\x9b1m"


def test_control_characters_in_host_strings_are_shown_not_sent(tmp_path):
    root = tmp_path / "root"
    shutil.copytree(fixture_root("storage-md-check"), root, symlinks=True)
    (root / "sys/block/sda/device/model").write_text(HOSTILE + "\n")
    (root / "sys/block/md0/md/dev-sdc/state").write_text("in_sync\x1b[2J\n")
    res = run_cli("report", "--root", str(root))
    assert res.status == 0
    assert "\x1b" not in res.out and "\x9b" not in res.out and "\x07" not in res.out
    assert "EVIL\\x1b]0;pwned" in res.out and "in_sync\\x1b[2J" in res.out
    # --json keeps the value exactly (JSON escapes it)
    doc = run_cli("report", "--root", str(root), "--json", "--section", "storage").json()
    assert doc["sections"]["storage"]["devices"]["sda"]["model"] == HOSTILE


def test_printable_leaves_clean_reports_untouched():
    from inspector.collect import build_report
    from inspector.host import HostRoot
    from inspector.model import to_jsonable
    from inspector.render.findings import printable
    report = build_report(HostRoot(str(fixture_root("flash-mixed"))))
    assert to_jsonable(printable(report)) == to_jsonable(report)
