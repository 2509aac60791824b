"""The shipped Prometheus alert rules: valid for promtool, their unit tests pass (and fail when
a threshold is changed), every alert is tested, thresholds are the health rules', and real
exports of the fixture roots fire exactly the alerts `inspector check` gives reasons for."""
from __future__ import annotations

import json
import re
import shutil

from inspector.health.cpu import STEAL_WARN_PERCENT
from inspector.health.dns import FAILOVER_WARN_S
from inspector.health.drives import FIO_PBW_WARN_PCT, NVME_WEAR_WARN_PCT
from monitoring_files import RULE_TESTS, RULES, export_text, input_series, promtool, rule_exprs


def test_rules_are_valid():
    res = promtool("check", "rules", str(RULES))
    assert res.returncode == 0, res.stdout + res.stderr
    assert f"SUCCESS: {len(rule_exprs())} rules found" in res.stdout, res.stdout


def test_rule_unit_tests_pass():
    res = promtool("test", "rules", str(RULE_TESTS))
    assert res.returncode == 0, res.stdout + res.stderr
    assert "SUCCESS" in res.stdout


def test_unit_tests_catch_a_changed_threshold(tmp_path):
    """The unit tests have teeth: steal over 20% instead of 10% fails them."""
    shutil.copy(RULE_TESTS, tmp_path)
    rules = RULES.read_text()
    assert "inspector_cpu_steal_ratio > 0.1\n" in rules
    (tmp_path / RULES.name).write_text(rules.replace("inspector_cpu_steal_ratio > 0.1\n",
                                                     "inspector_cpu_steal_ratio > 0.2\n"))
    res = promtool("test", "rules", RULE_TESTS.name, cwd=tmp_path)
    assert res.returncode != 0 and "InspectorCpuStealHigh" in res.stderr, res.stdout + res.stderr


def test_every_alert_fires_in_a_unit_test():
    tests = RULE_TESTS.read_text()
    fired = set(re.findall(r"alertname: (\S+)\n\s+exp_alerts:\n\s+- exp_labels", tests))
    assert set(rule_exprs()) == fired


def test_thresholds_are_the_health_rules():
    """An alert and `inspector check` on the same host agree."""
    exprs = rule_exprs()
    assert exprs["InspectorCpuStealHigh"] == f"inspector_cpu_steal_ratio > {STEAL_WARN_PERCENT / 100:g}"
    assert exprs["InspectorDnsFirstServerLoss"] == \
        f"inspector_resolver_first_server_loss_seconds > {FAILOVER_WARN_S:g}"
    assert exprs["InspectorFlashRatedPbwLow"] == \
        f"inspector_flash_rated_pbw_remaining_ratio < {FIO_PBW_WARN_PCT / 100:g}"
    assert exprs["InspectorNvmeEnduranceUsed"] == \
        f"inspector_nvme_endurance_used_ratio >= {NVME_WEAR_WARN_PCT / 100:g}"


# What each fixture root's real export fires after 70 minutes of scrapes, and why (the same
# root's findings): alert name -> the devices, NICs or sections it fires for. The storage and
# net roots hold only the files of their case: the other sections are not up.
FIXTURE_ALERTS = {
    "flash-mixed": {
        # hio.battery on hioa; fio.failed and fio.read_only on fct1
        "InspectorDriveHealthCritical": {"hioa", "fct1"},
        # fio.hot/fio.reserves_low on fioa; smart.crc_errors/current_pending_sector on sda
        "InspectorDriveHealthWarning": {"fioa", "sda"},
        "InspectorDriveHealthUnknown": {"hiob"},             # hio_info timed out
        "InspectorFlashReservesLow": {"fioa"},               # 8% against its own 10%
        "InspectorSectionNotCollected": {"net", "virt", "dns", "cpu"},
    },
    "storage-raid1-recovering": {
        "InspectorMdRecovering": {"md0", "md1"},             # recover delayed, recover 8.6%
        "InspectorDriveHealthUnknown": {"sda", "sdb"},       # smartctl not recorded
        "InspectorSectionNotCollected": {"net", "virt", "dns", "cpu"},
    },
    "storage-raid1-faulty": {
        "InspectorMdDegraded": {"md0"},                      # md.degraded, no recovery
        "InspectorDriveHealthUnknown": {"sda", "sdb"},
        "InspectorSectionNotCollected": {"net", "virt", "dns", "cpu"},
    },
    "net-errors": {
        "InspectorNicDown": {"eno2"},                        # net.carrier_down
        "InspectorSectionNotCollected": {"storage", "virt", "dns", "cpu"},
    },
    "xen-pv-guest": {},
}


def test_fixture_exports_fire_the_alerts_their_findings_explain(tmp_path):
    minutes = 70
    series = [s for name in FIXTURE_ALERTS
              for s in input_series(export_text(name), name, minutes)]
    expected = [
        {"labels": "{" + ", ".join(f'{k}="{v}"' for k, v in
                                   (("alertname", alert), ("instance", root),
                                    *((("subject", s),) if s else ()))) + "}", "value": 1}
        for root, alerts in FIXTURE_ALERTS.items() for alert, subjects in alerts.items()
        for s in (subjects or [""])]
    test = {"rule_files": [str(RULES)], "evaluation_interval": "1m", "tests": [{
        "interval": "1m", "input_series": series,
        "promql_expr_test": [{
            "expr": 'count by (alertname, instance, subject) (label_join(ALERTS{alertstate='
                    '"firing"}, "subject", "", "device", "nic", "section"))',
            "eval_time": f"{minutes}m", "exp_samples": expected}]}]}
    path = tmp_path / "fixtures.test.yml"
    path.write_text(json.dumps(test))       # YAML is a superset of JSON
    res = promtool("test", "rules", str(path))
    assert res.returncode == 0, res.stdout[-6000:] + res.stderr[-2000:]


def test_rules_tests_and_dashboard_ship_in_the_wheel(tmp_path):
    import subprocess
    import sys
    import zipfile
    repo = RULES.parents[2]
    res = subprocess.run([sys.executable, "-m", "build", "--wheel", "--no-isolation",
                          "--outdir", str(tmp_path), str(repo)],
                         capture_output=True, text=True, timeout=240)
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    names = zipfile.ZipFile(next(tmp_path.glob("live_inspector-*.whl"))).namelist()
    assert {f"inspector/monitoring/{p.name}" for p in RULES.parent.iterdir()} <= set(names)
    assert {"inspector-alerts.yml", "inspector-alerts.test.yml", "inspector-dashboard.json"} <= \
        {p.name for p in RULES.parent.iterdir()}
