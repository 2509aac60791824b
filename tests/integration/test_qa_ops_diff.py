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
