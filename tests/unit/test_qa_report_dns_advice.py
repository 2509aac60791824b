"""QA: a missing or broken /etc/resolv.conf is reported with the cause an operator can act on."""
from __future__ import annotations

import os

from inspector.collect import build_report
from inspector.host import HostRoot


def finding(root) -> object:
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
