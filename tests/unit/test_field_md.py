"""md cases from the field (issue 27, classes 6 and 7): /proc/mdstat pasted without its
indentation, and an auto-read-only array whose resync waits (resync=PENDING). Fixtures:
tests/fixtures/field/mdstat-*/ (each names its source in SOURCE.md), and every real layout of
tests/fixtures/mdstat/ re-indented the ways a paste mangles it."""
from __future__ import annotations

from pathlib import Path

import pytest

from conftest import FIXTURES
from inspector.collect import build_report
from inspector.discover.md import parse_mdstat
from inspector.host import HostRoot
from inspector.model import Level

FIELD = FIXTURES / "field"
MDSTAT = FIXTURES / "mdstat"
REAL_LAYOUTS = sorted(MDSTAT.glob("*.mdstat"))


def md_findings(root: Path) -> dict[tuple[str, str], object]:
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
