"""The shipped rules in a real Prometheus scraping real node_exporters (Debian's packages), one
reading Inspector's textfile and one reading a truncated copy of it: node_exporter drops every
series of the file it cannot parse, and the rules still see that host (textfile scrape error,
Inspector's series missing) instead of going silent."""
from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import time
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

from monitoring_files import RULES, export_text

NODE_EXPORTER = "/usr/bin/prometheus-node-exporter"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _start(argv: list[str], log: Path) -> subprocess.Popen:
    with open(log, "wb") as out:
        return subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT)


def _node_exporter(directory: Path, port: int, log: Path) -> subprocess.Popen:
    return _start([NODE_EXPORTER, "--collector.disable-defaults", "--collector.textfile",
                   f"--collector.textfile.directory={directory}",
                   f"--web.listen-address=127.0.0.1:{port}"], log)


def _query(port: int, promql: str) -> list[dict]:
    url = f"http://127.0.0.1:{port}/api/v1/query?" + urllib.parse.urlencode({"query": promql})
    with urllib.request.urlopen(url, timeout=5) as resp:
        return json.load(resp)["data"]["result"]


def _wait_for(port: int, promql: str, want, deadline_s: float = 90) -> list[dict]:
    """The query's result once want(result) holds; fails with the last result at the deadline
    (Prometheus starting, then scraping and evaluating every second)."""
    deadline = time.monotonic() + deadline_s
    result: list[dict] = []
    while time.monotonic() < deadline:
        try:
            result = _query(port, promql)
            if want(result):
                return result
        except OSError:
            pass                                     # not listening yet
        time.sleep(0.5)
    pytest.fail(f"{promql}: {result}")


@pytest.mark.slow
def test_a_broken_textfile_is_alerted_not_silent(tmp_path):
    for exe in ("prometheus", NODE_EXPORTER):
        if not shutil.which(exe):
            pytest.fail(f"{exe} missing: apt-get install prometheus (make test does it)")
    good, broken = tmp_path / "good", tmp_path / "broken"
    good.mkdir()
    broken.mkdir()
    text = export_text("flash-mixed")
    (good / "inspector.prom").write_text(text)
    # a writer that is not atomic, caught mid-write: the file ends inside a series
    cut = text.index('inspector_drive_health_level{device="fioa"') + 30
    (broken / "inspector.prom").write_text(text[:cut])
    ports = {name: _free_port() for name in ("good", "broken", "prometheus")}
    config = tmp_path / "prometheus.yml"
    config.write_text(json.dumps({
        "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
        "rule_files": [str(RULES)],
        "scrape_configs": [{"job_name": "node", "static_configs": [{"targets": [
            f"127.0.0.1:{ports['good']}", f"127.0.0.1:{ports['broken']}"]}]}]}))
    procs = [_node_exporter(good, ports["good"], tmp_path / "good.log"),
             _node_exporter(broken, ports["broken"], tmp_path / "broken.log"),
             _start(["prometheus", f"--config.file={config}",
                     f"--storage.tsdb.path={tmp_path / 'data'}",
                     f"--web.listen-address=127.0.0.1:{ports['prometheus']}"],
                    tmp_path / "prometheus.log")]
    try:
        prom = ports["prometheus"]
        good_instance, broken_instance = (f"127.0.0.1:{ports[n]}" for n in ("good", "broken"))
        # node_exporter reads one file and refuses the other, with all of its series
        errors = _wait_for(prom, "node_textfile_scrape_error",
                           lambda r: len(r) == 2)
        assert {e["metric"]["instance"]: e["value"][1] for e in errors} == \
            {good_instance: "0", broken_instance: "1"}
        assert [s["metric"]["instance"] for s in _query(prom, "inspector_build_info")] == \
            [good_instance]
        assert _query(prom, f'node_textfile_mtime_seconds{{instance="{broken_instance}"}}') == []
        # the rules see the broken host (pending: their `for:` is 15 minutes), not the good one
        alerts = _wait_for(prom, 'ALERTS{alertname=~"InspectorTextfile.*"}',
                           lambda r: len(r) >= 2)
        assert sorted((a["metric"]["alertname"], a["metric"]["instance"]) for a in alerts) == [
            ("InspectorTextfileMissing", broken_instance),
            ("InspectorTextfileScrapeError", broken_instance)]
        # and the good host's findings reach their own rules
        critical = _wait_for(prom, 'ALERTS{alertname="InspectorDriveHealthCritical"}',
                             lambda r: len(r) >= 2)
        assert {a["metric"]["device"] for a in critical} == {"hioa", "fct1"}
        assert {a["metric"]["instance"] for a in critical} == {good_instance}
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        if os.environ.get("INSPECTOR_TEST_LOGS"):
            for log in tmp_path.glob("*.log"):
                print(log.name, log.read_text()[-2000:])
