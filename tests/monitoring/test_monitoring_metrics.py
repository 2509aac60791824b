"""The metrics the rules and the dashboard read are the ones `inspector export --prometheus`
writes; the names follow Prometheus' conventions (promtool's lint), the replaced names are
still written for one release, marked deprecated; node_exporter reads the textfile."""
from __future__ import annotations

import json
import os
import socket
import subprocess
import time
import urllib.request

import pytest
from prometheus_client.parser import text_string_to_metric_families

from conftest import fixture_root, run_cli
from inspector.outputs.metrics import DEPRECATED_NAMES, METRICS
from monitoring_files import (
    DASHBOARD,
    NODE_METRICS,
    RULES,
    dashboard_exprs,
    export_text,
    exported_names,
    promtool,
    rule_exprs,
    used_metrics,
)

FIXTURE_ROOTS = ["flash-mixed", "storage-raid1-recovering", "storage-raid1-faulty",
                 "net-errors", "xen-pv-guest", "nvme-bare-metal", "dns-four-servers",
                 "storage-es3000", "storage-dm-suspended"]


@pytest.fixture(scope="module")
def exports() -> dict[str, str]:
    return {name: export_text(name) for name in FIXTURE_ROOTS}


@pytest.fixture(scope="module")
def probe_export(tmp_path_factory) -> str:
    """A live export with a real IO probe run and a DNS probe: the probe series."""
    target = tmp_path_factory.mktemp("probe")
    # 1 s: on a loaded machine the IO warm-up request alone took 0.3 s, leaving nothing timed
    res = run_cli("export", "--prometheus", "--probe", f"io:{target}", "--probe", "dns",
                  "--probe-seconds", "1")
    assert res.status == 0, res.err
    return res.out


def test_every_metric_the_rules_and_the_dashboard_use_is_exported(exports, probe_export):
    emitted = set().union(*(exported_names(text) for text in exports.values()),
                          exported_names(probe_export))
    prefixed = {f"inspector_{name}" for name in METRICS}
    for what, texts in (("rules", list(rule_exprs().values())), ("dashboard", dashboard_exprs())):
        used = used_metrics(texts)
        assert used - NODE_METRICS, what
        assert used - NODE_METRICS <= emitted, (what, sorted(used - NODE_METRICS - emitted))
        assert used - NODE_METRICS <= prefixed, what       # declared, with help
        deprecated = {f"inspector_{old}" for old in DEPRECATED_NAMES} | \
            {"inspector_collector_seconds"}
        assert not used & deprecated, (what, used & deprecated)


def test_alert_and_dashboard_coverage():
    """What the issue asks the rules and the dashboard to watch is there."""
    rules = " ".join(rule_exprs().values())
    for metric in ("md_degraded", "md_recovering", "drive_health_level", "flash_reserves_ratio",
                   "flash_rated_pbw_remaining_ratio", "nvme_available_spare_ratio",
                   "resolver_first_server_loss_seconds", "cpu_steal_ratio", "nic_carrier",
                   "nic_receive_packets_total", "section_up"):
        assert f"inspector_{metric}" in rules, metric
    assert "node_textfile_mtime_seconds" in rules
    dash = " ".join(dashboard_exprs())
    for metric in ("health_status", "drive_health_level", "flash_reserves_ratio",
                   "md_degraded", "resolver_first_server_loss_seconds",
                   "probe_latency_seconds", "probe_ops_per_second"):
        assert f"inspector_{metric}" in dash, metric


def test_dashboard_queries_are_valid_promql(tmp_path):
    """Each panel's query as a recording rule: promtool parses it (the variables filled in)."""
    rules = "groups:\n  - name: dashboard\n    rules:\n" + "".join(
        f"      - record: dashboard_query_{i}\n        expr: {json.dumps(expr.replace('$instance', '.*'))}\n"
        for i, expr in enumerate(dashboard_exprs()))
    path = tmp_path / "dashboard-queries.yml"
    path.write_text(rules)
    res = promtool("check", "rules", str(path))
    assert res.returncode == 0, res.stdout + res.stderr
    (tmp_path / "broken.yml").write_text(rules.replace("sum by (instance) (", "sum by (instance (", 1))
    assert promtool("check", "rules", str(tmp_path / "broken.yml")).returncode != 0


def test_dashboard_shape():
    doc = json.loads(DASHBOARD.read_text())
    ids = [p["id"] for p in doc["panels"]]
    assert len(ids) == len(set(ids))
    variables = {v["name"]: v for v in doc["templating"]["list"]}
    assert variables["datasource"]["query"] == "prometheus"
    assert "inspector_build_info" in variables["instance"]["definition"]
    for panel in doc["panels"]:
        assert {"h", "w", "x", "y"} <= set(panel["gridPos"]), panel["title"]
        assert panel["gridPos"]["x"] + panel["gridPos"]["w"] <= 24, panel["title"]
        if panel["type"] != "row":
            assert panel["datasource"]["uid"] == "${datasource}" and panel["targets"], panel["title"]
            assert all('instance=~"$instance"' in t["expr"] for t in panel["targets"]), panel["title"]


def test_names_pass_promtool_lint(exports, probe_export):
    for name, text in [*exports.items(), ("probes", probe_export)]:
        res = subprocess.run(["promtool", "check", "metrics"], input=text, capture_output=True,
                             text=True, timeout=60)
        assert res.returncode == 0, (name, res.stdout + res.stderr)


def _families(text: str) -> dict:
    return {f.name: f for f in text_string_to_metric_families(text)}


def test_ratios_counters_and_info_metrics(exports):
    fams = _families(exports["flash-mixed"])
    fioa = {"device": "fioa"}
    assert _value(fams, "inspector_flash_reserves_ratio", fioa) == 0.08
    assert _value(fams, "inspector_flash_reserves_warn_ratio", fioa) == 0.1
    assert _value(fams, "inspector_flash_rated_pbw_remaining_ratio", fioa) == 0.9946
    types = {line.split()[2]: line.split()[3] for line in exports["flash-mixed"].splitlines()
             if line.startswith("# TYPE ")}
    for counter in ("flash_io_timeouts_total", "flash_rw_errors_total", "drive_media_errors_total",
                    "nic_errors_total", "nic_receive_packets_total"):
        assert types.get(f"inspector_{counter}", "counter") == "counter", counter
    assert "inspector_flash_io_timeouts_total{device=\"hioa\"} 3" in exports["flash-mixed"]
    virt = _families(exports["xen-pv-guest"])["inspector_virt_layer_info"]
    assert {s.labels["verdict"] for s in virt.samples} >= {"xen"}
    timings = _families(exports["xen-pv-guest"])
    collectors = {s.labels["collector"] for s in
                  timings["inspector_collector_duration_seconds"].samples}
    assert collectors == {"storage", "virt", "net", "dns", "cpu"}    # no total beside its parts
    assert timings["inspector_report_duration_seconds"].samples[0].value >= \
        max(s.value for s in timings["inspector_collector_duration_seconds"].samples)
    nvme = {"device": "nvme0n1"}
    assert _value(fams, "inspector_nvme_available_spare_ratio", nvme) == 1
    assert _value(fams, "inspector_nvme_available_spare_threshold_ratio", nvme) == 0.1
    assert _value(fams, "inspector_nvme_endurance_used_ratio", nvme) == 0.03


def _value(fams: dict, name: str, labels: dict, suffix: str = "") -> float:
    values = [s.value for s in fams[name].samples
              if s.name == name + suffix and all(s.labels.get(k) == v for k, v in labels.items())]
    assert len(values) == 1, (name, labels, values)
    return values[0]


def test_nic_series_are_labelled_device_and_drops_are_not_errors(exports):
    """node_exporter's label (joins with node_network_*), one counter per meaning: the
    net-errors root's eno1 has 12 receive errors and 25000 drops, not 25012 'errors'."""
    fams = _families(exports["net-errors"])
    eno1 = {"device": "eno1"}
    assert _value(fams, "inspector_nic_receive_errors", eno1, "_total") == 12
    assert _value(fams, "inspector_nic_receive_drops", eno1, "_total") == 25000
    assert _value(fams, "inspector_nic_transmit_errors", eno1, "_total") == 0
    assert _value(fams, "inspector_nic_transmit_drops", eno1, "_total") == 0
    for name, fam in fams.items():
        if name.startswith("inspector_nic_"):
            assert all(s.labels["device"] == s.labels["nic"] for s in fam.samples), name
    deprecated = fams["inspector_nic_errors"]     # the parser names counters without _total
    assert deprecated.documentation.startswith("DEPRECATED")
    assert {s.labels["counter"] for s in deprecated.samples} == \
        {"rx_errors", "tx_errors", "rx_dropped", "tx_dropped"}


def test_drive_info_says_which_drive_to_pull(exports):
    fams = _families(exports["flash-mixed"])
    info = {s.labels["device"]: s.labels for s in fams["inspector_drive_info"].samples}
    assert info["sda"] == {"device": "sda", "model": "ST4000NM0035-1V4107", "serial": "ZC1A2B3C",
                           "firmware": "TN03"}
    assert info["nvme0n1"]["serial"] == "S439NA0M500123"
    assert info["fioa"]["model"] == "F00-001-1T20-CS-0001"       # fio-status' product
    levels = {s.labels["device"] for s in fams["inspector_drive_health_level"].samples}
    assert set(info) == levels          # every drive with a level, the unreadable one too
    assert all(s.value == 1 for s in fams["inspector_drive_info"].samples)


def test_a_drive_whose_tool_failed_keeps_its_kind(exports):
    """Its level goes to 3 on the same series: an alert on it keeps its labels (kind included)
    instead of resolving and starting another."""
    for root, device, kind in (("flash-mixed", "hiob", "hio"),            # hio_info timed out
                               ("storage-raid1-faulty", "sda", "smart")):  # smartctl not recorded
        health = _families(exports[root])["inspector_drive_health_level"]
        labels = [s.labels for s in health.samples if s.labels["device"] == device]
        values = [s.value for s in health.samples if s.labels["device"] == device]
        assert labels == [{"device": device, "kind": kind}] and values == [3], (root, labels)


def test_old_names_are_written_for_one_release_marked_deprecated(exports):
    text = exports["flash-mixed"]
    helps = {line.split()[2]: line for line in text.splitlines() if line.startswith("# HELP ")}
    values = {line.rsplit(" ", 1)[0]: float(line.rsplit(" ", 1)[1])
              for line in text.splitlines() if line and not line.startswith("#")}
    seen = 0
    for old, (new, factor, _help) in DEPRECATED_NAMES.items():
        old_series = {k: v for k, v in values.items() if k.split("{")[0] == f"inspector_{old}"}
        for series, value in old_series.items():
            seen += 1
            assert helps[f"inspector_{old}"].startswith(
                f"# HELP inspector_{old} DEPRECATED, removed in the next release: "
                f"use inspector_{new}"), helps[f"inspector_{old}"]
            twin = series.replace(f"inspector_{old}", f"inspector_{new}", 1)
            assert value == pytest.approx(values[twin] * factor), series
    assert seen >= 8        # percent gauges, counters, virt_layers: the flash root has them all
    assert values['inspector_flash_reserves_percent{device="fioa"}'] == 8      # as before
    assert "DEPRECATED" in helps["inspector_collector_seconds"]
    assert 'inspector_collector_seconds{collector="total"}' in values


def test_probe_series(probe_export):
    fams = _families(probe_export)
    latency = fams["inspector_probe_latency_seconds"]
    assert latency.type == "summary"
    io = {s.labels["quantile"]: s.value for s in latency.samples
          if s.labels["kind"] == "io" and s.name == "inspector_probe_latency_seconds"}
    assert set(io) == {"0.5", "0.9", "0.99", "0.999"}
    assert 0 < io["0.5"] <= io["0.9"] <= io["0.99"] <= io["0.999"] < 1
    # the run's own _count and _sum: its requests, and its mean times them
    io_labels = {"kind": "io"}
    count = _value(fams, "inspector_probe_latency_seconds", io_labels, "_count")
    assert count == _value(fams, "inspector_probe_requests", io_labels) > 10
    mean = _value(fams, "inspector_probe_latency_mean_seconds", io_labels)
    assert _value(fams, "inspector_probe_latency_seconds", io_labels, "_sum") == \
        pytest.approx(mean * count, rel=1e-6)
    success = {s.labels["probe"]: s.value for s in fams["inspector_probe_success"].samples}
    assert set(success) == {p for p in success if p.startswith("io:")} | {"dns"}
    ops = [s.value for s in fams["inspector_probe_ops_per_second"].samples
           if s.labels["kind"] == "io"]
    assert ops and ops[0] > 10
    stamp = fams["inspector_probe_last_run_timestamp_seconds"].samples[0].value
    assert time.time() - 60 < stamp <= time.time()


def test_a_failed_probe_is_success_0_with_its_errors(tmp_path):
    """Nothing listens on port 1: the memcached run fails; its series say so instead of
    leaving the graph silent."""
    res = run_cli("export", "--prometheus", "--probe", "memcached:127.0.0.1:1",
                  "--probe-seconds", "0.3")
    assert res.status == 0, res.err
    fams = _families(res.out)
    assert fams["inspector_probe_success"].samples[0].value == 0
    assert fams["inspector_probe_errors"].samples[0].value >= 1
    assert "inspector_probe_latency_seconds" not in fams      # no request: no latency


def test_record_writes_the_textfile_each_sample(tmp_path):
    prom = tmp_path / "inspector.prom"
    db = tmp_path / "history.sqlite"
    res = run_cli("record", "--count", "2", "--every", "0.2s", "--db", str(db),
                  "--textfile", str(prom), "--probe", f"io:{tmp_path}", "--probe-seconds", "0.2")
    assert res.status == 0, res.err
    fams = _families(prom.read_text())
    assert fams["inspector_probe_requests"].samples[0].value > 0
    assert "inspector_health_status" in fams and "inspector_build_info" in fams
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # no temp left
    res = run_cli("record", "--once", "--db", str(db), "--textfile", str(tmp_path))
    assert res.status == 2 and "--textfile" in res.err and "directory" in res.err, res.err


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_node_exporter_reads_the_textfile(tmp_path, exports):
    """The real node_exporter (Debian's prometheus-node-exporter, which the prometheus package
    brings) reads the export without error and serves the mtime series the stale-textfile
    alert reads, with the path in its file label as the rule's regex expects."""
    exe = "/usr/bin/prometheus-node-exporter"
    if not os.path.exists(exe):
        pytest.fail("prometheus-node-exporter missing: apt-get install prometheus")
    (tmp_path / "inspector.prom").write_text(exports["flash-mixed"])
    port = _free_port()
    proc = subprocess.Popen([exe, "--collector.disable-defaults", "--collector.textfile",
                             f"--collector.textfile.directory={tmp_path}",
                             f"--web.listen-address=127.0.0.1:{port}"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        body = _scrape(f"http://127.0.0.1:{port}/metrics")
    finally:
        proc.terminate()
        proc.wait(10)
    fams = _families(body)
    assert fams["node_textfile_scrape_error"].samples[0].value == 0
    mtime = fams["node_textfile_mtime_seconds"].samples
    assert [s.labels["file"] for s in mtime] == [str(tmp_path / "inspector.prom")]
    assert '(.*/)?inspector[^/]*\\\\.prom' in RULES.read_text()
    assert fams["inspector_health_status"].samples[0].value == 2


def _scrape(url: str) -> str:
    deadline = time.monotonic() + 10
    while True:
        try:
            with urllib.request.urlopen(url, timeout=2) as resp:
                return resp.read().decode()
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


# The Prometheus export agrees with `inspector check`. A virtual disk has no health source at all
# (no SMART on virtio_blk or Xen blkfront); exporting drive_health_level 3 ("unknown: the health
# tool failed") for it paged on every VM of a fleet that alerts on unknown health, while `check`
# on the same host said OK.

def _exported_families(root) -> dict:
    res = run_cli("export", "--prometheus", "--root", str(root))
    assert res.status == 0, res.err
    return {f.name: f for f in text_string_to_metric_families(res.out)}


def test_virtual_disks_have_no_health_series_and_check_agrees():
    for name, disks in (("kvm-virtio-guest", {"vda", "vdb"}), ("xen-pv-guest", {"xvda", "xvdb"})):
        fams = _exported_families(fixture_root(name))
        sizes = {s.labels["device"] for s in fams["inspector_block_device_size_bytes"].samples}
        assert disks <= sizes                                   # the disks are exported ...
        health = fams.get("inspector_drive_health_level")
        assert health is None or not disks & {s.labels["device"] for s in health.samples}, \
            [(s.labels, s.value) for s in health.samples]       # ... but not as "unknown health"
        check = run_cli("check", "--root", str(fixture_root(name)))
        assert "unknown=0;" in check.out and check.status in (0, 1), check.out


def test_real_drives_keep_their_levels_and_a_failed_tool_stays_3():
    health = _exported_families(fixture_root("flash-mixed"))["inspector_drive_health_level"]
    levels = {s.labels["device"]: s.value for s in health.samples}
    assert levels == {"hioa": 2, "fioa": 1, "fct1": 2, "nvme0n1": 0, "sda": 1, "hiob": 3}
    assert "virtual disks" in health.documentation
