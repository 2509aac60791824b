"""md cases from the field (issue 27, classes 6 and 7): /proc/mdstat pasted without its
indentation, and an auto-read-only array whose resync waits (resync=PENDING). Fixtures:
tests/fixtures/field/mdstat-*/ (each names its source in SOURCE.md), and every real layout of
tests/fixtures/mdstat/ re-indented the ways a paste mangles it."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from conftest import FIXTURES, fixture_root, run_cli
from inspector.discover.md import parse_mdstat
from inspector.model import Finding, Level
from inspector.report.collect import build_report
from inspector.roots.host import HostRoot

FIELD = FIXTURES / "field"
MDSTAT = FIXTURES / "mdstat"
REAL_LAYOUTS = sorted(MDSTAT.glob("*.mdstat"))


def md_findings(root: Path) -> dict[tuple[str, str], Finding]:
    report = build_report(HostRoot(str(root)), ["storage"])
    return {(f.code, f.subject): f for f in report.findings if f.code.startswith("md.")}


def summary(text: str) -> dict:
    """What the parser made of each array, without the raw lines (they keep the paste's form)."""
    parsed = parse_mdstat(text)
    out = {}
    for name, array in parsed.arrays.items():
        fields = dict(vars(array))
        fields.pop("lines")
        fields["members"] = [(m.name, m.number, m.flags) for m in array.members]
        fields["progress"] = vars(array.progress) if array.progress else None
        out[name] = fields
    return out


# ----------------------------------------------------------------------------- class 6
def test_pasted_mail_without_indentation_is_read_by_content():
    text = (FIELD / "mdstat-pasted-unindented/proc/mdstat").read_text()
    parsed = parse_mdstat(text)
    assert parsed.problems == []
    md2, md1 = parsed.arrays["md2"], parsed.arrays["md1"]
    assert (md2.level, md2.raid_disks, md2.active_disks, md2.status, md2.chunk_kib) == \
        ("raid5", 4, 3, "_UUU", 256)
    assert (md1.level, md1.blocks_kib, md1.status) == ("raid1", 8385856, "UU")


def test_pasted_mail_gets_the_verdicts_of_the_kernel_layout():
    found = md_findings(FIELD / "mdstat-pasted-unindented")
    assert set(found) == {("md.degraded", "md2")}   # md1 is whole: nothing to say
    degraded = found[("md.degraded", "md2")]
    assert degraded.level == Level.CRIT
    assert "1 of 4 devices missing [_UUU]; no redundancy left" in degraded.message
    assert "/proc/mdstat: 2917676544 blocks level 5, 256k chunk, algorithm 2 [4/3] [_UUU]" \
        in degraded.evidence


@pytest.mark.parametrize("layout", REAL_LAYOUTS, ids=lambda p: p.stem)
@pytest.mark.parametrize("mangle", ["unindented", "all-indented", "tabs"])
def test_real_layouts_mangled_by_a_paste_parse_the_same(layout, mangle):
    text = layout.read_text()
    lines = text.splitlines()
    pasted = {"unindented": [line.lstrip() for line in lines],
              "all-indented": ["    " + line for line in lines],
              "tabs": ["\t" + line.strip() for line in lines]}[mangle]
    original = parse_mdstat(text)
    again = parse_mdstat("\n".join(pasted) + "\n")
    assert again.problems == original.problems
    assert summary("\n".join(pasted)) == summary(text)


def test_lines_outside_any_array_are_still_named():
    parsed = parse_mdstat("Personalities : [raid1]\n1000 blocks [2/2] [UU]\nnonsense\n"
                          "md0 : active raid1 sda[0] sdb[1]\n1000 blocks [2/2] [UU]\nnonsense\n")
    assert parsed.problems == ["line 2: detail line outside an array: '1000 blocks [2/2] [UU]'",
                               "line 3: unrecognised: 'nonsense'",
                               "line 6: unrecognised detail of md0: 'nonsense'"]
    assert parsed.arrays["md0"].status == "UU"


# ----------------------------------------------------------------------------- class 7
def test_auto_read_only_pending_resync_is_a_warning_with_the_advice():
    found = md_findings(FIELD / "mdstat-auto-read-only-pending")
    assert set(found) == {("md.sync_waiting", "md1"), ("md.read_only", "md1")}   # md0: whole, idle
    pending = found[("md.sync_waiting", "md1")]
    assert pending.level == Level.WARN
    assert pending.message == ("md array md1: resync pending (the array is auto-read-only: the "
                               "resync starts on its first write); its copies are not known to "
                               "agree, so its redundancy is unverified until the resync runs")
    assert pending.advice.startswith("mdadm --readwrite /dev/md1 starts the resync now")
    assert "/proc/mdstat: resync=PENDING" in pending.evidence
    assert "/proc/mdstat: md1 : active (auto-read-only) raid1 sda2[0] sdb2[1]" in pending.evidence
    assert found[("md.read_only", "md1")].level == Level.OK


def test_read_only_pending_resync_names_the_read_only_state(tmp_path):
    (tmp_path / "proc").mkdir()
    (tmp_path / "proc/mdstat").write_text(
        (FIELD / "mdstat-auto-read-only-pending/proc/mdstat").read_text()
        .replace("(auto-read-only)", "(read-only)"))
    found = md_findings(tmp_path)
    pending = found[("md.sync_waiting", "md1")]
    assert pending.level == Level.WARN and "the array is read-only" in pending.message
    assert found[("md.read_only", "md1")].level == Level.WARN


def test_delayed_resync_finding_is_ok_on_a_whole_array(tmp_path):
    (tmp_path / "proc").mkdir()
    (tmp_path / "proc/mdstat").write_text(
        "md0 : active raid1 sdb2[1] sda2[0]\n      1046528 blocks super 1.0 [2/2] [UU]\n"
        "      \tresync=DELAYED\n")
    waiting = md_findings(tmp_path)[("md.sync_waiting", "md0")]
    assert waiting.level == Level.OK and "resync delayed" in waiting.message


def test_sysfs_array_in_read_auto_with_pending_resync_gets_the_same_verdict(tmp_path):
    """A live host (or a capture): sysfs says read-auto and idle, mdstat says PENDING."""
    root = tmp_path / "root"
    shutil.copytree(fixture_root("storage-raid1-recovering"), root, symlinks=True)
    md = root / "sys/devices/virtual/block/md0/md"
    for name, value in {"array_state": "read-auto", "degraded": "0", "sync_action": "idle",
                        "sync_completed": "none", "dev-sdb2/state": "in_sync"}.items():
        (md / name).write_text(value + "\n")
    mdstat = (root / "proc/mdstat").read_text()
    (root / "proc/mdstat").write_text(
        mdstat.replace("md0 : active raid1", "md0 : active (auto-read-only) raid1")
        .replace("1046528 blocks super 1.0 [2/1] [U_]\n      \tresync=DELAYED",
                 "1046528 blocks super 1.0 [2/2] [UU]\n      \tresync=PENDING"))
    found = md_findings(root)
    pending = found[("md.sync_waiting", "md0")]
    assert pending.level == Level.WARN and "auto-read-only" in pending.message
    assert ("md.degraded", "md0") not in found
    assert "/sys/block/md0/md/array_state: read-auto" in pending.evidence


def test_cli_report_json_carries_the_pending_warning():
    result = run_cli("report", "--root", str(FIELD / "mdstat-auto-read-only-pending"), "--json",
                     "--section", "storage")
    findings = {(f["code"], f["subject"]): f for f in result.json()["findings"]}
    assert findings[("md.sync_waiting", "md1")]["level"] == "warn"
