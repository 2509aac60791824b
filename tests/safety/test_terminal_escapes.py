"""Host strings from a capture never act on the operator's terminal: a NIC named with an OSC
sequence set the window title through `top`, went raw into Prometheus labels, and a bidi
override (U+202E) reversed the report header. Control and bidi/format characters are shown as
\\xNN / \\uNNNN in every text output; Prometheus labels stay valid exposition format."""
from __future__ import annotations

import json
import os
import shutil
import sys
import unicodedata
from typing import Any

import pytest

from conftest import fixture_root, run_cli
from inspector.text.escapes import printable, visible

EVIL_NIC = "ev\x1b]0;pwned\x07\u202e"               # OSC "set window title", then RLO
QUOTED_NIC = 'q"\\\nx'                               # quote, backslash, newline
EVIL_HOST = "db1\u202eevil\x1b[2J\u2066"


def _raw_controls(text: str) -> list[str]:
    return sorted({c for c in text if c not in "\t\n"
                   and unicodedata.category(c) in ("Cc", "Cf", "Cs", "Zl", "Zp")})


@pytest.fixture
def hostile_root(tmp_path):
    """A host tree (from the net-errors fixture) as a hostile capture would unpack it: NICs and
    a hostname carrying escape sequences and bidi controls."""
    root = tmp_path / "root"
    shutil.copytree(fixture_root("net-errors"), root, symlinks=True)
    for name in (EVIL_NIC, QUOTED_NIC):
        shutil.copytree(root / "sys/devices/virtual/net/lo", root / f"sys/devices/virtual/net/{name}",
                        symlinks=True)
        os.symlink(f"../../devices/virtual/net/{name}", root / f"sys/class/net/{name}")
    (root / "proc/sys/kernel").mkdir(parents=True, exist_ok=True)
    (root / "proc/sys/kernel/hostname").write_text(EVIL_HOST + "\n")
    (root / "proc/uptime").write_text("1000.00 1900.00\n")         # top: averages since boot
    (root / "proc/loadavg").write_text("0.10 0.20 0.30 1/100 4242\n")
    (root / "proc/stat").write_text("cpu  100 0 100 1000 10 0 5 0 0 0\n"
                                    "cpu0 100 0 100 1000 10 0 5 0 0 0\n"
                                    "ctxt 1000\nbtime 1700000000\nprocs_running 1\n"
                                    "procs_blocked 0\nintr 500\n")
    return str(root)


def test_top_shows_a_hostile_nic_name_escaped(hostile_root):
    res = run_cli("top", "--root", hostile_root, "--all")
    assert res.status == 0, res.err
    assert _raw_controls(res.out) == []
    assert "ev\\x1b]0;pwned\\x07\\u202e" in res.out


def test_prometheus_labels_are_escaped_and_parse(hostile_root):
    from prometheus_client.parser import text_string_to_metric_families
    res = run_cli("export", "--prometheus", "--root", hostile_root)
    assert res.status == 0, res.err
    assert _raw_controls(res.out) == []
    nics = {s.labels["nic"] for family in text_string_to_metric_families(res.out)
            for s in family.samples if "nic" in s.labels}
    assert visible(EVIL_NIC) in nics            # shown as \x1b... text, never the byte
    assert QUOTED_NIC in nics                   # \\, \" and \n as the format defines


def test_the_report_header_shows_bidi_controls_escaped(hostile_root):
    res = run_cli("report", "--root", hostile_root)
    assert res.status == 0, res.err
    assert _raw_controls(res.out) == []
    assert "db1\\u202eevil\\x1b[2J\\u2066" in res.out.splitlines()[0]


def test_diff_shows_hostile_strings_escaped(tmp_path):
    doc: dict[str, Any] = {"kind": "inspector-snapshot", "snapshot_version": 1, "created_at": 1.0,
           "report": {"host": {"hostname": "db1"}, "sections": {},
                      "findings": [{"level": "warn", "subject": "eth0\x1b]0;x\x07",
                                    "message": "m\u202eessage", "code": "net.a"}]},
           "probes": []}
    before = tmp_path / "a.json"
    before.write_text(json.dumps({**doc, "report": {**doc["report"], "findings": []}}))
    after = tmp_path / "b.json"
    after.write_text(json.dumps(doc))
    res = run_cli("diff", str(before), str(after))
    assert res.status == 1 and _raw_controls(res.out) == [], res.out
    assert "m\\u202eessage" in res.out


def test_history_shows_a_hostile_target_escaped(tmp_path):
    from conftest import FIXTURES
    db = str(tmp_path / "h.sqlite")
    res = run_cli("history", "import-ioping", str(FIXTURES / "samples/ioping/periodic-log.txt"),
                  "--target", "/data\x1b]0;x\x07", "--db", db)
    assert res.status == 0, res.err
    res = run_cli("history", "--db", db)
    assert res.status == 0 and _raw_controls(res.out) == [], res.out
    assert "/data\\x1b]0;x\\x07" in res.out


def test_visible_escapes_exactly_the_hidden_categories():
    hidden = ("Cc", "Cf", "Cs", "Zl", "Zp")
    for code in range(sys.maxunicode + 1):
        char = chr(code)
        shown = visible(char)
        if char in "\t\n" or unicodedata.category(char) not in hidden:
            assert shown == char, hex(code)
        else:
            assert shown.startswith("\\") and _raw_controls(shown) == [], hex(code)
    assert visible("héllo 日本 🙂") == "héllo 日本 🙂"
    assert visible("\x1b\u202e\U000e0001\udc80") == "\\x1b\\u202e\\U000e0001\\udc80"


def test_printable_keeps_named_tuples():
    from collections import namedtuple
    Pair = namedtuple("Pair", "a b")
    assert printable(Pair("x\x1b", 1)) == Pair("x\\x1b", 1)


# Strings from the host (a device model, vendor tool output, a capture made elsewhere) never
# reach the operator's terminal as escape sequences in `inspector report`.

HOSTILE = "EVIL\x1b]0;pwned\x07\x1b[2J\x1b[31mRED\x9b1m"


def test_control_characters_in_host_strings_are_shown_not_sent(tmp_path):
    root = tmp_path / "root"
    shutil.copytree(fixture_root("storage-md-check"), root, symlinks=True)
    (root / "sys/block/sda/device/model").write_text(HOSTILE + "\n")
    (root / "sys/block/md0/md/dev-sdc/state").write_text("in_sync\x1b[2J\n")
    res = run_cli("report", "--root", str(root))
    assert res.status == 0
    assert "\x1b" not in res.out and "\x9b" not in res.out and "\x07" not in res.out
    assert "EVIL\\x1b]0;pwned" in res.out and "in_sync\\x1b[2J" in res.out
    # --json keeps the value exactly (JSON escapes it)
    doc = run_cli("report", "--root", str(root), "--json", "--section", "storage").json()
    assert doc["sections"]["storage"]["devices"]["sda"]["model"] == HOSTILE


def test_printable_leaves_clean_reports_untouched():
    from inspector.model import to_jsonable
    from inspector.render.findings import printable
    from inspector.report.collect import build_report
    from inspector.roots.host import HostRoot
    report = build_report(HostRoot(str(fixture_root("flash-mixed"))))
    assert to_jsonable(printable(report)) == to_jsonable(report)
