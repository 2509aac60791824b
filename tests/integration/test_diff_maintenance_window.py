"""A maintenance window as a user runs it: snapshot before, the host changes (an md member
fails, a disk disappears, flash wear rises, a NIC's MTU changes), snapshot after, `inspector diff`
names each regression with its full identity, fits 80 columns, and exits 1."""
import shutil
from pathlib import Path

import pytest

from conftest import fixture_root, run_cli


def _snapshot(root: Path, out: Path) -> Path:
    res = run_cli("snapshot", "--root", str(root), "-o", str(out))
    assert res.status == 0, res.err
    return out


def _degrade_md0(root: Path) -> None:
    md = root / "sys/block/md0/md"
    (md / "degraded").write_text("1\n")
    (md / "dev-sdc/state").write_text("faulty\n")
    mdstat = (root / "proc/mdstat").read_text()
    mdstat = mdstat.replace("sdc[1] sdb[0]", "sdc[1](F) sdb[0]")
    mdstat = mdstat.replace("3906887168 blocks super 1.2 [2/2] [UU]", "3906887168 blocks super 1.2 [2/1] [U_]")
    (root / "proc/mdstat").write_text(mdstat)


@pytest.fixture(scope="module")
def window(tmp_path_factory):
    """(before, after) snapshot pairs for an md host and a flash host, changed in between."""
    tmp = tmp_path_factory.mktemp("window")
    md_root = tmp / "md-root"
    shutil.copytree(fixture_root("storage-md-check"), md_root, symlinks=True)
    md_before = _snapshot(md_root, tmp / "md-before.json")
    _degrade_md0(md_root)
    (md_root / "sys/block/sda").unlink()                    # a disk disappears
    md_after = _snapshot(md_root, tmp / "md-after.json")

    flash_root = tmp / "flash-root"
    shutil.copytree(fixture_root("flash-mixed"), flash_root, symlinks=True)
    flash_before = _snapshot(flash_root, tmp / "flash-before.json")
    sidecar = flash_root / "inspector-sidecar.json"
    text = sidecar.read_text()
    assert "Max bad block rate: 0.135%" in text and "Reserves: 8.00%" in text
    sidecar.write_text(text.replace("Max bad block rate: 0.135%", "Max bad block rate: 0.31%")
                       .replace("Reserves: 8.00%", "Reserves: 4.00%"))
    flash_after = _snapshot(flash_root, tmp / "flash-after.json")

    nic_root = tmp / "nic-root"
    shutil.copytree(fixture_root("xen-pv-guest"), nic_root, symlinks=True)
    nic_before = _snapshot(nic_root, tmp / "nic-before.json")
    (nic_root / "sys/devices/vif-0/net/eth0/mtu").write_text("9000\n")
    nic_after = _snapshot(nic_root, tmp / "nic-after.json")
    return {"md": (md_before, md_after), "flash": (flash_before, flash_after),
            "nic": (nic_before, nic_after)}


def _diff(pair, monkeypatch, columns: int):
    monkeypatch.setenv("COLUMNS", str(columns))
    return run_cli("diff", str(pair[0]), str(pair[1]))


def test_json_names_each_regression_with_its_identity(window):
    res = run_cli("diff", *map(str, window["md"]), "--json")
    assert res.status == 1
    regressions = {c["path"] for c in res.json()["changes"] if c["regression"]}
    assert "storage.devices[name=sda]" in regressions                 # disk gone
    assert "storage.md[name=md0].degraded" in regressions              # md member failed
    assert "md.degraded@md0" in regressions                            # and the finding for it
    res = run_cli("diff", *map(str, window["flash"]), "--json")
    assert res.status == 1
    regressed = {c["path"]: c for c in res.json()["changes"] if c["regression"]}
    wear = regressed["storage.health[device=hioa].max_bad_block_rate_pct"]
    assert (wear["before"], wear["after"]) == (0.135, 0.31)
    assert regressed["storage.health[device=fioa].reserves_pct"]["after"] == 4.0


@pytest.mark.parametrize("columns", [80, 200])
def test_human_diff_fits_the_terminal_and_keeps_paths(window, monkeypatch, columns):
    for name, expected in [
        ("md", ["storage.devices[name=sda]", "storage.md[name=md0].degraded",
                "finding md.degraded@md0"]),
        ("flash", ["storage.health[device=hioa].max_bad_block_rate_pct",
                   "storage.health[device=fioa].reserves_pct"]),
        ("nic", ["net.nics[name=eth0].mtu"]),
    ]:
        res = _diff(window[name], monkeypatch, columns)
        assert res.status == (0 if name == "nic" else 1), res.out
        lines = res.out.splitlines()
        too_long = [line for line in lines if len(line) > columns]
        assert not too_long, too_long
        for path in expected:                      # the whole path on one line, never cut
            assert any(path in line for line in lines), (path, res.out)
        assert "{" not in res.out and "[{" not in res.out       # no raw JSON in cells
    flash = _diff(window["flash"], monkeypatch, columns).out
    assert "0.135% -> 0.31%" in flash and "8% -> 4%" in flash
    nic = _diff(window["nic"], monkeypatch, columns).out
    assert "1500 -> 9000" in nic
    md = _diff(window["md"], monkeypatch, columns).out
    assert "447.1 GiB" in md          # removed disk summarised with units, not 480103981056
    if columns == 200:                # wide: one line per change, value beside the path
        assert any(line.startswith("REGRESSION storage.md[name=md0].degraded  0 -> 1")
                   for line in md.splitlines()), md


def test_values_are_formatted_for_people():
    from inspector.render.diff import format_value
    assert format_value(0.30000000000000004) == "0.3"
    assert format_value(12345.678901234567) == "12345.7"
    assert format_value(1071644672, "size_bytes") == "1022.0 MiB"
    assert format_value(["10.0.0.1", "10.0.0.2"]) == "10.0.0.1, 10.0.0.2"
    assert format_value([{"name": "sda1", "state": ["in_sync"]}, {"name": "sdb1"}]) == "sda1, sdb1"
    assert format_value({"unknown": "not present"}) == "unknown (not present)"
    assert format_value(1534.2, "p99_us") == "1.53 ms"
    assert format_value(True) == "yes"


# A NIC that was up before the window and is down or gone after it is a regression (`inspector
# diff` exits 1), like a block device that disappeared: the bond slave or VLAN that did not come
# back after the reboot must not pass a runbook's diff.

def _snapshot_file(root, out):
    res = run_cli("snapshot", "--root", str(root), "-o", str(out))
    assert res.status == 0, res.err
    return str(out)


def _window(tmp_path, change):
    root = tmp_path / "root"
    shutil.copytree(fixture_root("xen-pv-guest"), root, symlinks=True)
    assert (root / "sys/class/net/eth0/operstate").read_text().strip() == "up"
    before = _snapshot_file(root, tmp_path / "before.json")
    change(root)
    return before, _snapshot_file(root, tmp_path / "after.json")


def _set_down(root):
    nic = root / "sys/devices/vif-0/net/eth0"
    (nic / "operstate").write_text("down\n")
    (nic / "flags").write_text("0x1002\n")     # IFF_UP cleared: `ip link set eth0 down`


def test_a_nic_taken_down_is_a_regression(tmp_path):
    before, after = _window(tmp_path, _set_down)
    res = run_cli("diff", "--json", before, after)
    assert res.status == 1, res.out
    regs = [c for c in res.json()["changes"] if c["regression"]]
    assert [(c["path"], c["before"], c["after"]) for c in regs] == [
        ("net.nics[name=eth0].operstate", "up", "down")], regs
    assert regs[0]["kind"] == "worse" and "was up" in regs[0]["note"]
    # coming back up is better, never a regression
    back = run_cli("diff", "--json", after, before)
    assert back.status == 0, back.out
    up = [c for c in back.json()["changes"] if c["path"] == "net.nics[name=eth0].operstate"]
    assert up and up[0]["kind"] == "better" and not up[0]["regression"]


def test_a_nic_that_was_up_and_is_gone_is_a_regression(tmp_path):
    before, after = _window(tmp_path, lambda root: (root / "sys/class/net/eth0").unlink())
    res = run_cli("diff", before, after)
    assert res.status == 1, res.out
    line = next(text for text in res.out.splitlines() if "net.nics[name=eth0]" in text)
    assert line.startswith("REGRESSION") and "NIC that was up disappeared" in res.out, res.out


def test_a_down_nic_that_goes_away_is_only_a_change(tmp_path):
    def down_then_gone(root):
        _set_down(root)
    root_before, _ = _window(tmp_path, down_then_gone)     # eth0 down in "after.json"
    root = tmp_path / "root"
    (root / "sys/class/net/eth0").unlink()
    gone = _snapshot_file(root, tmp_path / "gone.json")
    res = run_cli("diff", "--json", str(tmp_path / "after.json"), gone)
    assert res.status == 0, res.out
    removed = [c for c in res.json()["changes"] if c["path"] == "net.nics[name=eth0]"]
    assert removed and removed[0]["kind"] == "removed" and not removed[0]["regression"]


def _with_probes(src, dst, probes):
    import json
    doc = json.loads(Path(src).read_text())
    doc["probes"] = probes
    with open(dst, "w") as f:
        json.dump(doc, f)
    return str(dst)


def test_probe_runs_that_came_or_went_say_why_they_failed_and_rates_are_rates(tmp_path,
                                                                              monkeypatch):
    base = _snapshot_file(fixture_root("xen-pv-guest"), tmp_path / "base.json")
    io_ok = {"spec": "io:/var/tmp", "kind": "io", "target": "/var/tmp", "error": None,
             "summary": {"requests": 56747, "duration_s": 3.0, "ops_per_s": 19264.6,
                         "bytes_per_s": 78907892.07}}
    io_bad = {"spec": "io:/nonexistent", "kind": "io", "target": "/nonexistent", "summary": {},
              "error": "/nonexistent: no such file, directory or device"}
    before = _with_probes(base, tmp_path / "b.json", [io_ok])
    after = _with_probes(base, tmp_path / "a.json", [io_bad])
    monkeypatch.setenv("COLUMNS", "200")
    res = run_cli("diff", before, after)
    out = res.out
    added = next(text for text in out.splitlines() if "probes[io:/nonexistent]" in text)
    assert "probe failed: /nonexistent: no such file" in added, out
    assert "{}" not in out, out                      # an empty summary was printed as '{}…'
    removed = next(text for text in out.splitlines() if "probes[io:/var/tmp]" in text)
    # a rate is not seconds: ops_per_s was printed '19264.6 s', bytes_per_s '78907892.07 s'
    assert "19264.6 ops/s" in removed and "75.3 MiB/s" in removed and "3 s" in removed, removed
    js = run_cli("diff", "--json", before, after).json()
    note = next(c["note"] for c in js["changes"] if c["path"] == "probes[io:/nonexistent]")
    assert note == "probe failed: /nonexistent: no such file, directory or device"


# Real io:/var/tmp probe summaries of this VM's disk (3 s, 12 intervals each): quiet before,
# a dd of direct 1 MiB writes running through the whole after-run, the dd only in the first
# intervals, and quiet again.

QUIET = {"avg_us": 31.5, "p99_us": 49.3, "intervals": {
    "p99_us": [38.7, 47.1, 101.0, 47.7, 38.1, 58.1, 51.0, 50.3, 51.4, 45.5, 43.3, 45.5],
    "avg_us": [25.0, 26.7, 43.1, 27.2, 25.1, 33.4, 37.3, 34.7, 38.5, 31.4, 34.5, 31.2]}}


UNDER_DD = {"avg_us": 396.0, "p99_us": 2156.5, "intervals": {
    "p99_us": [2961.3, 1610.8, 31957.2, 2172.7, 20603.7, 1674.1, 1937.7, 1390.6, 1445.8,
               1388.0, 1444.5, 1769.9],
    "avg_us": [710.3, 342.7, 1557.0, 338.4, 1093.2, 196.9, 469.5, 366.7, 327.5, 330.9, 356.9,
               371.6]}}


DD_AT_START = {"avg_us": 47.1, "p99_us": 856.6, "intervals": {
    "p99_us": [1104.2, 1257.9, 1171.0, 57715.1, 56343.6, 41.6, 35.9, 39.8, 35.5, 35.7, 37.7,
               96.5],
    "avg_us": [197.6, 219.2, 218.1, 32654.3, 34238.3, 64.6, 24.7, 25.1, 24.8, 24.8, 25.3, 38.5]}}


QUIET_AGAIN = {"avg_us": 36.3, "p99_us": 51.9, "intervals": {
    "p99_us": [253.0, 172.5, 61.3, 48.8, 42.1, 43.2, 49.5, 46.2, 51.2, 46.2, 80.1, 45.2],
    "avg_us": [45.8, 49.6, 36.4, 34.9, 31.8, 34.7, 33.2, 37.1, 33.9, 36.3, 32.9, 36.5]}}


def _io(summary):
    return [{"spec": "io:/var/tmp", "kind": "io", "target": "/var/tmp", "error": None,
             "summary": summary}]


def _probe_diff(tmp_path, before, after):
    base = _snapshot_file(fixture_root("xen-pv-guest"), tmp_path / "base.json")
    b = _with_probes(base, tmp_path / "pb.json", _io(before))
    a = _with_probes(base, tmp_path / "pa.json", _io(after))
    res = run_cli("diff", "--json", b, a)
    return res.status, {c["path"]: c for c in res.json()["changes"] if c["category"] == "probes"}


def test_a_disk_slowed_13x_in_every_interval_is_a_regression(tmp_path):
    # the after-run's intervals spread widely (a loaded disk does that), and the old rule
    # "beyond twice the larger spread" hid the regression: diff said nothing and exited 0
    status, probes = _probe_diff(tmp_path, QUIET, UNDER_DD)
    assert status == 1, probes
    for metric in ("avg_us", "p99_us"):
        change = probes[f"probes[io:/var/tmp].{metric}"]
        assert change["regression"] and change["kind"] == "worse", change
        assert "consistently higher (12 of 12 above" in change["note"], change["note"]
    status, probes = _probe_diff(tmp_path, UNDER_DD, QUIET)          # and back: better
    assert status == 0 and probes["probes[io:/var/tmp].p99_us"]["kind"] == "better"
    assert "-98%" in probes["probes[io:/var/tmp].p99_us"]["note"]
    assert "consistently lower (12 of 12 below" in probes["probes[io:/var/tmp].p99_us"]["note"]


def test_a_transient_stall_is_said_but_not_judged_a_regression(tmp_path):
    status, probes = _probe_diff(tmp_path, QUIET, DD_AT_START)
    assert status == 0, probes
    p99 = probes["probes[io:/var/tmp].p99_us"]      # +1636%: said, not silently dropped
    assert p99["kind"] == "changed" and not p99["regression"]
    assert "within the run-to-run spread" in p99["note"]


def test_two_quiet_runs_are_no_change(tmp_path):
    status, probes = _probe_diff(tmp_path, QUIET, QUIET_AGAIN)     # +15% avg, p=0.04
    assert status == 0 and not probes, probes


@pytest.mark.parametrize("edit, says", [
    (lambda d: d.__setitem__("probes", [1]), "probes is not a list of objects"),
    (lambda d: d["report"].__setitem__("findings", None), "report.findings is not a list"),
    (lambda d: d["report"].__setitem__("findings", ["md0 degraded"]), "report.findings"),
    (lambda d: d["report"].__setitem__("sections", []), "report.sections is not an object"),
    (lambda d: d["report"].__setitem__("host", None), "report.host is not an object"),
])
def test_an_edited_snapshot_is_an_error_never_a_traceback_that_reads_as_regressions(
        tmp_path, edit, says):
    """Exit 1 means "regressions" to a runbook; a snapshot diff cannot read must exit 2 with
    one line (it was a traceback, exit 1)."""
    import json
    good = _snapshot_file(fixture_root("xen-pv-guest"), tmp_path / "good.json")
    doc = json.loads(Path(good).read_text())
    edit(doc)
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(doc))
    for pair in ((good, str(bad)), (str(bad), good)):
        res = run_cli("diff", *pair)
        assert res.status == 2, (res.status, res.err)
        assert says in res.err and res.err.count("\n") == 1, res.err


def test_a_snapshot_with_null_probes_is_a_snapshot_without_probes(tmp_path):
    import json
    good = _snapshot_file(fixture_root("xen-pv-guest"), tmp_path / "good.json")
    doc = json.loads(Path(good).read_text())
    doc["probes"] = None
    (tmp_path / "null.json").write_text(json.dumps(doc))
    res = run_cli("diff", good, str(tmp_path / "null.json"))
    assert res.status == 0 and "No changes." in res.out, (res.out, res.err)


def test_a_render_failure_is_exit_2_not_regressions(tmp_path, monkeypatch):
    import inspector.render.diff as render
    good = _snapshot_file(fixture_root("xen-pv-guest"), tmp_path / "good.json")

    def broken(result, width):
        raise ValueError("bad width")
    monkeypatch.setattr(render, "render_diff", broken)
    res = run_cli("diff", good, good)
    assert res.status == 2 and "--json" in res.err and res.err.count("\n") == 1, res.err


def test_a_probe_failing_before_and_after_is_not_a_regression(tmp_path):
    """The memcached that was down before the window and is still down after it, with another
    error text, got no worse: a change to read, not exit 1. Starting to fail still is one."""
    base = _snapshot_file(fixture_root("xen-pv-guest"), tmp_path / "base.json")

    def mc(error):
        return [{"spec": "memcached:10.0.0.5:11211", "kind": "memcached",
                 "target": "10.0.0.5:11211", "summary": {}, "error": error}]
    refused = _with_probes(base, tmp_path / "r.json", mc("failed: connection refused"))
    timeout = _with_probes(base, tmp_path / "t.json", mc("failed: connect timed out"))
    fine = _with_probes(base, tmp_path / "f.json", mc(None))
    res = run_cli("diff", "--json", refused, timeout)
    assert res.status == 0, res.out
    [change] = [c for c in res.json()["changes"] if c["category"] == "probes"]
    assert change["kind"] == "changed" and change["note"] == "probe failed before and after"
    worse = run_cli("diff", "--json", fine, timeout)
    assert worse.status == 1 and worse.json()["regressions"] == 1


def test_a_container_veth_going_away_is_not_a_regression(tmp_path):
    """A docker host restarts its containers during the window: each host-side veth goes and
    a new one with a random name comes. That is churn, not a NIC that failed to come back."""
    def add_veth(root):
        nic = root / "sys/devices/virtual/net/veth3f2a9c1"
        shutil.copytree(root / "sys/devices/virtual/net/lo", nic, symlinks=True)
        (nic / "operstate").write_text("up\n")
        (nic / "type").write_text("1\n")                    # ARPHRD_ETHER, not loopback
        (root / "sys/class/net/veth3f2a9c1").symlink_to("../../devices/virtual/net/veth3f2a9c1")
    root = tmp_path / "root"
    shutil.copytree(fixture_root("xen-pv-guest"), root, symlinks=True)
    add_veth(root)
    before = _snapshot_file(root, tmp_path / "before.json")
    import json
    nic = next(n for n in json.loads(Path(before).read_text())["report"]["sections"]["net"]["nics"]
               if n["name"] == "veth3f2a9c1")
    assert nic["kind"] == "virtual" and nic["operstate"] == "up", nic
    (root / "sys/class/net/veth3f2a9c1").unlink()
    after = _snapshot_file(root, tmp_path / "after.json")
    res = run_cli("diff", "--json", before, after)
    assert res.status == 0, res.out
    [gone] = [c for c in res.json()["changes"] if c["path"] == "net.nics[name=veth3f2a9c1]"]
    assert gone["kind"] == "removed" and not gone["regression"]
