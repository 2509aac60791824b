"""`inspector report --root` on sosreports from the field (issue 27): real sos outputs of other
hosts and sos versions, partly collected (tests/fixtures/field/sos-*/, each with a SOURCE.md).
Every field the report shows is checked against what the sosreport's own command outputs say."""
from __future__ import annotations

import json
import re
import shutil
import sys
from pathlib import Path

import pytest

from conftest import FIXTURES, run_bin
from inspector.discover.dmsetup_text import lsblk_edges, parse_info_columns, parse_lsblk_rows

sys.path.insert(0, str(FIXTURES))
import field_roots  # noqa: E402  (the fixture placer, importable from tests/fixtures)

FIELD = FIXTURES / "field"
COMPUTE4 = FIELD / "sos-hotsos-compute4"


def report(root: Path | str, *extra: str) -> dict:
    res = run_bin("report", "--json", "--root", str(root), *extra)
    assert res.returncode == 0, res.stderr
    assert not res.stderr, res.stderr
    return json.loads(res.stdout)


def sos_output(root: Path, rel: str) -> str:
    return (root / "sos_commands" / rel).read_text()


def copy(tmp_path: Path, fixture: Path) -> Path:
    target = tmp_path / fixture.name
    shutil.copytree(fixture, target, symlinks=True)
    return target


# ----------------------------------------------------------------------------- class 1
def test_load_average_comes_from_uptime_and_says_so():
    doc = report(COMPUTE4, "--section", "cpu")
    uptime = sos_output(COMPUTE4, "host/uptime")
    loads = re.search(r"load average: (.*)$", uptime.strip())
    assert loads, uptime
    said = [float(v) for v in loads[1].split(", ")]
    cpu = doc["sections"]["cpu"]
    assert cpu["load_average"] == said == [3.58, 3.27, 2.58]
    assert cpu["load_source"] == "uptime"
    # uptime carries no task counts: unknown, never a guess
    assert cpu["volatile"]["runnable"] == {"unknown": "not present"}


def test_without_uptime_the_load_is_unknown_naming_both_sources(tmp_path):
    root = copy(tmp_path, COMPUTE4)
    (root / "sos_commands/host/uptime").unlink()
    cpu = report(root, "--section", "cpu")["sections"]["cpu"]
    assert cpu["load_average"] == {"unknown": "/proc/loadavg: not present; uptime: not in this "
                                              "sosreport (command uptime)"}
    assert cpu["load_source"] is None


def test_identity_agrees_with_uname_and_date():
    doc = report(COMPUTE4, "--section", "cpu")
    uname = sos_output(COMPUTE4, "kernel/uname_-a").split()
    assert (doc["host"]["hostname"], doc["host"]["kernel"], doc["host"]["machine"]) == \
        (uname[1], uname[2], "x86_64")
    assert doc["host"]["collected_at"] == 1644509957.0   # date --utc: Thu Feb 10 16:19:17 UTC 2022
    assert "sos 4.2" in doc["host"]["source"]


@pytest.mark.parametrize("line,load", [
    (" 16:19:19 up 17:41,  2 users,  load average: 3.58, 3.27, 2.58", [3.58, 3.27, 2.58]),
    (" 19:48:41 up 8 min,  0 user,  load average: 2.54, 1.73, 0.81", [2.54, 1.73, 0.81]),
    (" 10:02:11 up 3 days,  1:02,  1 user,  load average: 0,15, 0,10, 0,09", [0.15, 0.10, 0.09]),
    ("12:00  up 1 day, 3 users, load averages: 1.20 1.10 1.00", [1.2, 1.1, 1.0]),
    ("uptime: command not found", None),
    ("", None),
])
def test_uptime_forms(line, load):
    from inspector.discover.cpu import parse_uptime_load
    assert parse_uptime_load(line) == load


# ----------------------------------------------------------------------------- class 4
K8S = FIELD / "sos-hotsos-k8s-partial"


def test_partial_sosreport_without_sos_marks_is_read_as_a_sosreport():
    doc = report(K8S)
    uname = sos_output(K8S, "kernel/uname_-a").split()
    assert (doc["host"]["hostname"], doc["host"]["kernel"]) == (uname[1], uname[2])
    assert doc["sections"]["cpu"]["load_average"] == [0.83, 0.73, 0.76]
    source = doc["host"]["source"]
    assert source.startswith(f"sosreport {K8S} (sos version not recorded;")
    # per section: what is missing, and what stands in for it
    assert "storage: no sys/block; nothing kept in its place" in source
    assert "net: no sys/class/net; ip -s -d link kept" in source
    assert "cpu: no proc/cpuinfo, proc/stat, proc/loadavg; uptime kept" in source
    assert "virt: no sys/class/dmi/id, proc/cpuinfo, proc/1/environ; hostnamectl status kept" in source
    assert "sos: no version.txt, sos_logs/ or sos_reports/" in source


def test_partial_sosreport_with_a_tree_gets_its_command_facts(tmp_path):
    """A trimmed sosreport that kept sys/ but lost version.txt was opened as a plain tree:
    its uname and uptime outputs were ignored."""
    root = copy(tmp_path, K8S)
    (root / "sys/block").mkdir(parents=True)
    doc = report(root, "--section", "cpu")
    assert doc["host"]["kernel"] == "5.4.0-99-generic" and doc["sections"]["cpu"]["load_source"] == "uptime"
    assert "storage: no sys/block" not in doc["host"]["source"]


def test_a_whole_sosreport_says_nothing_is_missing_where_nothing_is(tmp_path):
    root = copy(tmp_path, COMPUTE4)
    for part in ("sys/block", "sys/class/net", "sys/class/dmi/id", "proc/1", "etc"):
        (root / part).mkdir(parents=True)
    for name in ("proc/cpuinfo", "proc/stat", "proc/loadavg", "proc/1/environ", "etc/resolv.conf"):
        (root / name).write_text("")
    assert "partial" not in report(root, "--section", "cpu")["host"]["source"]


@pytest.mark.parametrize("layout", ["empty sos_commands", "empty plugin directory"])
def test_a_tree_with_no_sos_output_is_still_refused(tmp_path, layout):
    (tmp_path / "sos_commands").mkdir()
    if layout == "empty plugin directory":
        (tmp_path / "sos_commands/host").mkdir()
    res = run_bin("report", "--root", str(tmp_path))
    assert res.returncode == 2 and "not a host root" in res.stderr


# ----------------------------------------------------------------------------- classes 2 and 3
def test_compute4_report_agrees_with_the_sosreports_own_outputs(tmp_path):
    """The real binary on the compute4 sosreport (its sys/ as hotsos kept it): every storage and
    virt field the report shows is what lsblk, blockdev --report, dmsetup info -c, hostnamectl
    and uptime say."""
    root = copy(tmp_path, COMPUTE4)
    field_roots.compute4_sys(field_roots.root(root))
    doc = report(root)
    devices = doc["sections"]["storage"]["devices"]
    info = parse_info_columns(sos_output(root, "devicemapper/dmsetup_info_-c"))
    kernel = {e.name: k for k, e in info.items()}
    lsblk = sos_output(root, "block/lsblk")
    for row in parse_lsblk_rows(lsblk):       # every device lsblk lists with its number
        assert row.name is not None, row
        name = kernel.get(row.name, row.name)
        if name in devices:
            assert devices[name]["maj_min"] == row.devno, name
    for upper, lower in lsblk_edges(lsblk):   # and the stack it draws
        assert upper.name is not None and lower.name is not None, (upper, lower)
        up, low = kernel.get(upper.name, upper.name), kernel.get(lower.name, lower.name)
        if up in devices and devices[up]["type"] != "part":
            assert low in devices[up]["slaves"], (up, low)
    for line in sos_output(root, "block/blockdev_--report").splitlines()[1:]:
        size, dev = line.split()[5:7]
        if dev[5:] in devices:
            assert devices[dev[5:]]["size_bytes"] == int(size), dev
    dm = doc["sections"]["storage"]["dm"]
    assert {n: d["dm_name"] for n, d in dm.items()} == {k: e.name for k, e in info.items()}
    assert doc["sections"]["virt"]["summary"] == "kvm > hardware"       # hostnamectl: kvm
    assert doc["sections"]["cpu"]["load_average"] == [3.58, 3.27, 2.58]  # uptime
    text = run_bin("report", "--root", str(root), "--section", "storage").stdout
    assert "from holders/ of the lower devices, dmsetup ls --tree, lsblk" in text
