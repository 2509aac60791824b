"""md arrays judged from /proc/mdstat alone: roots with /proc/mdstat but no md sysfs (a sosreport,
a pasted file, a partial capture). Fixtures: tests/fixtures/mdstat/*.mdstat, real layouts (see
the README there). Each case checks the findings (code, subject, level) and the array in the
storage model; then mixed roots, the CLI end to end, and properties on arbitrary text."""
from __future__ import annotations

import io
import json
import random
import shutil
import tempfile
from pathlib import Path

import jsonschema  # type: ignore[import-untyped]  # no stubs in the test deps
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rich.console import Console

from conftest import FIXTURES, fixture_root, run_cli
from inspector.discover import storage
from inspector.discover.md import (
    MdstatArray,
    array_from_mdstat,
    is_container,
    missing_slots,
    parse_mdstat,
)
from inspector.documents.schema import report_schema
from inspector.health.md_mdstat import mdstat_redundancy
from inspector.health.md_verdicts import Redundancy
from inspector.health.storage import md_findings
from inspector.model import Level, known
from inspector.render.storage import render
from inspector.report.collect import build_report
from inspector.roots.host import HostRoot

MDSTAT = FIXTURES / "mdstat"
C, W, O, U = Level.CRIT, Level.WARN, Level.OK, Level.UNKNOWN  # noqa: E741  (the tables' letters)
MD_CODES = {"md.inactive", "md.failed", "md.degraded", "md.member_faulty", "md.sync_running",
            "md.sync_waiting", "md.read_only", "md.mdstat_incomplete"}


def mdstat_root(tmp: Path, fixture: str | None = None, text: str | None = None) -> Path:
    """A root holding only proc/mdstat."""
    (tmp / "proc").mkdir(parents=True, exist_ok=True)
    if text is None:
        assert fixture is not None, "a fixture name or the text"
        text = (MDSTAT / fixture).read_text()
    (tmp / "proc" / "mdstat").write_text(text)
    return tmp


def redundancy(level: str, entry: MdstatArray | None) -> Redundancy:
    """The failures the array takes; fails when mdstat shows too little to tell."""
    assert entry is not None, "no such array in mdstat"
    judged = mdstat_redundancy(level, entry)
    assert judged is not None, entry
    return judged


def md_codes(root: Path) -> set:
    report = build_report(HostRoot(str(root)), ["storage"])
    return {(f.code, f.subject, f.level) for f in report.findings if f.code.startswith("md.")}


EXPECTED = {
    # [2/1]: one more failure loses data, rebuilding or not
    "raid1-recovering.mdstat": {("md.degraded", "md0", C), ("md.sync_waiting", "md0", W),
                                ("md.degraded", "md1", C), ("md.sync_running", "md1", W)},
    "raid5-reshape.mdstat": {("md.sync_running", "md0", O)},
    "raid6-one-missing.mdstat": {("md.degraded", "md0", W)},
    "raid6-two-missing.mdstat": {("md.degraded", "md0", C), ("md.member_faulty", "md0", C)},
    "raid6-recovering.mdstat": {("md.degraded", "md0", C), ("md.sync_running", "md0", W)},
    "raid5-failed.mdstat": {("md.failed", "md0", C), ("md.member_faulty", "md0", C)},
    "raid1-faulty-hetzner.mdstat": {(code, name, C) for name in ("md0", "md1", "md3")
                                    for code in ("md.degraded", "md.member_faulty")},
    "raid10-near-far.mdstat": {("md.sync_running", "md3", O), ("md.degraded", "md4", C),
                               ("md.failed", "md5", C), ("md.degraded", "md6", C)},
    "imsm-container.mdstat": set(),
    "ddf-container.mdstat": set(),
    "imsm-volume-inactive.mdstat": {("md.inactive", "md126", C)},
    "inactive-faulty-spare.mdstat": {("md.inactive", "md1", C), ("md.member_faulty", "md1", C)},
    "auto-read-only-pending.mdstat": {("md.read_only", "md126", O), ("md.sync_waiting", "md126", W),
                                      ("md.sync_running", "md127", O)},
    "read-only.mdstat": {("md.read_only", "md0", W)},
    "raid0-linear-failed.mdstat": {("md.failed", "md0", C), ("md.failed", "md9", C)},
    "broken-raid1.mdstat": {("md.failed", "md0", C), ("md.member_faulty", "md0", C)},
    "replace-journal-writemostly.mdstat": {("md.sync_running", "md0", O)},
    "old-kernel-0.90.mdstat": {("md.degraded", "md0", C), ("md.sync_running", "md0", W)},
    "no-arrays.mdstat": set(),
    "truncated.mdstat": {("md.mdstat_incomplete", "md0", U)},
}


def test_every_fixture_has_expectations():
    assert sorted(EXPECTED) == sorted(p.name for p in MDSTAT.glob("*.mdstat"))


@pytest.mark.parametrize("fixture", sorted(EXPECTED))
def test_fixture_findings_and_model(tmp_path, fixture):
    root = mdstat_root(tmp_path, fixture)
    assert md_codes(root) == EXPECTED[fixture]
    section = storage.collect(HostRoot(str(root)))
    parsed = parse_mdstat((MDSTAT / fixture).read_text())
    assert parsed.problems == []
    assert set(section.md) == set(parsed.arrays)
    for name, array in section.md.items():
        # in the model with its source marker, and in the tree (no /sys/block: at its top)
        assert array.source == "mdstat" and array.mdstat == parsed.arrays[name]
        dev = section.devices[name]
        # at the top of the tree, or under its members when they are arrays of this mdstat
        parents = [m for m in dev.slaves if m in section.devices]
        assert dev.family == "md" and (name in section.roots) == (not parents)
        assert all(name in section.devices[p].children for p in parents)
        assert not known(dev.maj_min) and "from /proc/mdstat only" in dev.maj_min.reason
        assert dev.slaves == [m.name for m in parsed.arrays[name].members]
    # no "md0 is in /proc/mdstat but not in /sys/block" noise: /sys/block itself is missing
    assert not any("but not in /sys/block" in p for p in section.problems)


@pytest.mark.parametrize("fixture", sorted(f for f, codes in EXPECTED.items() if codes))
def test_findings_quote_mdstat_and_say_so(tmp_path, fixture):
    report = build_report(HostRoot(str(mdstat_root(tmp_path, fixture))), ["storage"])
    for f in (f for f in report.findings if f.code.startswith("md.")):
        lines = report.section("storage").md[f.subject].mdstat.lines
        quoted = [e[len("/proc/mdstat: "):] for e in f.evidence if e.startswith("/proc/mdstat: ")]
        assert quoted and set(quoted) <= set(lines), f
        assert f.advice, f
        if f.code not in ("md.sync_running", "md.sync_waiting"):
            assert f.evidence[-1] == f"/sys/block/{f.subject}/md: not in this root; judged from /proc/mdstat alone"


def section_of(tmp_path, fixture):
    return storage.collect(HostRoot(str(mdstat_root(tmp_path, fixture))))


def findings_of(tmp_path, fixture, name):
    return {f.code: f for f in md_findings(section_of(tmp_path, fixture).md[name])}


def test_recovery_in_progress(tmp_path):
    md1 = section_of(tmp_path, "raid1-recovering.mdstat").md["md1"]
    assert (md1.level, md1.raid_disks, md1.degraded, md1.sync_action) == ("raid1", 2, 1, "recover")
    assert (md1.progress_percent, md1.speed_kib_s, md1.eta_minutes) == (8.5, 259783, 17.0)
    assert (md1.sync_done_sectors, md1.sync_total_sectors) == (2 * 16775552, 2 * 195310144)
    assert md1.mdstat.bitmap.startswith("2/2 pages")
    found = findings_of(tmp_path, "raid1-recovering.mdstat", "md1")
    assert "1 of 2 devices missing [U_]; no redundancy left, recovery under way" in found["md.degraded"].message
    assert "do not pull another member" in found["md.degraded"].advice
    assert found["md.sync_running"].message == \
        "md array md1: recovery running, 8.5% done, at 253.7 MiB/s, ETA 17.0 min"
    assert any("recovery =  8.5%" in e for e in found["md.sync_running"].evidence)


def test_delayed_recovery_of_a_degraded_array_is_queued_not_missing(tmp_path):
    found = findings_of(tmp_path, "raid1-recovering.mdstat", "md0")
    assert "recovery queued behind another array" in found["md.degraded"].message
    assert found["md.sync_waiting"].message.startswith("md array md0: resync delayed")


def test_raid6_levels_follow_the_redundancy_left(tmp_path):
    one = findings_of(tmp_path / "a", "raid6-one-missing.mdstat", "md0")["md.degraded"]
    assert one.level == W and "it survives 1 more failure, nothing rebuilding" in one.message
    assert "mdadm --detail /dev/md0" in one.advice
    two = findings_of(tmp_path / "b", "raid6-two-missing.mdstat", "md0")
    assert two["md.degraded"].level == C and "no redundancy left" in two["md.degraded"].message
    assert "sde1, sdc1" in two["md.member_faulty"].message


def test_more_missing_than_the_level_survives_is_failed(tmp_path):
    found = findings_of(tmp_path, "raid5-failed.mdstat", "md0")
    assert "has failed: 2 of 3 devices missing [_U_], more than raid5 survives (1)" in found["md.failed"].message
    assert "md.degraded" not in found and "--assemble --force" in found["md.failed"].advice


def test_raid10_layouts_judged_per_chunk(tmp_path):
    section = section_of(tmp_path, "raid10-near-far.mdstat")
    md3, md4, md5, md6 = (section.md[n].mdstat for n in ("md3", "md4", "md5", "md6"))
    assert (md3.far_copies, md3.near_copies, md4.near_copies, md6.far_copies, md6.far_offset) == \
        (2, None, 2, 2, True)
    # near 2 over 4: slots (0,1) and (2,3) mirror each other; [U_U_] keeps one copy of each
    assert redundancy("raid10", md4).left == 0
    assert redundancy("raid10", md5).left < 0          # [__UU]: both copies of a chunk gone
    assert redundancy("raid10", md6).left == 0
    three = parse_mdstat("md0 : active raid10 sdc[2] sdb[1] sda[0]\n"
                         "      1500 blocks super 1.2 512K chunks 2 near-copies [3/3] [UUU]\n").arrays["md0"]
    assert (redundancy("raid10", three).survives, redundancy("raid10", three).left) == (1, 1)
    three.status = "UU_"
    assert redundancy("raid10", three).left == 0


def test_containers_are_inactive_by_design_their_volumes_are_not(tmp_path):
    section = section_of(tmp_path / "a", "imsm-container.mdstat")
    md127, md126 = section.md["md127"], section.md["md126"]
    assert (md127.level, md127.array_state, md127.metadata_version) == ("container", "inactive", "external:imsm")
    assert is_container(md127.mdstat) and not is_container(md126.mdstat)
    assert (md126.level, md126.degraded, md126.metadata_version) == ("raid1", 0, "external:/md127/0")
    assert section.devices["md127"].type == "container"
    assert not known(section.devices["md127"].size_bytes)   # its "blocks" are metadata only
    assert section.devices["md126"].size_bytes == 976758784 * 1024
    ddf = section_of(tmp_path / "b", "ddf-container.mdstat").md["md127"]
    assert ddf.level == "container"
    found = findings_of(tmp_path / "c", "imsm-volume-inactive.mdstat", "md126")
    assert "volume of container md127" in found["md.inactive"].message


def test_inactive_with_faulty_and_spare_members(tmp_path):
    md1 = section_of(tmp_path, "inactive-faulty-spare.mdstat").md["md1"]
    assert md1.array_state == "inactive" and not known(md1.level) and not known(md1.degraded)
    assert [(m.name, m.state) for m in md1.members] == [("sdc1", ["faulty"]), ("sdb1", ["spare"]),
                                                         ("sda1", ["spare"])]
    found = findings_of(tmp_path, "inactive-faulty-spare.mdstat", "md1")
    assert "faulty member(s) sdc1" in found["md.inactive"].message
    assert "mdadm --assemble --scan" in found["md.inactive"].advice


def test_read_only_and_auto_read_only(tmp_path):
    ro = section_of(tmp_path / "a", "read-only.mdstat")
    assert ro.md["md0"].array_state == "readonly" and ro.devices["md0"].read_only is True
    assert "mdadm --readwrite /dev/md0" in findings_of(tmp_path / "a", "read-only.mdstat", "md0")["md.read_only"].advice
    auto = section_of(tmp_path / "b", "auto-read-only-pending.mdstat")
    assert auto.md["md126"].array_state == "read-auto" and auto.devices["md126"].read_only is False
    assert auto.md["md126"].mdstat.progress.state == "pending"
    check = findings_of(tmp_path / "b", "auto-read-only-pending.mdstat", "md127")["md.sync_running"]
    assert check.message.startswith("md array md127: check running, 7.1% done") and "mismatch_cnt" in check.advice


def test_raid0_linear_and_broken(tmp_path):
    section = section_of(tmp_path / "a", "raid0-linear-failed.mdstat")
    md0, md1, md9 = section.md["md0"], section.md["md1"], section.md["md9"]
    assert (md0.degraded, md0.sync_action, md0.raid_disks, md0.chunk_size_bytes) == (None, None, 2, 512 * 1024)
    assert [(m.name, m.state) for m in md0.members] == [("sdc", ["faulty"]), ("sdb", ["in_sync"])]
    assert md1.level == "linear" and md_findings(md1) == []
    assert md9.mdstat.broken and md9.array_state == "broken"
    broken = findings_of(tmp_path / "b", "broken-raid1.mdstat", "md0")["md.failed"]
    assert broken.message == "md array md0 (raid1) is broken: member(s) dm-1 failed, so its IO fails"


def test_sysfs_array_state_broken_is_failed():
    from inspector.discover.md import MdArray, MdMember
    array = MdArray(name="md9", level="raid0", array_state="broken", raid_disks=2, degraded=None,
                    sync_action=None, sync_completed=None,
                    members=[MdMember("sdq1", ["faulty"], None, 0), MdMember("sdp1", ["in_sync"], 0, 0)])
    found = md_findings(array)
    # raid0 has no redundancy: md.failed names the member, no separate "replace it" finding
    assert [(f.code, f.level) for f in found] == [("md.failed", C)]
    assert "member(s) sdq1 failed" in found[0].message
    assert "/sys/block/md9/md/array_state: broken" in found[0].evidence


def test_member_flags_replacement_journal_write_mostly(tmp_path):
    section = section_of(tmp_path, "replace-journal-writemostly.mdstat")
    states = {m.name: m.state for a in section.md.values() for m in a.members}
    assert states["sdk1"] == ["replacement"] and states["sdf1"] == ["spare"]
    assert states["md126"] == ["journal"] and states["sdd"] == ["in_sync", "write_mostly"]
    assert section.md["md127"].raid_disks == 6 and section.md["md127"].degraded == 0
    # a replacement's recovery on a whole array is information
    assert findings_of(tmp_path, "replace-journal-writemostly.mdstat", "md0")["md.sync_running"].level == O
    # md0 is a member of md1 here: the tree draws md1 under md0
    assert section.devices["md0"].children == ["md1"] and "md1" not in section.roots


def test_old_kernel_layout(tmp_path):
    md0 = section_of(tmp_path, "old-kernel-0.90.mdstat").md["md0"]
    assert (md0.metadata_version, md0.degraded, md0.progress_percent) == ("0.90", 1, 0.4)


def test_truncated_mdstat_is_unknown_not_healthy(tmp_path):
    found = findings_of(tmp_path, "truncated.mdstat", "md0")["md.mdstat_incomplete"]
    assert "whether it is degraded is unknown" in found.message


# ----------------------------------------------------------------------------- mixed roots
def copy_root(tmp_path: Path, name: str) -> Path:
    target = tmp_path / name
    shutil.copytree(fixture_root(name), target, symlinks=True)
    return target


def test_sysfs_arrays_keep_the_cross_check_and_an_extra_mdstat_array_joins_the_tree(tmp_path):
    root = copy_root(tmp_path, "storage-raid1-recovering")
    (root / "sys/block/md1").unlink()       # md1 now only in /proc/mdstat
    shutil.rmtree(root / "sys/devices/virtual/block/md1")
    section = storage.collect(HostRoot(str(root)))
    assert (section.md["md0"].source, section.md["md0"].disagreements) == ("sysfs", [])
    assert section.md["md0"].mdstat is not None
    assert section.md["md1"].source == "mdstat"
    assert "md1 is in /proc/mdstat but not in /sys/block: judged from /proc/mdstat alone" in section.problems
    # drawn under its members, as lsblk would
    assert "md1" in section.devices["sda1"].children and "md1" in section.devices["sdb1"].holders
    assert "md1" not in section.roots
    codes = md_codes(root)
    assert ("md.degraded", "md0", C) in codes          # sysfs rules, unchanged
    assert ("md.degraded", "md1", C) in codes and ("md.sync_running", "md1", W) in codes


def test_block_device_without_md_directory_is_judged_from_mdstat(tmp_path):
    root = copy_root(tmp_path, "storage-raid1-recovering")
    shutil.rmtree(root / "sys/devices/virtual/block/md1/md")
    section = storage.collect(HostRoot(str(root)))
    md1 = section.md["md1"]
    assert md1.source == "mdstat" and md1.degraded == 1 and md1.progress_percent == 8.5
    dev = section.devices["md1"]
    assert known(dev.sysfs_path) and dev.type == "raid1"   # the sysfs device record stays
    assert not any(p.startswith("md1 is in /proc/mdstat") for p in section.problems)


def test_mounts_and_swap_of_an_mdstat_only_array(tmp_path):
    root = mdstat_root(tmp_path, "raid6-one-missing.mdstat")
    (root / "proc/self").mkdir(parents=True)
    (root / "proc/self/mountinfo").write_text(
        "29 1 9:0 / /srv rw,relatime shared:1 - xfs /dev/md0 rw,attr2,inode64\n")
    (root / "proc/swaps").write_text("Filename Type Size Used Priority\n")
    dev = storage.collect(HostRoot(str(root))).devices["md0"]
    assert [(m.mountpoint, m.fstype) for m in dev.mounts] == [("/srv", "xfs")]


# ----------------------------------------------------------------------------- end to end
def test_report_text_json_schema_check_and_diff(tmp_path):
    root = mdstat_root(tmp_path / "one", "raid6-one-missing.mdstat")
    text = run_cli("report", "--root", str(root), "--section", "storage")
    assert text.status == 0, text.err
    assert "md0 raid6 active DEGRADED  disks 4 [U_UU]" in text.out
    assert "from /proc/mdstat only" in text.out and "is degraded: 1 of 4 devices" in text.out

    result = run_cli("report", "--json", "--root", str(root))
    assert result.status == 0, result.err
    doc = result.json()
    jsonschema.Draft202012Validator(report_schema()).validate(doc)
    md0 = doc["sections"]["storage"]["md"]["md0"]
    assert (md0["source"], md0["level"], md0["degraded"], md0["mdstat"]["status"]) == ("mdstat", "raid6", 1, "U_UU")
    assert doc["sections"]["storage"]["devices"]["md0"]["type"] == "raid6"
    assert {(f["code"], f["level"]) for f in doc["findings"] if f["subject"] == "md0"} == {("md.degraded", "warn")}

    assert run_cli("check", "--root", str(root)).status == 1
    worse = mdstat_root(tmp_path / "two", "raid6-two-missing.mdstat")
    assert run_cli("check", "--root", str(worse)).status == 2

    before, after = tmp_path / "before.json", tmp_path / "after.json"
    assert run_cli("snapshot", "--root", str(root), "-o", str(before)).status == 0
    assert run_cli("snapshot", "--root", str(worse), "-o", str(after)).status == 0
    diff = run_cli("diff", "--json", str(before), str(after))
    assert diff.status == 1, diff.err
    changes = json.loads(diff.out)["changes"]
    assert any(c["regression"] and "md.degraded@md0" in c["path"] for c in changes)
    assert any(c["path"].startswith("storage.md[name=md0]") for c in changes)


# ----------------------------------------------------------------------------- properties
FIXTURE_TEXTS = [p.read_text() for p in sorted(MDSTAT.glob("*.mdstat"))]


def check_consistent(text: str) -> None:
    """Whatever the text: no exception, and the verdicts agree with the parsed facts."""
    parsed = parse_mdstat(text)
    for name, entry in parsed.arrays.items():
        array = array_from_mdstat(entry)
        assert array.source == "mdstat" and array.name == name
        found = md_findings(array)
        codes = {f.code for f in found}
        assert codes <= MD_CODES and all(f.subject == name and f.evidence and f.advice for f in found)
        assert not {"md.failed", "md.degraded"} <= codes
        if is_container(entry):
            assert found == []
            continue
        if not entry.active:
            assert "md.inactive" in codes
        missing = missing_slots(entry)
        if known(array.degraded):
            assert array.degraded == missing
        healthy = (entry.active and not entry.broken and entry.level is not None and missing == 0 and entry.progress is None
                   and entry.read_only is None and not any("faulty" in m.flags for m in entry.members))
        if healthy:
            assert found == [], found
        for f in found:
            if f.code == "md.degraded" and f.level == Level.CRIT:
                assert ("no redundancy left" in f.message or
                        "how many more failures it survives is unknown" in f.message)
            if f.code == "md.degraded" and f.level == Level.WARN:
                assert "more failure" in f.message


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text())
def test_arbitrary_text_is_judged_without_raising(text):
    check_consistent(text)


@st.composite
def mutated_fixtures(draw):
    """A real mdstat with lines dropped, duplicated, cut or corrupted, digits and flags changed."""
    lines = draw(st.sampled_from(FIXTURE_TEXTS)).splitlines()
    rng = random.Random(draw(st.integers(0, 2 ** 32)))
    for _ in range(draw(st.integers(1, 6))):
        if not lines:
            break
        i = rng.randrange(len(lines))
        op = rng.choice(["drop", "dup", "cut", "digit", "flag", "status", "word", "junk"])
        line = lines[i]
        if op == "drop":
            del lines[i]
        elif op == "dup":
            lines.insert(i, line)
        elif op == "cut":
            lines[i] = line[:rng.randrange(len(line) + 1)]
        elif op == "digit":
            lines[i] = "".join(rng.choice("0123456789") if c.isdigit() and rng.random() < 0.3 else c
                               for c in line)
        elif op == "flag":
            lines[i] = line.replace("]", rng.choice(["](F)", "](S)", "](W)(F)", "](R)", "](J)", "](Z)"]), 1)
        elif op == "status":
            lines[i] = line.replace("U", "_", 1) if "U" in line else line.replace("_", "U", 1)
        elif op == "word":
            for a, b in (("active", "inactive"), ("inactive", "active"), ("active", "broken"),
                         ("raid6", "raid0"), ("raid1", "raid10"), ("recovery", "resync"),
                         ("near", "far"), ("external:imsm", "external:/md127/0")):
                if a in line and rng.random() < 0.5:
                    lines[i] = line.replace(a, b, 1)
                    break
        else:
            lines.insert(i, draw(st.text(alphabet="md0123456789 :[]()/=%.>KUFS_abcdeikrstvy\t", max_size=40)))
    return "\n".join(lines) + "\n"


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated_fixtures())
def test_mutated_real_mdstat_is_judged_consistently(text):
    check_consistent(text)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated_fixtures())
def test_mutated_mdstat_root_collects_and_renders(text):
    with tempfile.TemporaryDirectory() as tmp:
        root = mdstat_root(Path(tmp), text=text)
        section = storage.collect(HostRoot(str(root)))
        parsed = parse_mdstat(text)
        assert set(section.md) == set(parsed.arrays)
        assert all(section.md[n].source == "mdstat" and n in section.devices for n in parsed.arrays)
        rows = [name for _, name in section.walk()]
        assert set(parsed.arrays) <= set(rows)
        out = io.StringIO()
        Console(file=out, width=80).print(render(section))
        assert all(name in out.getvalue() for name in parsed.arrays)
