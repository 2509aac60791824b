"""/proc/mdstat parser: real layouts, and property tests (arbitrary, truncated, generated input)."""
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from inspector.discover.md import (
    Mdstat,
    MdstatArray,
    MdstatProgress,
    parse_mdstat,
    parse_sync_completed,
)

RECOVERING = """Personalities : [raid1] [linear] [multipath] [raid0] [raid6] [raid5] [raid4] [raid10]
md0 : active raid1 sdb2[2] sda2[0]
      1046528 blocks super 1.0 [2/1] [U_]
      \tresync=DELAYED
      
md1 : active raid1 sdb1[2] sda1[0]
      195310144 blocks super 1.2 [2/1] [U_]
      [=>...................]  recovery =  8.5% (16775552/195310144) finish=17.0min speed=259783K/sec
      bitmap: 2/2 pages [8KB], 65536KB chunk

unused devices: <none>
"""  # noqa: W293, E101  (mdstat as the kernel prints it: blank lines of spaces, a tab)

VARIETY = """Personalities : [raid0] [raid1] [raid10] [raid6] [raid5] [raid4]
md127 : active (auto-read-only) raid1 sdc1[1] sdd1[0](F) sde1[2](S) sdf1[3](W)
      976630336 blocks super 1.2 [2/1] [U_]
      
md2 : inactive sdg[0](S)
      976762584 blocks super external:/md127/0
       
md3 : active raid10 sdh[3] sdi[2] sdj[1] sdk[0]
      1953260544 blocks super 1.2 512K chunks 2 near-copies [4/4] [UUUU]
      [==>..................]  resync = 12.0% (234391296/1953260544) finish=140.2min speed=204317K/sec
      
md4 : active raid5 sdl[0] sdm[1] sdn[3]
      1953260544 blocks super 1.2 level 5, 512k chunk, algorithm 2 [3/3] [UUU]
      [>....................]  reshape =  0.4% (4194304/976630272) finish=1043.2min speed=15534K/sec

md5 : active raid0 fiob[1] fioa[0]
      2353515008 blocks super 1.2 512k chunks

md6 : active raid1 sdo[1] sdp[0]
      976630336 blocks [2/2] [UU]
      	resync=PENDING

unused devices: <none>
"""  # noqa: W293, E101  (mdstat as the kernel prints it: blank lines of spaces, a tab)


def progress(array: MdstatArray) -> MdstatProgress:
    assert array.progress is not None, f"{array.name} has no resync/recovery line"
    return array.progress


def test_recovering_array():
    result = parse_mdstat(RECOVERING)
    assert result.problems == []
    assert result.personalities[:2] == ["raid1", "linear"]
    md1 = result.arrays["md1"]
    assert md1.active and md1.level == "raid1"
    assert [(m.name, m.number, m.flags) for m in md1.members] == [("sdb1", 2, []), ("sda1", 0, [])]
    assert (md1.blocks_kib, md1.metadata, md1.raid_disks, md1.active_disks, md1.status) == \
        (195310144, "1.2", 2, 1, "U_")
    p = progress(md1)
    assert (p.action, p.state, p.percent, p.done_kib, p.total_kib, p.finish_minutes, p.speed_kib_s) == \
        ("recovery", "running", 8.5, 16775552, 195310144, 17.0, 259783)
    assert md1.bitmap is not None and md1.bitmap.startswith("2/2 pages")
    md0 = progress(result.arrays["md0"])
    assert (md0.action, md0.state, md0.percent) == ("resync", "delayed", None)
    assert result.arrays["md0"].metadata == "1.0"
    assert md1.lines[0] == "md1 : active raid1 sdb1[2] sda1[0]"


def test_flags_states_levels_and_layouts():
    result = parse_mdstat(VARIETY)
    assert result.problems == []
    a = result.arrays
    assert a["md127"].read_only == "auto-read-only"
    assert {m.name: m.flags for m in a["md127"].members} == {
        "sdc1": [], "sdd1": ["faulty"], "sde1": ["spare"], "sdf1": ["write_mostly"]}
    assert not a["md2"].active and a["md2"].level is None
    assert a["md2"].members[0].flags == ["spare"] and a["md2"].metadata == "external:/md127/0"
    assert a["md3"].chunk_kib == 512 and progress(a["md3"]).action == "resync"
    assert a["md4"].chunk_kib == 512 and progress(a["md4"]).action == "reshape"
    assert progress(a["md4"]).speed_kib_s == 15534
    assert a["md5"].level == "raid0" and a["md5"].raid_disks is None
    assert a["md6"].metadata is None and progress(a["md6"]).state == "pending"


def test_broken_arrays_raid10_layouts_and_old_kernel_lines():
    result = parse_mdstat(
        "Personalities : [raid1] [raid10]\nread_ahead 1024 sectors\nEvent: 8\n"
        "md0 : broken raid1 dm-1[1](F) dm-0[0]\n      1047552 blocks super 1.2 [2/1] [U_]\n"
        "md1 : active raid10 sdb[1] sda[0]\n"
        "      312438784 blocks super 1.2 512K chunks 2 far-copies [2/2] [UU]\n"
        "md2 : active raid10 sdd[1] sdc[0]\n"
        "      312438784 blocks super 1.2 512K chunks 2 offset-copies [2/2] [UU]\n"
        "md3 : active raid10 sdf[3] sde[2] sdh[1] sdg[0]\n"
        "      312438784 blocks super 1.2 512K chunks 2 near-copies [4/4] [UUUU]\n")
    assert result.problems == []
    a = result.arrays
    assert a["md0"].active and a["md0"].broken and a["md0"].level == "raid1"
    assert not a["md1"].broken
    assert (a["md1"].near_copies, a["md1"].far_copies, a["md1"].far_offset) == (None, 2, False)
    assert (a["md2"].far_copies, a["md2"].far_offset) == (2, True)
    assert (a["md3"].near_copies, a["md3"].far_copies) == (2, None)


def test_garbage_lines_are_named_not_raised():
    result = parse_mdstat("Personalities : [raid1]\nthis is not mdstat\n   orphan detail\n"
                          "md0 : active raid1 sda[0] ??? \n      what is this\n")
    assert "md0" in result.arrays
    assert len(result.problems) == 4
    assert any("unrecognised member" in p for p in result.problems)
    assert any("outside an array" in p for p in result.problems)


def test_sync_completed():
    assert parse_sync_completed("33551104 / 390620288") == (33551104, 390620288)
    assert parse_sync_completed("none") is None
    assert parse_sync_completed("delayed") is None
    assert parse_sync_completed("1 / x") is None


# ----------------------------------------------------------------------------- properties
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text())
def test_arbitrary_text_never_raises(text):
    result = parse_mdstat(text)
    assert isinstance(result, Mdstat)
    for array in result.arrays.values():
        assert isinstance(array, MdstatArray)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.sampled_from(RECOVERING.splitlines() + VARIETY.splitlines()) |
                st.text(alphabet="md0123456789 :[]()/=%.>KUFS_abcdeikrstvy\t", max_size=60), max_size=30))
def test_shuffled_mdstat_lines_never_raise(lines):
    result = parse_mdstat("\n".join(lines))
    assert isinstance(result, Mdstat)


@settings(max_examples=100, deadline=None)
@given(st.integers(min_value=0, max_value=len(VARIETY)))
def test_truncated_input_gives_a_prefix_of_the_full_result(cut):
    full = parse_mdstat(VARIETY)
    part = parse_mdstat(VARIETY[:cut])
    # Every array seen in the truncated text is one of the real ones, with a prefix of its members.
    for name, array in part.arrays.items():
        assert name in full.arrays
        whole = full.arrays[name]
        assert array.active == whole.active
        assert [m.name for m in array.members] == [m.name for m in whole.members][:len(array.members)]


member_names = st.builds(lambda prefix, suffix: prefix + suffix,
                         st.sampled_from(["sd", "nvme0n1p", "fio", "hio", "xvd", "vd"]),
                         st.text(alphabet="abcdefghij0123456789", min_size=1, max_size=3))


@st.composite
def mdstat_arrays(draw):
    n = draw(st.integers(min_value=1, max_value=6))
    names = draw(st.lists(member_names, min_size=n, max_size=n, unique=True))
    flags = draw(st.lists(st.sampled_from(["", "(F)", "(S)", "(W)"]), min_size=n, max_size=n))
    raid_disks = draw(st.integers(min_value=1, max_value=n))
    active = draw(st.integers(min_value=0, max_value=raid_disks))
    blocks = draw(st.integers(min_value=1, max_value=10 ** 12))
    pct = draw(st.integers(min_value=0, max_value=999)) / 10
    speed = draw(st.integers(min_value=1, max_value=10 ** 7))
    action = draw(st.sampled_from(["recovery", "resync", "check", "repair", "reshape", None]))
    return names, flags, raid_disks, active, blocks, pct, speed, action


@settings(max_examples=80, deadline=None)
@given(st.lists(mdstat_arrays(), min_size=1, max_size=4))
def test_generated_mdstat_round_trips(arrays):
    text = "Personalities : [raid1] [raid5]\n"
    for i, (names, flags, raid_disks, active, blocks, pct, speed, action) in enumerate(arrays):
        members = " ".join(f"{n}[{k}]{f}" for k, (n, f) in enumerate(zip(names, flags)))
        status = "U" * active + "_" * (raid_disks - active)
        text += f"md{i} : active raid1 {members}\n      {blocks} blocks super 1.2 [{raid_disks}/{active}] [{status}]\n"
        if action:
            text += (f"      [=>...]  {action} = {pct}% (1/{blocks}) finish=1.5min speed={speed}K/sec\n")
        text += "\n"
    result = parse_mdstat(text + "unused devices: <none>\n")
    assert result.problems == []
    for i, (names, flags, raid_disks, active, blocks, pct, speed, action) in enumerate(arrays):
        array = result.arrays[f"md{i}"]
        assert [m.name for m in array.members] == names
        assert [bool(m.flags) for m in array.members] == [bool(f) for f in flags]
        assert (array.raid_disks, array.active_disks, array.blocks_kib) == (raid_disks, active, blocks)
        if action:
            p = progress(array)
            assert (p.action, p.percent, p.speed_kib_s) == (action, pct, speed)
        else:
            assert array.progress is None


def test_numbers_too_long_for_int_are_a_problem_not_a_crash():
    huge = "9" * 5000
    result = parse_mdstat(f"md0 : active raid1 sda[0]\n      {huge} blocks super 1.2 [2/2] [UU]\n"
                          f"md1 : active raid1 sdb[{huge}]\n")
    assert "md0" in result.arrays and any("unparsable number" in p for p in result.problems)
