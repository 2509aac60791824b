"""Resolver discovery and dns findings on fixture roots."""
from __future__ import annotations

import os

from conftest import fixture_root, run_cli
from inspector.discover import resolver
from inspector.discover.resolver_conf import ResolverConfig
from inspector.discover.resolver_delay import DelayEstimate
from inspector.model import Finding, Unknown
from inspector.report.collect import build_report
from inspector.roots.host import HostRoot


def collect(name: str) -> resolver.ResolverSection:
    return resolver.collect(HostRoot(str(fixture_root(name))))


def config(s: resolver.ResolverSection) -> ResolverConfig:
    assert isinstance(s.config, ResolverConfig), s.config
    return s.config


def delay(estimate: DelayEstimate | Unknown) -> DelayEstimate:
    assert isinstance(estimate, DelayEstimate), estimate
    return estimate


def codes(name: str) -> list[str]:
    report = build_report(HostRoot(str(fixture_root(name))), ["dns"])
    return sorted(f.code for f in report.findings)


def test_four_servers():
    s = collect("dns-four-servers")
    assert s.used_nameservers == ["10.0.0.1", "10.0.0.2", "10.0.0.3"]
    assert s.ignored_nameservers == ["10.0.0.4"]
    assert s.server_waits == [5, 3, 6]
    assert delay(s.first_server_loss).seconds == 5 and delay(s.all_servers_down).seconds == 28
    assert codes("dns-four-servers") == ["dns.failover_delay", "dns.too_many_nameservers"]


def test_rotate_and_caps():
    s = collect("dns-rotate-caps")
    cfg = config(s)
    assert (cfg.timeout, cfg.attempts, cfg.ndots, cfg.rotate) == (30, 5, 15, True)
    assert s.server_waits == [30, 20, 40]
    assert delay(s.first_server_loss).average == 10
    assert codes("dns-rotate-caps") == ["dns.failover_delay"]


def test_search_list_and_environment_from_sidecar():
    s = collect("dns-search")
    cfg = config(s)
    assert cfg.search == ["a.example", "b.example"] and cfg.search_source == "search"
    assert (cfg.timeout, cfg.attempts, cfg.single_request, cfg.edns0, cfg.trust_ad) == (
        2, 1, True, True, True)
    assert s.environment == {"RES_OPTIONS": "attempts:1 single-request"}
    assert delay(s.all_servers_down).seconds == 1 * (2 + 2) * 2
    assert codes("dns-search") == []


def test_systemd_resolved_stub_with_upstreams():
    s = collect("dns-resolved-stub")
    assert s.link_target == "/run/systemd/resolve/stub-resolv.conf"
    assert s.real_path == "/run/systemd/resolve/stub-resolv.conf"   # resolved inside the root
    assert (s.manager, s.mode, s.stub) == ("systemd-resolved", "stub", True)
    assert s.used_nameservers == ["127.0.0.53"]
    assert s.upstreams == ["192.168.1.1", "2001:db8::53"]
    assert isinstance(s.nss_hosts, str) and s.nss_hosts.startswith("mymachines resolve")
    assert codes("dns-resolved-stub") == []        # one stub address is not a single server


def test_stub_with_single_upstream_warns(tmp_path):
    root = tmp_path / "r"
    (root / "etc").mkdir(parents=True)
    (root / "run/systemd/resolve").mkdir(parents=True)
    (root / "run/systemd/resolve/stub-resolv.conf").write_text("nameserver 127.0.0.53\n")
    (root / "run/systemd/resolve/resolv.conf").write_text("nameserver 10.1.1.1\n")
    os.symlink("../run/systemd/resolve/stub-resolv.conf", root / "etc/resolv.conf")
    report = build_report(HostRoot(str(root)), ["dns"])
    assert [(f.code, f.message) for f in report.findings] == [
        ("dns.single_nameserver", "systemd-resolved has a single upstream server 10.1.1.1")]


def test_use_vc_single_server_and_typo():
    s = collect("dns-use-vc")
    assert config(s).use_vc and config(s).unknown_options == ["timeout=2"]
    assert delay(s.first_server_loss).seconds == 127
    assert codes("dns-use-vc") == ["dns.single_nameserver", "dns.unknown_option",
                                   "dns.use_vc_no_timeout"]


def test_missing_or_unreadable_resolv_conf(tmp_path):
    s = resolver.collect(HostRoot(str(tmp_path)))
    assert isinstance(s.config, Unknown) and "not present" in s.config.reason
    report = build_report(HostRoot(str(tmp_path)), ["dns"])
    assert [f.code for f in report.findings] == ["dns.unreadable"]
    (tmp_path / "etc").mkdir()
    os.symlink("/etc/resolv.conf", tmp_path / "etc/resolv.conf")     # points at itself
    looped = resolver.collect(HostRoot(str(tmp_path)))
    assert isinstance(looped.config, Unknown)


def test_no_attempts_is_critical(tmp_path):
    (tmp_path / "etc").mkdir()
    (tmp_path / "etc/resolv.conf").write_text("nameserver 1.1.1.1\nnameserver 8.8.8.8\n"
                                              "options attempts:0\n")
    report = build_report(HostRoot(str(tmp_path)), ["dns"])
    assert [(f.code, f.level.label) for f in report.findings] == [("dns.no_attempts", "crit")]


def test_report_renders_resolver_roots():
    for name in ("dns-four-servers", "dns-resolved-stub", "dns-use-vc", "dns-rotate-caps"):
        result = run_cli("report", "--section", "dns", "--root", str(fixture_root(name)))
        assert result.status == 0 and "cannot render" not in result.out
    out = run_cli("report", "--section", "dns", "--root",
                  str(fixture_root("dns-resolved-stub"))).out
    assert "192.168.1.1" in out and "systemd-resolved" in out
    doc = run_cli("report", "--json", "--section", "dns", "--root",
                  str(fixture_root("dns-four-servers"))).json()
    dns = doc["sections"]["dns"]
    assert dns["ignored_nameservers"] == ["10.0.0.4"]
    assert dns["first_server_loss"]["seconds"] == 5


# A missing or broken /etc/resolv.conf is reported with the cause an operator can act on.

def finding(root) -> Finding:
    found = build_report(HostRoot(str(root)), ["dns"]).findings
    assert [f.code for f in found] == ["dns.unreadable"]
    return found[0]


def test_dangling_link_to_the_resolved_stub_says_start_resolved(tmp_path):
    (tmp_path / "etc").mkdir()
    os.symlink("../run/systemd/resolve/stub-resolv.conf", tmp_path / "etc/resolv.conf")
    f = finding(tmp_path)
    assert "dangling link" in f.message and "/run/systemd/resolve/stub-resolv.conf" in f.message
    assert "systemctl start systemd-resolved" in f.advice


def test_dangling_link_to_networkmanager(tmp_path):
    (tmp_path / "etc").mkdir()
    os.symlink("/run/NetworkManager/resolv.conf", tmp_path / "etc/resolv.conf")
    f = finding(tmp_path)
    assert "(NetworkManager not running?)" in f.message
    assert "systemctl start NetworkManager" in f.advice


def test_missing_file_says_create_it(tmp_path):
    (tmp_path / "etc").mkdir()
    f = finding(tmp_path)
    assert f.message == "no /etc/resolv.conf: glibc sends every lookup to 127.0.0.1"
    assert f.advice.startswith("Create /etc/resolv.conf")


def test_unreadable_file_says_what_to_check(tmp_path):
    (tmp_path / "etc/resolv.conf").mkdir(parents=True)      # EISDIR on read
    f = finding(tmp_path)
    assert "unreadable" in f.message and f.advice.startswith("Check /etc/resolv.conf")
