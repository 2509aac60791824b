"""snapshot -> diff round trips on fixture roots: identical (no change), and each change kind
after editing a copy of the root; check exit codes and Prometheus export on fixture roots."""
import json
import shutil
from pathlib import Path

from conftest import fixture_root, run_cli


def copy_root(name: str, dest: Path) -> Path:
    shutil.copytree(fixture_root(name), dest, symlinks=True)
    return dest


def snapshot(root: Path, out: Path) -> Path:
    res = run_cli("snapshot", "--root", str(root), "-o", str(out))
    assert res.status == 0, res.err
    assert res.out.strip() == str(out)
    return out


def test_snapshot_diff_against_itself_is_clean(tmp_path):
    root = copy_root("xen-pv-guest", tmp_path / "root")
    a = snapshot(root, tmp_path / "a.json")
    b = snapshot(root, tmp_path / "b.json")
    res = run_cli("diff", str(a), str(b))
    assert res.status == 0 and "No changes" in res.out


def test_each_change_kind_is_detected_on_a_modified_root(tmp_path):
    root = copy_root("xen-pv-guest", tmp_path / "root")
    before = snapshot(root, tmp_path / "before.json")
    (root / "sys/devices/vif-0/net/eth0/mtu").write_text("9000\n")             # NIC change
    (root / "etc/resolv.conf").write_text("nameserver 192.0.2.53\noptions timeout:1\n")  # resolver
    (root / "sys/block/xvdb").unlink()                                          # device removed
    after = snapshot(root, tmp_path / "after.json")
    res = run_cli("diff", str(before), str(after), "--json")
    assert res.status == 1, res.out
    changes = res.json()["changes"]
    by_path = {c["path"]: c for c in changes}
    removed = [c for c in changes if c["category"] == "storage" and c["kind"] == "removed"
               and "xvdb" in c["path"]]
    assert removed and removed[0]["regression"]
    mtu = [c for c in changes if c["category"] == "net" and c["path"].endswith(".mtu")]
    assert mtu and mtu[0]["before"] == 1500 and mtu[0]["after"] == 9000
    assert any(c["category"] == "dns" and "nameservers" in c["path"] for c in changes)
    new = [c for c in changes if c["category"] == "findings" and c["kind"] == "added"]
    assert any("dns.single_nameserver" in c["path"] for c in new), by_path.keys()


def test_md_degrading_is_a_regression(tmp_path):
    root = copy_root("storage-raid1-recovering", tmp_path / "root")
    broken = snapshot(root, tmp_path / "broken.json")
    md = root / "sys/devices/virtual/block/md1/md"
    if not md.exists():
        md = Path(str((root / "sys/block/md1").resolve())) / "md"
    (md / "degraded").write_text("0\n")
    (md / "sync_action").write_text("idle\n")
    (md / "sync_completed").write_text("none\n")
    mdstat = (root / "proc/mdstat").read_text()
    mdstat = mdstat.replace("195310144 blocks super 1.2 [2/1] [U_]", "195310144 blocks super 1.2 [2/2] [UU]")
    mdstat = "\n".join(line for line in mdstat.splitlines() if "recovery =" not in line) + "\n"
    (root / "proc/mdstat").write_text(mdstat)
    healed = snapshot(root, tmp_path / "healed.json")
    assert run_cli("diff", str(broken), str(healed)).status == 0          # better: no regression
    res = run_cli("diff", str(healed), str(broken), "--json")
    assert res.status == 1
    regressions = [c for c in res.json()["changes"] if c["regression"]]
    assert any(c["path"] == "md.degraded@md1" for c in regressions)
    assert any(c["path"].endswith("md1].md.degraded") or c["path"].endswith(".degraded")
               for c in regressions if c["category"] == "storage")


def test_check_exit_codes_follow_findings(tmp_path):
    res = run_cli("check", "--root", str(fixture_root("storage-raid1-recovering")))
    assert res.status == 2 and res.out.startswith("INSPECTOR CRITICAL - ")
    first = res.out.splitlines()[0]
    assert "|" in first and "crit=" in first.split("|")[1]
    res = run_cli("check", "--root", str(fixture_root("storage-raid1-recovering")), "--ignore", "md.*")
    assert res.status in (0, 1) and "md0" not in res.out.splitlines()[0].split("|")[0]
    res = run_cli("check", "--root", str(tmp_path / "missing"))
    assert res.status == 3 and res.out.startswith("INSPECTOR UNKNOWN")


def test_prometheus_export_parses_back(tmp_path):
    from prometheus_client.parser import text_string_to_metric_families
    out = tmp_path / "inspector.prom"
    res = run_cli("export", "--prometheus", "--root", str(fixture_root("storage-raid1-recovering")),
                  "-o", str(out))
    assert res.status == 0, res.err
    families = {f.name: f for f in text_string_to_metric_families(out.read_text())}
    crit = [s for s in families["inspector_findings"].samples if s.labels["level"] == "crit"]
    assert crit[0].value >= 2
    degraded = {s.labels["device"]: s.value for s in families["inspector_md_degraded"].samples}
    assert degraded["md1"] == 1
    assert [p.name for p in tmp_path.iterdir()] == ["inspector.prom"]     # atomic, no temp left
    res = run_cli("export", "--json", "--root", str(fixture_root("xen-pv-guest")))
    assert json.loads(res.out)["schema_version"] == 1
