"""`inspector report` on corrupted copies of fixture roots says unknown, never nonsense."""
from __future__ import annotations

import shutil

from conftest import fixture_root
from inspector.report.collect import build_report
from inspector.roots.host import HostRoot


def corrupt_copy(tmp_path, name: str, files: dict[str, str]) -> HostRoot:
    root = tmp_path / name
    shutil.copytree(fixture_root(name), root, symlinks=True)
    for rel, text in files.items():
        (root / rel).write_text(text)
    return HostRoot(str(root))


def test_md_sync_completed_past_its_total_is_no_percentage(tmp_path):
    root = corrupt_copy(tmp_path, "storage-md-check",
                        {"sys/block/md1/md/sync_completed": "9999999999999999999999 / 1\n"})
    report = build_report(root, ["storage"])
    md1 = report.sections["storage"].md["md1"]
    assert md1.progress_percent == 42.3        # mdstat's own figure, not 1e24 %
    assert not [f for f in report.findings if "e+" in f.message or "99999" in f.message]
