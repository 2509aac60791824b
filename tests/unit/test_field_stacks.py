"""Stacks a sosreport only half copied (issue 27, class 3): dm-N kept without slaves/, the stack
described by the lower devices' holders/, `dmsetup ls --tree`, `dmsetup table` and `lsblk`.
Fixture: tests/fixtures/field/sos-hotsos-compute4 (a real sos 4.2 sosreport: bcache on vdb2 and
vdc/vdd, dm-crypt on the bcaches, an LVM volume on one crypt), its sys/ placed by field_roots."""
from __future__ import annotations

import shutil
import sys
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import FIXTURES, run_cli
from inspector.captures.sosreport import open_sosreport
from inspector.discover import storage
from inspector.discover.dmsetup_text import (
    dmsetup_table_lower,
    dmsetup_tree_edges,
    lsblk_edges,
    parse_info_columns,
    parse_lsblk_rows,
)

sys.path.insert(0, str(FIXTURES))
import field_roots  # noqa: E402  (the fixture placer, importable from tests/fixtures)

COMPUTE4 = FIXTURES / "field" / "sos-hotsos-compute4"


def compute4(tmp_path: Path, drop: tuple[str, ...] = ()) -> Path:
    root = tmp_path / "sosreport-compute4"
    shutil.copytree(COMPUTE4, root)
    field_roots.compute4_sys(field_roots.root(root))
    for rel in drop:
        path = root / rel
        shutil.rmtree(path) if path.is_dir() else path.unlink()
    return root


def section_of(root: Path) -> storage.StorageSection:
    return storage.collect(open_sosreport(str(root)))


def lsblk_says(root: Path) -> set[tuple[str, str]]:
    """(device, device it is built on) as the sosreport's lsblk draws it, in kernel names:
    dm names through dmsetup info -c, partitions left out (they are not stacked)."""
    sos = root / "sos_commands"
    names = {e.name: k for k, e in parse_info_columns((sos / "devicemapper/dmsetup_info_-c").read_text()).items()}
    edges = set()
    for upper, lower in lsblk_edges((sos / "block/lsblk").read_text()):
        assert upper.name and lower.name, (upper, lower)      # every row of the tree is named
        up, low = names.get(upper.name, upper.name), names.get(lower.name, lower.name)
        if not (up.startswith(low) and up[len(low):].isdigit()):
            edges.add((up, low))
    return edges


def section_edges(section: storage.StorageSection) -> set[tuple[str, str]]:
    return {(name, slave) for name, dev in section.devices.items() for slave in dev.slaves}


def test_bcache_crypt_lvm_stack_agrees_with_lsblk(tmp_path):
    root = compute4(tmp_path)
    section = section_of(root)
    assert section_edges(section) == lsblk_says(root) == {
        ("bcache0", "vdb2"), ("bcache0", "vdd"), ("bcache1", "vdb2"), ("bcache1", "vdc"),
        ("dm-2", "bcache0"), ("dm-0", "bcache1"), ("dm-1", "dm-0")}
    assert section.devices["bcache0"].slaves_source is None        # sysfs slaves/ was kept
    assert section.devices["dm-2"].slaves_source == "holders/ of the lower devices, dmsetup ls --tree, lsblk"
    # dm-1's name is cut short in dmsetup ls --tree ("...") and has no number there: its
    # dmsetup info -c name completes it
    assert section.devices["dm-1"].slaves_source == "dmsetup ls --tree, lsblk"
    # numbers, sizes and names as the sosreport's own outputs say
    assert {n: section.devices[n].maj_min for n in ("dm-0", "dm-1", "dm-2", "bcache1")} == \
        {"dm-0": "253:0", "dm-1": "253:1", "dm-2": "253:2", "bcache1": "251:128"}
    assert section.devices["dm-1"].size_bytes == 107353210880      # blockdev --report
    assert (section.dm["dm-1"].kind, section.dm["dm-0"].kind, section.dm["dm-0"].detail) == \
        ("lvm", "crypt", "LUKS2")
    assert not any("disagree" in p for p in section.problems)


def test_each_source_alone_still_gives_the_stack(tmp_path):
    only_lsblk = section_of(compute4(tmp_path / "a", drop=(
        "sos_commands/devicemapper/dmsetup_ls_--tree",
        "sys/devices/virtual/block/bcache0/holders", "sys/devices/virtual/block/bcache1/holders")))
    assert {n: d.slaves_source for n, d in only_lsblk.devices.items() if d.slaves_source} == \
        {"dm-0": "lsblk", "dm-1": "lsblk", "dm-2": "lsblk"}
    only_tree = section_of(compute4(tmp_path / "b", drop=("sos_commands/block/lsblk",)))
    assert only_tree.devices["dm-1"].slaves == ["dm-0"]
    assert only_tree.devices["dm-1"].slaves_source == "dmsetup ls --tree"


def test_nothing_that_describes_the_stack_leaves_it_unknown_not_guessed(tmp_path):
    section = section_of(compute4(tmp_path, drop=(
        "sos_commands/devicemapper/dmsetup_ls_--tree", "sos_commands/block/lsblk",
        "sys/devices/virtual/block/bcache0/holders", "sys/devices/virtual/block/bcache1/holders")))
    assert section.devices["dm-1"].slaves == [] and section.devices["dm-1"].slaves_source is None
    assert "dm-1" in section.roots


def test_sources_that_disagree_keep_both_and_say_so(tmp_path):
    root = compute4(tmp_path)
    tree = root / "sos_commands/devicemapper/dmsetup_ls_--tree"
    tree.write_text(tree.read_text().replace(" `- (251:0)", " `- (251:128)"))
    section = section_of(root)
    assert section.devices["dm-2"].slaves == ["bcache0", "bcache1"]
    problem = next(p for p in section.problems if p.startswith("dm-2:"))
    assert "dmsetup ls --tree: bcache1" in problem and "lsblk: bcache0" in problem


def test_lvm_on_md_from_dmsetup_table(tmp_path):
    r = field_roots.root(tmp_path / "sosreport-md")
    for name in ("md0", "dm-0"):
        r.link(f"sys/block/{name}", f"sys/devices/virtual/block/{name}")
        field_roots._queue(r, f"sys/devices/virtual/block/{name}")
    r.write("sys/devices/virtual/block/md0/dev", "9:0")
    root = Path(r.path)
    (root / "version.txt").write_text("sosreport: 3.9\n")
    (root / "sos_commands/devicemapper").mkdir(parents=True)
    (root / "sos_commands/devicemapper/dmsetup_table").write_text("vg0-data: 0 2097152 linear 9:0 2048\n")
    (root / "sos_commands/devicemapper/dmsetup_info_-c").write_text(
        "Name             Maj Min Stat Open Targ Event  UUID\n"
        "vg0-data         253   0 L--w    1    1      0 LVM-abcdef\n")
    section = section_of(root)
    assert (section.devices["dm-0"].slaves, section.devices["dm-0"].slaves_source) == (["md0"], "dmsetup table")
    assert section.devices["md0"].holders == ["dm-0"]
    text = run_cli("report", "--root", str(root), "--section", "storage").out
    assert "on md0 (from dmsetup table)" in text


# ----------------------------------------------------------------------------- parsers
@settings(max_examples=150, deadline=None)
@given(st.lists(st.sampled_from(["crypt-1 (253:2)", " `- (251:0)", "ceph--a--b...", "   `-x (9:0)",
                                 "NAME MAJ:MIN RM SIZE RO TYPE MOUNTPOINT", "sda 8:0 0 1G 0 disk",
                                 "`-sda1 8:1 0 1G 0 part /", "  |-md0 9:0 0 1G 0 raid1",
                                 "v: 0 8 linear 9:0 2048", "No devices found"])
                | st.text(alphabet=" `|-├└─│()0123456789:abcdmp.", max_size=40), max_size=20))
def test_parsers_take_any_line_mix(lines):
    text = "\n".join(lines)
    dmsetup_tree_edges(text)
    lsblk_edges(text)
    parse_lsblk_rows(text)
    dmsetup_table_lower(text)
