"""QA (maintenance window): a NIC that was up before the window and is down or gone after it
is a regression (`inspector diff` exits 1), like a block device that disappeared: the bond
slave or VLAN that did not come back after the reboot must not pass a runbook's diff."""
import shutil

from conftest import fixture_root, run_cli


def _snapshot(root, out):
    res = run_cli("snapshot", "--root", str(root), "-o", str(out))
    assert res.status == 0, res.err
    return str(out)


def _window(tmp_path, change):
    root = tmp_path / "root"
    shutil.copytree(fixture_root("xen-pv-guest"), root, symlinks=True)
    assert (root / "sys/class/net/eth0/operstate").read_text().strip() == "up"
    before = _snapshot(root, tmp_path / "before.json")
    change(root)
    return before, _snapshot(root, tmp_path / "after.json")


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
    line = next(l for l in res.out.splitlines() if "net.nics[name=eth0]" in l)
    assert line.startswith("REGRESSION") and "NIC that was up disappeared" in res.out, res.out


def test_a_down_nic_that_goes_away_is_only_a_change(tmp_path):
    def down_then_gone(root):
        _set_down(root)
    root_before, _ = _window(tmp_path, down_then_gone)     # eth0 down in "after.json"
    root = tmp_path / "root"
    (root / "sys/class/net/eth0").unlink()
    gone = _snapshot(root, tmp_path / "gone.json")
    res = run_cli("diff", "--json", str(tmp_path / "after.json"), gone)
    assert res.status == 0, res.out
    removed = [c for c in res.json()["changes"] if c["path"] == "net.nics[name=eth0]"]
    assert removed and removed[0]["kind"] == "removed" and not removed[0]["regression"]


def _with_probes(src, dst, probes):
    import json
    doc = json.loads(open(src).read())
    doc["probes"] = probes
    with open(dst, "w") as f:
        json.dump(doc, f)
    return str(dst)


def test_probe_runs_that_came_or_went_say_why_they_failed_and_rates_are_rates(tmp_path,
                                                                              monkeypatch):
    base = _snapshot(fixture_root("xen-pv-guest"), tmp_path / "base.json")
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
    added = next(l for l in out.splitlines() if "probes[io:/nonexistent]" in l)
    assert "probe failed: /nonexistent: no such file" in added, out
    assert "{}" not in out, out                      # an empty summary was printed as '{}…'
    removed = next(l for l in out.splitlines() if "probes[io:/var/tmp]" in l)
    # a rate is not seconds: ops_per_s was printed '19264.6 s', bytes_per_s '78907892.07 s'
    assert "19264.6 ops/s" in removed and "75.3 MiB/s" in removed and "3 s" in removed, removed
    js = run_cli("diff", "--json", before, after).json()
    note = next(c["note"] for c in js["changes"] if c["path"] == "probes[io:/nonexistent]")
    assert note == "probe failed: /nonexistent: no such file, directory or device"
