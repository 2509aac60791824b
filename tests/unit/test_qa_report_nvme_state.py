"""QA: an NVMe drive is never "health OK" when its controller is dead or its SMART log unread."""
from __future__ import annotations

import io
import json
import shutil

from conftest import fixture_root
from rich.console import Console

from inspector.collect import build_report
from inspector.host import HostRoot
from inspector.metrics import collect_metrics
from inspector.model import Level, to_jsonable
from inspector.render import render_report

STATE = "sys/devices/pci0000:00/0000:00:1d.0/0000:3d:00.0/nvme/nvme0/state"
SMART_LOG = "nvme smart-log /dev/nvme0n1 -o json"


def _root(tmp_path, state: str, smart_log: dict | None) -> HostRoot:
    root = tmp_path / "root"
    shutil.copytree(fixture_root("flash-mixed"), root, symlinks=True)
    (root / STATE).write_text(state + "\n")
    sidecar = json.loads((root / "inspector-sidecar.json").read_text())
    if smart_log is None:
        del sidecar["facts"]["command"][SMART_LOG]
    else:
        sidecar["facts"]["command"][SMART_LOG] = smart_log
    (root / "inspector-sidecar.json").write_text(json.dumps(sidecar))
    return HostRoot(str(root))


def _text(report) -> str:
    buf = io.StringIO()
    render_report(report, Console(file=buf, width=80, color_system=None))
    return buf.getvalue()


def test_dead_controller_is_a_critical_finding(tmp_path):
    failed = {"argv": SMART_LOG.split(), "returncode": 1, "stdout": "", "error": None,
              "stderr": "NVMe status: Controller is dead\n", "duration": 0.01}
    report = build_report(_root(tmp_path, "dead", failed), ["storage"])
    found = [f for f in report.findings if f.subject == "nvme0n1"]
    assert [(f.level, f.code) for f in found] == [(Level.CRIT, "nvme.controller_state")]
    assert "nvme0 is dead" in found[0].message and "replace" in found[0].advice
    assert "nvme0n1 health CRIT" in _text(report)


def test_resetting_controller_is_a_warning(tmp_path):
    report = build_report(_root(tmp_path, "resetting", None), ["storage"])
    found = [f for f in report.findings if f.subject == "nvme0n1"]
    assert [(f.level, f.code) for f in found] == [(Level.WARN, "nvme.controller_state")]


def test_unread_smart_log_is_health_unknown_not_ok(tmp_path):
    report = build_report(_root(tmp_path, "live", None), ["storage"])
    assert not [f for f in report.findings if f.subject == "nvme0n1"]
    text = _text(report)
    assert "nvme0n1 health UNKNOWN" in text and "nvme0n1 health OK" not in text
    doc = to_jsonable(report)
    assert doc["sections"]["storage"]["health"]["nvme0n1"]["level"] == "unknown"
    level = [s.value for s in collect_metrics(doc) if s.name == "drive_health_level"
             and s.labels.get("device") == "nvme0n1"]
    assert level == [3]
