"""The shipped Prometheus alert rules: valid for promtool, their unit tests pass (and fail when
a threshold is changed), every alert is tested, thresholds are the health rules', and real
exports of the fixture roots fire exactly the alerts `inspector check` gives reasons for."""
from __future__ import annotations

import json
import re

import pytest

from inspector.health.cpu import STEAL_WARN_PERCENT
from inspector.health.dns import FAILOVER_WARN_S
from inspector.health.drives import FIO_PBW_WARN_PCT, NVME_WEAR_WARN_PCT
from monitoring_files import (
    RULE_TESTS,
    RULES,
    export_text,
    input_series,
    promtool,
    rule_exprs,
    rule_tests_naming,
)


def test_rules_are_valid():
    res = promtool("check", "rules", str(RULES))
    assert res.returncode == 0, res.stdout + res.stderr
    records = RULES.read_text().count("- record: ")
    assert records == 1      # the probe latency thresholds
    assert f"SUCCESS: {len(rule_exprs()) + records} rules found" in res.stdout, res.stdout


def test_rule_unit_tests_pass():
    res = promtool("test", "rules", str(RULE_TESTS))
    assert res.returncode == 0, res.stdout + res.stderr
    assert "SUCCESS" in res.stdout


def test_unit_tests_catch_a_changed_threshold(tmp_path):
    """The unit tests have teeth: steal over 20% instead of 10% fails them."""
    (tmp_path / RULE_TESTS.name).write_text(rule_tests_naming("InspectorCpuStealHigh"))
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


def _without(text: str, alert: str) -> str:
    """The rules file without one alert rule (from its `- alert:` line to the next rule)."""
    start = text.index(f"      - alert: {alert}\n")
    end = text.find("      - alert: ", start + 1)
    return text[:start] + (text[end:] if end != -1 else "")


def _unit_tests_with(rules: str, tmp_path, alert: str) -> str:
    """promtool's complaints when the unit tests of `alert` run against `rules` ("" when they
    pass)."""
    (tmp_path / RULE_TESTS.name).write_text(rule_tests_naming(alert))
    (tmp_path / RULES.name).write_text(rules)
    res = promtool("test", "rules", RULE_TESTS.name, cwd=tmp_path)
    return "" if res.returncode == 0 else res.stdout + res.stderr


@pytest.mark.slow
@pytest.mark.parametrize("alert", sorted(rule_exprs()))
def test_each_alert_is_needed_by_its_unit_tests(alert, tmp_path):
    """Without any one rule the unit tests fail, naming it: the textfile missing or unreadable,
    the escalation of a lost drive, the growth alerts ... each has a test that fails without
    it (as the tests of issue 28 failed on the rules before it). One case per alert, so the
    promtool runs spread over the workers."""
    assert f"alertname: {alert}," in _unit_tests_with(_without(RULES.read_text(), alert), tmp_path,
                                                      alert)


def test_the_hold_and_keep_durations_are_tested(tmp_path):
    """A critical drive stays firing an hour after its tool hangs (keep_firing_for), and md,
    drive and NVMe-spare criticals wait 5 minutes (for:): dropping either fails a unit test."""
    rules = RULES.read_text()
    kept = rules.replace("        keep_firing_for: 1h\n", "")
    assert kept != rules
    assert "alertname: InspectorDriveHealthCritical, time: 1h18m" in _unit_tests_with(
        kept, tmp_path, "InspectorDriveHealthCritical")
    for alert in ("InspectorMdDegraded", "InspectorDriveHealthCritical", "InspectorNvmeSpareLow"):
        start = rules.index(f"- alert: {alert}\n")
        hold = rules.index("        for: 5m\n", start)
        assert hold < rules.find("- alert: ", start + 1)
        hasty = rules[:hold] + rules[hold + len("        for: 5m\n"):]
        assert f"alertname: {alert}, time: 4m" in _unit_tests_with(hasty, tmp_path, alert), alert


def test_every_alert_links_its_runbook_in_the_readme():
    """runbook_url: a README section (GitHub's anchor of its heading), under the base URL a
    site sets once as the external label inspector_runbooks."""
    readme = (RULES.parents[2] / "README.md").read_text()
    anchors = {_github_anchor(line.lstrip("#").strip())
               for line in readme.splitlines() if re.match(r"#{2,4} ", line)}
    rules = RULES.read_text()
    blocks = rules.split("      - alert: ")[1:]
    assert len(blocks) == len(rule_exprs())
    for block in blocks:
        match = re.search(r"runbook_url: '\{\{ or \$externalLabels.inspector_runbooks "
                          r"\"README.md\" \}\}#([a-z0-9-]+)'", block)
        assert match, block.splitlines()[0]
        assert match.group(1) in anchors, (block.splitlines()[0], match.group(1))


def _github_anchor(heading: str) -> str:
    """GitHub's id for a heading: lower case, punctuation but - and _ dropped, spaces to -."""
    return re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")


def test_thresholds_are_the_health_rules():
    """An alert and `inspector check` on the same host agree."""
    exprs = rule_exprs()
    steal = exprs["InspectorCpuStealHigh"]          # the rate now, the since-boot share else
    assert steal.count(f" > {STEAL_WARN_PERCENT / 100:g}") == 2, steal
    assert 'rate(node_cpu_seconds_total{mode="steal"}[5m])' in steal
    assert f"inspector_cpu_steal_ratio > {STEAL_WARN_PERCENT / 100:g}" in steal
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
                    '"firing"}, "subject", "", "device", "section"))',
            "eval_time": f"{minutes}m", "exp_samples": expected}]}]}
    path = tmp_path / "fixtures.test.yml"
    path.write_text(json.dumps(test))       # YAML is a superset of JSON
    res = promtool("test", "rules", str(path))
    assert res.returncode == 0, res.stdout[-6000:] + res.stderr[-2000:]

