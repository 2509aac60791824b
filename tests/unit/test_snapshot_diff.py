"""Snapshots and diff on synthetic documents: keyed matching, regressions, significance,
corrupt files and schema versions."""
import copy
import json
from typing import Any

import pytest

from conftest import run_cli
from inspector.compare.diff import diff_snapshots, latency_significance
from inspector.compare.snapshot import SnapshotError, read_snapshot, write_snapshot

BASE: dict[str, Any] = {     # a snapshot document, edited per test
    "kind": "inspector-snapshot", "snapshot_version": 1, "schema_version": 1, "created_at": 1.0,
    "report": {
        "host": {"hostname": "db1", "kernel": "6.1", "machine": "x86_64", "source": "live", "collected_at": 1},
        "sections": {
            "storage": {"devices": [{"name": "sda", "size": 100, "md": None},
                                    {"name": "md0", "md": {"degraded": 0, "array_state": "clean"}}],
                        "health": {"hioa": {"level": "ok", "max_bad_block_rate_pct": 0.5, "reserves_pct": 90}}},
            "net": {"nics": [{"name": "eth0", "mtu": 1500, "driver": "virtio_net", "rx_bytes": 5,
                              "offloads": {"tcp-segmentation-offload": {"on": True, "fixed": False}}}],
                    "sysctls": {"net.core.somaxconn": 4096}},
            "dns": {"nameservers": ["10.0.0.1", "10.0.0.2"], "options": {"timeout": 5}},
            "virt": {"layers": [{"kind": "vm", "verdict": "kvm"}]},
            "cpu": {"load_average": [0.1, 0.2, 0.3]},
        },
        "findings": [{"level": "warn", "subject": "eth0", "message": "x", "evidence": [], "advice": "", "code": "net.a"}],
        "timings": {"storage": 0.1},
        "schema_version": 1,
    },
    "probes": [{"spec": "io:/data", "kind": "io", "target": "/data", "error": None,
                "summary": {"p99_us": 1000, "avg_us": 300,
                            "intervals": {"p99_us": [950, 1000, 1050, 1000], "avg_us": [290, 300, 310, 300]}}}],
}


def test_identical_and_reordered_is_no_change():
    after = copy.deepcopy(BASE)
    after["report"]["sections"]["storage"]["devices"].reverse()
    after["report"]["sections"]["net"]["nics"][0]["rx_bytes"] = 999   # volatile
    after["report"]["timings"] = {"storage": 9}
    assert diff_snapshots(BASE, after).changes == []


def test_each_change_kind_is_detected():
    after = copy.deepcopy(BASE)
    s = after["report"]["sections"]
    s["storage"]["devices"] = [d for d in s["storage"]["devices"] if d["name"] != "sda"]
    s["storage"]["devices"].append({"name": "sdb", "size": 5})
    s["storage"]["devices"][0]["md"] = {"degraded": 1, "array_state": "clean"}
    s["storage"]["health"]["hioa"]["max_bad_block_rate_pct"] = 0.9
    s["storage"]["health"]["hioa"]["reserves_pct"] = 50
    s["net"]["nics"][0]["mtu"] = 9000
    s["net"]["nics"][0]["offloads"]["tcp-segmentation-offload"]["on"] = False
    s["net"]["sysctls"]["net.core.somaxconn"] = 128
    s["dns"]["nameservers"] = ["10.0.0.2"]
    s["virt"]["layers"][0]["verdict"] = "xen"
    after["report"]["findings"].append({"level": "crit", "subject": "md0", "message": "degraded",
                                        "code": "md.degraded"})
    after["probes"][0]["summary"] = {"p99_us": 5000, "avg_us": 301,
                                     "intervals": {"p99_us": [4900, 5000, 5100, 5000], "avg_us": [300, 301, 302, 301]}}
    res = diff_snapshots(BASE, after)
    paths = {c.path: c for c in res.changes}
    assert paths["storage.devices[name=sda]"].regression                        # removed device
    assert paths["storage.devices[name=sdb]"].kind == "added" and not paths["storage.devices[name=sdb]"].regression
    assert paths["storage.devices[name=md0].md.degraded"].regression
    assert paths["storage.health[device=hioa].max_bad_block_rate_pct"].regression  # rising bad blocks
    assert paths["storage.health[device=hioa].reserves_pct"].regression            # reserves down
    assert paths["net.nics[name=eth0].mtu"].after == 9000
    assert paths["net.nics[name=eth0].offloads.tcp-segmentation-offload.on"].after is False
    assert paths["net.sysctls[net.core.somaxconn]"].before == 4096
    assert "dns.nameservers" in paths and any(p.startswith("virt.layers") for p in paths)
    assert paths["md.degraded@md0"].regression
    assert paths["probes[io:/data].p99_us"].regression
    assert "probes[io:/data].avg_us" not in paths  # +0.3% is within the run-to-run spread


def test_significance_rule():
    quiet = {"p99_us": 1000, "intervals": {"p99_us": [990, 1000, 1010]}}
    noisy = {"p99_us": 1200, "intervals": {"p99_us": [600, 1200, 1800]}}
    assert latency_significance(quiet, {"p99_us": 1300, "intervals": {"p99_us": [1290, 1300, 1310]}})[0]
    assert not latency_significance(quiet, noisy)[0]      # +20% but the spread is larger
    # no per-interval spread: not evidence of anything, however large the change
    assert not latency_significance({"p99_us": 100}, {"p99_us": 120})[0]
    significant, note = latency_significance({"p99_us": 100}, {"p99_us": 300})
    assert not significant and "single sample, not judged" in note


def _dns_probe(avg_us):
    # what probe_runs._run_dns produces: one measurement, no `intervals`
    return {"spec": "dns", "kind": "dns", "target": "", "error": None,
            "summary": {"requests": 2, "avg_us": avg_us, "predicted_lookup_s": 0.01}}


def test_single_sample_probe_is_a_note_not_a_regression(tmp_path, monkeypatch):
    before, after = copy.deepcopy(BASE), copy.deepcopy(BASE)
    before["probes"].append(_dns_probe(400.0))
    after["probes"].append(_dns_probe(1900.0))            # +375%, but one sample each
    res = diff_snapshots(before, after)
    dns = [c for c in res.changes if c.category == "probes" and "dns" in c.path]
    assert len(dns) == 1 and dns[0].path == "probes[dns].avg_us"
    assert not dns[0].regression and dns[0].note == "changed (single sample, not judged)"
    assert res.regressions == []
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    write_snapshot(before, str(a))
    write_snapshot(after, str(b))
    monkeypatch.setenv("COLUMNS", "200")
    out = run_cli("diff", str(a), str(b))
    assert out.status == 0, out.out
    line = next(text for text in out.out.splitlines() if "single sample" in text)
    assert "probes[dns].avg_us" in line and "REGRESSION" not in out.out
    # a small wobble of a single-sample probe is not even mentioned
    after["probes"][-1]["summary"]["avg_us"] = 420.0
    assert not [c for c in diff_snapshots(before, after).changes if "dns" in c.path]


def test_cli_roundtrip_and_exit_codes(tmp_path):
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    write_snapshot(BASE, str(a))
    worse = copy.deepcopy(BASE)
    worse["report"]["findings"].append({"level": "crit", "subject": "md0", "message": "degraded", "code": "md.degraded"})
    write_snapshot(worse, str(b))
    assert run_cli("diff", str(a), str(a)).status == 0
    res = run_cli("diff", str(a), str(b), "--json")
    assert res.status == 1 and res.json()["regressions"] == 1
    assert run_cli("diff", str(b), str(a)).status == 0      # the finding went away: better


@pytest.mark.parametrize("content, message", [
    (b"", "empty file"),
    (json.dumps(BASE).encode()[:200], "corrupt or truncated"),
    (b'{"kind": "something-else"}', "not an Inspector snapshot"),
    (json.dumps({**BASE, "snapshot_version": 99}).encode(), "newer than this Inspector"),
    (json.dumps({**BASE, "snapshot_version": 0}).encode(), "not supported"),
    (json.dumps({k: v for k, v in BASE.items() if k != "report"}).encode(), "has no report"),
])
def test_bad_snapshots_are_refused_clearly(tmp_path, content, message):
    path = tmp_path / "s.json"
    path.write_bytes(content)
    with pytest.raises(SnapshotError, match=message):
        read_snapshot(str(path))
    good = tmp_path / "g.json"
    write_snapshot(BASE, str(good))
    res = run_cli("diff", str(good), str(path))
    assert res.status == 2 and message in res.err and "Traceback" not in res.err


def test_atomic_write_leaves_no_temp_files(tmp_path):
    write_snapshot(BASE, str(tmp_path / "s.json"))
    assert [p.name for p in tmp_path.iterdir()] == ["s.json"]
