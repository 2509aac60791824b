"""`inspector check` as monitoring people expect it: Nagios ranges for -w/-c, -t and -V, a
Checkmk local check mode, --ignore on codes (old DNS codes too), subjects and SUBJECT.CODE with
unmatched patterns said on stderr, and one status rule shared with the Prometheus export."""
from __future__ import annotations

import json
import math
import re
import shutil

import pytest

from conftest import fixture_root, replace_section, run_cli
from inspector.outputs.check import NagiosRange, ThresholdError, parse_thresholds


@pytest.mark.parametrize("text, start, end, inside", [
    ("10", 0, 10, False), ("10:", 10, math.inf, False), ("~:10", -math.inf, 10, False),
    ("10:20", 10, 20, False), ("@10:20", 10, 20, True), (":5", 0, 5, False),
    ("-5:-1", -5, -1, False), ("@0.5", 0, 0.5, True), ("1e1", 0, 10, False),
])
def test_range_syntax(text, start, end, inside):
    r = NagiosRange.parse(text)
    assert (r.start, r.end, r.inside, r.text) == (start, end, inside, text)


@pytest.mark.parametrize("text, alerting, quiet", [
    ("10", [-0.1, 10.01, 11], [0, 5, 10]),
    ("10:", [9.99, -1], [10, 1e9]),
    ("~:10", [10.5], [-1e9, 10]),
    ("10:20", [9, 21], [10, 15, 20]),
    ("@1:5", [1, 3, 5], [0.99, 5.01]),
])
def test_range_alerts(text, alerting, quiet):
    r = NagiosRange.parse(text)
    assert [v for v in alerting if r.alerts(v)] == alerting
    assert [v for v in quiet if r.alerts(v)] == []


@pytest.mark.parametrize("text, message", [
    ("", "empty range"), ("@", "empty range"), ("5:1", "above the end"),
    ("abc", "not a number"), ("1:2:3", "not a number"), ("nan", "finite"), ("~:inf", "finite"),
    ("~", "not a number"),
])
def test_bad_ranges(text, message):
    with pytest.raises(ThresholdError, match=message):
        NagiosRange.parse(text)
    with pytest.raises(ThresholdError, match="bad threshold"):
        parse_thresholds([f"steal={text}"])


def _perf(out: str) -> dict[str, str]:
    return dict(item.split("=", 1) for item in out.splitlines()[0].split("|", 1)[1].split())


XEN = str(fixture_root("xen-pv-guest"))     # steal 0.07%, dns_first_loss 1 s, one warn finding


def test_ranges_on_the_command_line():
    res = run_cli("check", "--root", XEN, "-w", "steal=1:", "-c", "dns_first_loss=~:0.5")
    assert res.status == 2, res.out
    status = res.out.splitlines()[0]
    assert status.startswith("INSPECTOR CRITICAL - dns_first_loss_s=1 > 0.5, steal_pct=0.07 < 1; "
                             "eth0: TSO"), status
    perf = _perf(res.out)
    assert perf["steal_pct"] == "0.07%;1:;;;" and perf["dns_first_loss_s"] == "1s;;~:0.5;;"
    res = run_cli("check", "--root", XEN, "--warn", "load1=@0:100")
    assert res.status == 1 and "load1=0.42 in @0:100" in res.out, res.out
    res = run_cli("check", "--root", XEN, "-w", "steal=5", "-c", "steal=20", "-w", "warn=1")
    assert res.status == 1 and res.out.startswith("INSPECTOR WARNING - eth0: TSO"), res.out


def test_timeout_and_version_options():
    res = run_cli("check", "--root", XEN, "-t", "5s")
    assert res.status == 1, res.out
    res = run_cli("check", "-t", "0")
    assert res.status == 3 and res.out.startswith("INSPECTOR UNKNOWN - "), res.out
    res = run_cli("check", "-V")
    assert res.status == 0 and re.fullmatch(r"inspector check \(live-inspector \S+\)\n", res.out)


def _with_incomplete_dns(tmp_path, name: str = "xen-pv-guest"):
    root = tmp_path / name
    shutil.copytree(fixture_root(name), root, symlinks=True)
    (root / "inspector-sidecar.json").write_text(json.dumps(
        {"version": 1, "facts": {"capture": {"incomplete": {"dns": "timed out after 15 s"}}}}))
    return str(root)


def test_a_section_not_collected_is_unknown_unless_something_is_critical(tmp_path):
    root = _with_incomplete_dns(tmp_path)
    res = run_cli("check", "--root", root)       # a warn finding, and dns not collected
    assert res.status == 3 and res.out.startswith("INSPECTOR UNKNOWN - "), res.out
    assert "[UNKNOWN] dns: dns not collected: " in res.out
    res = run_cli("check", "--root", root, "-c", "load1=@0:100")
    assert res.status == 2, res.out
    prom = run_cli("export", "--prometheus", "--root", root).out     # the same rule
    assert "\ninspector_health_status 3\n" in prom


def test_ignore_matches_codes_old_codes_subjects_and_subject_code():
    root = str(fixture_root("dns-use-vc"))
    base = run_cli("check", "--root", root)
    codes = set(re.findall(r"\((dns\.[a-z_]+)\)", base.out))
    assert codes == {"dns.single_nameserver", "dns.unknown_option", "dns.use_vc_no_timeout"}
    for patterns in (["resolver.*"], ["resolver"], ["dns.*"], ["*.dns.u*", "dns.single_*"],
                     ["dns.use_vc", "dns.single_server", "dns.unknown_option"]):   # old codes
        args = [a for p in patterns for a in ("--ignore", p)]
        res = run_cli("check", "--root", root, *args)
        assert not re.search(r"\(dns\.", res.out), (patterns, res.out)
        assert res.err == "", (patterns, res.err)
    res = run_cli("check", "--root", root, "--ignore", "dns.use_vc")
    assert "dns.use_vc_no_timeout" not in res.out and "dns.single_nameserver" in res.out


def test_a_pattern_that_matches_nothing_is_said_on_stderr():
    res = run_cli("check", "--root", XEN, "--ignore", "net.xen_tso", "--ignore", "resolver.*",
                  "--ignore", "md.*")
    assert res.status == 0 and res.out.startswith("INSPECTOR OK - no problems found"), res.out
    assert res.err.splitlines() == [
        "inspector check: --ignore 'resolver.*' matched no finding's code, subject or SUBJECT.CODE",
        "inspector check: --ignore 'md.*' matched no finding's code, subject or SUBJECT.CODE"]


# Checkmk local check: STATUS "SERVICE NAME" METRICS TEXT (metrics: name=value;warn;crit|...)
LOCAL_CHECK = re.compile(r'(?P<status>[0-3]) "(?P<service>[^"]+)" (?P<metrics>-|\S+) '
                         r'(?P<text>[^\n|]*)')
METRIC = re.compile(r"[A-Za-z0-9_]+=-?[0-9.e+-]+(;[0-9.e+-]*){0,4}")


def _local_checks(out: str) -> dict[str, dict]:
    services = {}
    for line in out.splitlines():
        m = LOCAL_CHECK.fullmatch(line)
        assert m, line
        if m["metrics"] != "-":
            assert all(METRIC.fullmatch(x) for x in m["metrics"].split("|")), m["metrics"]
        services[m["service"]] = {**m.groupdict(), "details": m["text"].split("\\n")}
    return services


def test_checkmk_local_check_lines():
    res = run_cli("check", "--root", XEN, "--checkmk", "-w", "steal=5", "-c", "steal=~:20",
                  "-w", "load1=2:")
    services = _local_checks(res.out)
    assert list(services) == ["Inspector", "Inspector storage", "Inspector virt",
                              "Inspector net", "Inspector dns", "Inspector cpu"]
    host = services["Inspector"]
    assert host["status"] == "1" and res.status == 1
    metrics = dict(m.split("=", 1) for m in host["metrics"].split("|"))
    assert metrics["steal_pct"] == "0.07;5;20"      # plain upper limits are Checkmk levels
    assert metrics["load1"] == "0.42"               # a lower bound is not
    assert host["details"][0].startswith("load1=0.42 < 2; eth0: TSO")
    assert host["details"][1] == ("[WARN] eth0: TSO and GSO on a Xen netfront NIC (known "
                                  "XenServer network freezes) (net.xen_tso)")
    assert services["Inspector net"]["status"] == "1"
    assert services["Inspector storage"]["text"] == "no problems found"
    assert {services[s]["status"] for s in ("Inspector storage", "Inspector dns",
                                            "Inspector cpu", "Inspector virt")} == {"0"}


def test_checkmk_critical_unknown_and_usage_mistakes(tmp_path):
    services = _local_checks(run_cli("check", "--root", str(fixture_root("flash-mixed")),
                                     "--checkmk").out)
    assert services["Inspector"]["status"] == "2"
    assert services["Inspector storage"]["status"] == "2"
    assert "[CRIT] fct1: card failed" in services["Inspector storage"]["text"]
    assert services["Inspector cpu"]["status"] == "3"       # the root has no cpu files
    assert "cpu not checked" in services["Inspector cpu"]["text"]
    services = _local_checks(run_cli("check", "--root", _with_incomplete_dns(tmp_path),
                                     "--checkmk").out)
    assert services["Inspector dns"]["status"] == "3" and services["Inspector"]["status"] == "3"
    res = run_cli("check", "--checkmk", "-w", "steal=x")
    assert res.status == 3 and res.out == \
        "3 \"Inspector\" - bad threshold 'steal=x': 'x' is not a number\n"


def test_checkmk_text_has_no_pipe_nor_stray_line_break(tmp_path):
    """A NIC named qa|p0 and a message holding a literal backslash-n: one line per service,
    the pipe never reaches the text (Checkmk splits metrics at it)."""
    root = tmp_path / "root"
    shutil.copytree(fixture_root("xen-pv-guest"), root, symlinks=True)
    nic = root / "sys/devices/vif-1/net/qa|p0\\n"
    shutil.copytree(root / "sys/devices/vif-0/net/eth0", nic, symlinks=True)
    (nic / "operstate").write_text("lowerlayerdown\n")
    (nic / "carrier").write_text("0\n")
    (root / "sys/class/net/qa|p0\\n").symlink_to("../../devices/vif-1/net/qa|p0\\n")
    res = run_cli("check", "--root", str(root), "--checkmk")
    services = _local_checks(res.out)
    assert any(d.startswith("[WARN] qa/p0/n: ") for d in services["Inspector net"]["details"])


# `inspector check` output a Nagios/Icinga parser reads right whatever the host's names hold, and
# thresholds that can fire.

def _root_with_piped_nic(tmp_path):
    """xen-pv-guest plus an up NIC without carrier named qa|p0 (Linux allows '|' in names:
    `ip link add 'qa|p0' type veth peer name 'qa|p1'`)."""
    root = tmp_path / "root"
    shutil.copytree(fixture_root("xen-pv-guest"), root, symlinks=True)
    nic = root / "sys/devices/vif-1/net/qa|p0"
    shutil.copytree(root / "sys/devices/vif-0/net/eth0", nic, symlinks=True)
    (nic / "operstate").write_text("lowerlayerdown\n")
    (nic / "carrier").write_text("0\n")
    (root / "sys/class/net/qa|p0").symlink_to("../../devices/vif-1/net/qa|p0")
    return root


def test_a_pipe_in_a_name_does_not_cut_the_status_line(tmp_path):
    res = run_cli("check", "--root", str(_root_with_piped_nic(tmp_path)))
    assert res.status == 1, res.out
    lines = res.out.splitlines()
    # Nagios splits the first line at its first '|': what follows must be the perfdata only
    status, perf = lines[0].split("|", 1)
    assert "qa/p0: interface is up" in status, res.out
    assert perf.split()[0].startswith("crit=") and "interface" not in perf, res.out
    # in the long text a '|' starts perfdata for the remaining lines: none may hold one
    assert lines[1:] and not any("|" in line for line in lines[1:]), res.out
    assert any(line.startswith("[WARN] qa/p0: ") for line in lines[1:]), res.out


@pytest.mark.parametrize("threshold", ["load1=nan", "steal=inf", "md_degraded=-inf"])
def test_a_threshold_that_can_never_fire_is_a_usage_mistake(threshold):
    res = run_cli("check", "--root", str(fixture_root("xen-pv-guest")), "--warn", threshold)
    assert res.status == 3, res.out
    assert res.out.startswith("INSPECTOR UNKNOWN - bad threshold") and "finite" in res.out
    assert "nan;" not in res.out and "inf;" not in res.out


def test_a_hung_collector_still_answers_before_check_nrpe_gives_up(monkeypatch):
    """A read that never returns (a hung NFS mount or a dying disk under sysfs; here the
    storage collector sleeps, since HostRoot opens files non-blocking and a FIFO no longer
    hangs): with the old default (10 s per collector) the plugin answered after about 10.2 s,
    past check_nrpe's default 10 s socket timeout, which pages CRITICAL with no reason. It must
    print its UNKNOWN line, naming what hung, well before that."""
    import threading
    import time
    release = threading.Event()

    def hangs(root, *args, **kwargs):
        release.wait(60)
        raise RuntimeError("released")
    replace_section(monkeypatch, "storage", collect=hangs)
    try:
        start = time.monotonic()
        res = run_cli("check", "--root", str(fixture_root("storage-raid1-faulty")))
        took = time.monotonic() - start
    finally:
        release.set()
    assert took < 9.5, took
    assert res.status == 3, res.out
    assert res.out.startswith("INSPECTOR UNKNOWN - ") and "storage not collected: timed out" \
        in res.out.splitlines()[0], res.out


def test_an_internal_error_is_unknown_not_warning(monkeypatch):
    """An uncaught exception exits 1, which Nagios reads as WARNING."""
    import inspector.outputs.check as check  # the plugin logic moved out of commands/ (issue 16)

    def broken(doc):
        raise KeyError("sections")
    monkeypatch.setattr(check, "collect_metrics", broken)
    res = run_cli("check", "--root", str(fixture_root("xen-pv-guest")))
    assert res.status == 3, (res.status, res.out, res.err)
    assert res.out.splitlines() == ["INSPECTOR UNKNOWN - internal error: KeyError: 'sections'"]
    assert "Traceback" in res.err            # the details stay on stderr for whoever debugs
