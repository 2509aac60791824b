"""Helpers for the monitoring tests: the shipped files, promtool, and real exports turned into
promtool input series."""
from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

import inspector
from conftest import fixture_root, run_cli

MONITORING = Path(inspector.__file__).resolve().parent / "monitoring"
RULES = MONITORING / "inspector-alerts.yml"
RULE_TESTS = MONITORING / "inspector-alerts.test.yml"
DASHBOARD = MONITORING / "inspector-dashboard.json"
# node_exporter's own series the rules and the dashboard may use beside Inspector's: the
# textfile's age and parse errors, the CPU counters (steal as a rate)
NODE_METRICS = {"node_textfile_mtime_seconds", "node_textfile_scrape_error",
                "node_cpu_seconds_total"}
METRIC_NAME = re.compile(r"\b(?:inspector|node)_[a-z0-9_]+\b")


def promtool(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    exe = shutil.which("promtool")
    if exe is None:     # make test installs it (Debian's prometheus package): never skipped
        pytest.fail("promtool not found: apt-get install prometheus (make test does it)")
    return subprocess.run([exe, *args], capture_output=True, text=True, timeout=120, cwd=cwd)


def dashboard_exprs() -> list[str]:
    doc = json.loads(DASHBOARD.read_text())
    return [t["expr"] for p in doc["panels"] for t in p.get("targets", [])]


def rule_exprs() -> dict[str, str]:
    """alert name -> its expression, read from the YAML by layout (no YAML parser here: the
    file's structure is checked by promtool)."""
    out: dict[str, str] = {}
    name = None
    lines = RULES.read_text().splitlines()
    for i, line in enumerate(lines):
        if m := re.match(r"\s*- alert: (\S+)", line):
            name = m.group(1)
        elif name and (m := re.match(r"(\s*)expr: ?(.*)", line)):
            expr = m.group(2)
            if expr in (">", "|"):          # a folded block: the more indented lines below
                block = []
                for nxt in lines[i + 1:]:
                    if len(nxt) - len(nxt.lstrip()) <= len(m.group(1)):
                        break
                    block.append(nxt.strip())
                expr = " ".join(block)
            out[name] = expr
            name = None
    return out


def used_metrics(texts: list[str]) -> set[str]:
    return {name for text in texts for name in METRIC_NAME.findall(text)}


def export_text(root_name: str) -> str:
    res = run_cli("export", "--prometheus", "--root", str(fixture_root(root_name)))
    assert res.status == 0, res.err
    return res.out


def exported_names(text: str) -> set[str]:
    return {line.split("{")[0].split(" ")[0] for line in text.splitlines()
            if line and not line.startswith("#")}


def input_series(text: str, instance: str, minutes: int) -> list[dict]:
    """Each sample of an export as a promtool input series, constant for `minutes`: what
    Prometheus would hold after scraping that textfile every minute."""
    out = []
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        series, _, value = line.rpartition(" ")
        name, brace, labels = series.partition("{")
        labels = labels[:-1] if brace else ""
        extra = f'instance="{instance}",job="node"'
        out.append({"series": f"{name}{{{labels + ',' if labels else ''}{extra}}}",
                    "values": f"{value}x{minutes}"})
    return out


def rule_test_groups() -> tuple[str, list[str]]:
    """The unit-test file split by layout: its header (rule_files, evaluation_interval) and
    each entry of `tests:` (the comment lines above an entry go with it)."""
    head, sep, body = RULE_TESTS.read_text().partition("\ntests:\n")
    assert sep, f"no tests: in {RULE_TESTS}"
    groups: list[list[str]] = [[]]
    for line in body.splitlines(keepends=True):
        if line.startswith("  - interval:") and any(g.startswith("  - interval:") for g in groups[-1]):
            comments: list[str] = []
            while groups[-1] and groups[-1][-1].lstrip().startswith("#"):
                comments.insert(0, groups[-1].pop())
            groups.append(comments)
        groups[-1].append(line)
    texts = ["".join(g) for g in groups]
    assert "".join(texts) == body and all(t.count("  - interval:") == 1 for t in texts)
    return head + sep, texts


def rule_tests_naming(*alerts: str) -> str:
    """The unit-test file with only the tests of `alerts`: the entries with an alert_rule_test
    of one of them. promtool runs each entry on its own, and a failure names the alert of its
    alert_rule_test, so these entries fail, naming an alert, exactly when the whole file's
    would (the whole file costs about 1 s of CPU a run, an entry 0.05-0.35 s)."""
    head, groups = rule_test_groups()
    chosen = [g for g in groups if any(f"alertname: {a}\n" in g for a in alerts)]
    assert chosen, f"no unit test of {alerts}"
    return head + "".join(chosen)
