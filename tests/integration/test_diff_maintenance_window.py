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
    regressions = {c["path"]: c for c in res.json()["changes"] if c["regression"]}
    wear = regressions["storage.health[device=hioa].max_bad_block_rate_pct"]
    assert (wear["before"], wear["after"]) == (0.135, 0.31)
    assert regressions["storage.health[device=fioa].reserves_pct"]["after"] == 4.0


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
        too_long = [l for l in lines if len(l) > columns]
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
        assert any(l.startswith("REGRESSION storage.md[name=md0].degraded  0 -> 1")
                   for l in md.splitlines()), md


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
