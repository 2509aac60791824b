"""`inspector fleet`: real snapshots (and a real capture of this host) laid out as Ansible's
fetch writes them, one row per host, worst first, filters, JSON, unreadable files as rows of
their own, the per-host diff with `diff`'s exit rule, and the speed of a few hundred hosts."""
from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
from pathlib import Path

import pytest

from conftest import fixture_root, run_cli
from inspector.compare.fleet import read_fleet

# host name -> fixture root its snapshot is taken from
HOSTS = {"flash-01": "flash-mixed", "md-01": "storage-raid1-recovering",
         "net-01": "net-errors", "xen-01": "xen-pv-guest", "xen-02": "xen-pv-guest",
         "nvme-01": "nvme-bare-metal"}
FETCHED = "var/tmp/inspector.json"       # the src path Ansible's fetch keeps under DIR/<host>/


@pytest.fixture(scope="module")
def snapshots(tmp_path_factory) -> dict[str, Path]:
    """Real `inspector snapshot` outputs, one per fixture root, and one of this host with a
    real IO probe run."""
    out = tmp_path_factory.mktemp("snapshots")
    made = {}
    for root in set(HOSTS.values()) | {"storage-raid1-faulty"}:
        path = out / f"{root}.json"
        res = run_cli("snapshot", "--root", str(fixture_root(root)), "-o", str(path))
        assert res.status == 0, res.err
        made[root] = path
    live = out / "live.json"
    # 1 s: on a loaded machine the warm-up request alone took 0.3 s, leaving nothing timed
    res = run_cli("snapshot", "-o", str(live), "--probe", f"io:{out}", "--probe-seconds", "1")
    assert res.status == 0, res.err
    made["live"] = live
    return made


def _place(directory: Path, host: str, source: Path, hostname: str | None = None,
           created_at: float | None = None, rel: str = FETCHED) -> Path:
    doc = json.loads(source.read_text())
    if hostname:
        doc["report"]["host"]["hostname"] = hostname
    if created_at is not None:
        doc["created_at"] = created_at
    path = directory / host / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc))
    return path


@pytest.fixture
def fleet_dir(tmp_path, snapshots) -> Path:
    directory = tmp_path / "before"
    for host, root in HOSTS.items():
        _place(directory, host, snapshots[root], hostname=host)
    _place(directory, "app-01", snapshots["live"], hostname="app-01")
    return directory


def _json(*args: str) -> dict:
    res = run_cli("fleet", *args, "--json")
    assert res.status in (0, 1, 2), res.err
    return res.json()


def test_one_row_per_host_worst_first(fleet_dir):
    doc = _json(str(fleet_dir))
    assert doc["kind"] == "inspector-fleet" and doc["schema_version"] == 1
    rows = {r["host"]: r for r in doc["hosts"]}
    assert set(rows) == {*HOSTS, "app-01"}
    order = [r["level"] for r in doc["hosts"]]
    rank = {"crit": 0, "unknown": 1, "warn": 2, "ok": 3}
    assert order == sorted(order, key=lambda level: rank[level]) and order[0] == "crit"
    flash = rows["flash-01"]
    assert flash["worst"].startswith("fct1: card failed") and flash["findings"] == 11
    assert flash["drives"] == {"hioa": "crit", "fct1": "crit", "fioa": "warn", "sda": "warn",
                               "hiob": "unknown", "nvme0n1": "ok"}
    assert rows["md-01"]["md"] == {"md0": "rebuilding", "md1": "rebuilding 9%"}
    assert rows["xen-01"]["virt"] == "xen (PV, plain) > hardware"
    assert rows["xen-01"]["nic_anomalies"] == ["eth0 xen_tso"]     # TSO on a Xen vif
    assert rows["xen-01"]["dns_failover_s"] == 1
    assert "eno2 carrier_down" in rows["net-01"]["nic_anomalies"]
    probe = rows["app-01"]["probes"][0]
    assert probe["spec"].startswith("io:") and probe["p99_us"] > 0 and probe["error"] is None
    assert all(0 <= r["age_s"] < 600 for r in doc["hosts"])
    expected = {"flash-01": "crit", "md-01": "crit", "net-01": "unknown", "xen-01": "warn",
                "xen-02": "warn", "nvme-01": "ok"}
    assert {h: rows[h]["level"] for h in HOSTS} == expected
    levels = [r["level"] for r in doc["hosts"]]       # app-01 is this host: any level
    assert doc["summary"] == {"hosts": 7, **{lv: levels.count(lv) for lv in rank},
                              "unreadable_files": 0, "stale": 0}


def test_filters(fleet_dir):
    def hosts(*args):
        return [r["host"] for r in _json(str(fleet_dir), *args)["hosts"]]
    assert sorted(hosts("--where", "virt=xen")) == ["xen-01", "xen-02"]
    assert sorted(hosts("--where", "virt=XEN", "--where", "host=*-02")) == ["xen-02"]
    assert hosts("--level", "crit") == ["flash-01", "md-01"]
    assert set(hosts("--level", "warn")) - {"app-01"} == set(HOSTS) - {"nvme-01"}
    assert set(hosts("--level", "unknown")) - {"app-01"} == {"flash-01", "md-01", "net-01"}
    assert hosts("--where", "code=md.*") == ["md-01"]
    res = run_cli("fleet", str(fleet_dir), "--where", "colour=red")
    assert res.status == 2 and res.err.count("\n") == 1 and "KEY one of host" in res.err


def test_newest_snapshot_of_a_host_makes_its_row(fleet_dir, snapshots):
    _place(fleet_dir, "xen-01", snapshots["storage-raid1-faulty"], hostname="xen-01",
           created_at=time.time() - 86400, rel="var/tmp/inspector-yesterday.json")
    rows = {r["host"]: r for r in _json(str(fleet_dir))["hosts"]}
    assert rows["xen-01"]["snapshots"] == 2 and rows["xen-01"]["level"] == "warn"
    _place(fleet_dir, "xen-01", snapshots["storage-raid1-faulty"], hostname="xen-01",
           created_at=time.time() + 60, rel="var/tmp/inspector-later.json")
    rows = {r["host"]: r for r in _json(str(fleet_dir))["hosts"]}
    assert rows["xen-01"]["level"] == "crit" and rows["xen-01"]["file"].endswith("later.json")


def test_unreadable_and_foreign_files_are_rows_of_their_own(fleet_dir, snapshots):
    whole = (fleet_dir / "net-01" / FETCHED).read_bytes()
    (fleet_dir / "cut-01" / "var/tmp").mkdir(parents=True)
    (fleet_dir / "cut-01" / FETCHED).write_bytes(whole[:len(whole) // 2])
    (fleet_dir / "foreign-01" / "var/tmp").mkdir(parents=True)
    (fleet_dir / "foreign-01" / FETCHED).write_text('{"kind": "something-else"}')
    (fleet_dir / "zero-01" / "var/tmp").mkdir(parents=True)
    (fleet_dir / "zero-01" / FETCHED).write_bytes(os.urandom(4096))
    (fleet_dir / "fifo-01" / "var/tmp").mkdir(parents=True)
    os.mkfifo(fleet_dir / "fifo-01" / FETCHED)           # nobody writes: must not hang
    (fleet_dir / "xen-02" / "var/tmp/notes.txt").write_text("maintenance at 02:00\n")
    (fleet_dir / ".ansible_tmp").mkdir()                  # hidden: skipped
    res = run_cli("fleet", str(fleet_dir), "--json")
    assert res.status == 0, res.err
    doc = res.json()
    errors = {r["file"]: r["error"] for r in doc["hosts"] if r["error"]}
    assert set(errors) == {f"cut-01/{FETCHED}", f"foreign-01/{FETCHED}", f"zero-01/{FETCHED}",
                           f"fifo-01/{FETCHED}", "xen-02/var/tmp/notes.txt"}
    assert "truncated" in errors[f"cut-01/{FETCHED}"]
    assert "not an Inspector snapshot" in errors[f"foreign-01/{FETCHED}"]
    assert "FIFO" in errors[f"fifo-01/{FETCHED}"] or "fifo" in errors[f"fifo-01/{FETCHED}"]
    assert not any(str(fleet_dir) in e for e in errors.values())   # the row names the file
    assert doc["summary"]["unreadable_files"] == 5 and doc["summary"]["hosts"] == 7
    rows = {r["host"]: r for r in doc["hosts"] if not r["error"]}
    assert rows["xen-02"]["level"] == "warn"         # its snapshot still read
    assert all(r["level"] == "unknown" for r in doc["hosts"] if r["error"])


def test_a_capture_is_read_like_report_root(tmp_path, fleet_dir, monkeypatch):
    capture = tmp_path / "this-host.tar.gz"
    assert run_cli("capture", "-o", str(capture)).status == 0
    (fleet_dir / "cap-01" / "var/tmp").mkdir(parents=True)
    shutil.copy(capture, fleet_dir / "cap-01" / "var/tmp/capture.tar.gz")
    private_tmp = tmp_path / "tmp"         # this test's own /tmp: other tests unpack at once
    private_tmp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(private_tmp))
    rows = {r["host"]: r for r in _json(str(fleet_dir))["hosts"]}
    # unpacked and removed at once, not at exit: a fleet of captures would fill /tmp
    assert os.listdir(private_tmp) == []
    report = run_cli("report", "--root", str(capture), "--json").json()
    assert rows["cap-01"]["virt"] == report["sections"]["virt"]["summary"]
    assert rows["cap-01"]["findings"] == sum(f["level"] != "ok" for f in report["findings"])


def test_text_table_fits_the_terminal_and_says_the_rest(fleet_dir, monkeypatch):
    shutil.rmtree(fleet_dir / "app-01")          # this host: its level is not the test's
    (fleet_dir / "bad-01").mkdir()
    (fleet_dir / "bad-01" / "x.json").write_text("{")
    (fleet_dir / "esc\x1b]0;pwned\x07-01" / "var/tmp").mkdir(parents=True)
    shutil.copy(fleet_dir / "xen-01" / FETCHED, fleet_dir / "esc\x1b]0;pwned\x07-01" / FETCHED)
    for width in (80, 132, 200):        # on a terminal: fitted to it
        out = on_terminal("fleet", str(fleet_dir), columns=width)
        lines = out.split("\n\nHOSTS  FINDING CODE")[0].splitlines()
        assert lines[0].split()[:4] == ["LEVEL", "HOST", "N", "AGE"], lines[0]
        assert all(len(line) <= width for line in lines[:-1]), [len(x) for x in lines]
        assert lines[-1] == "7 hosts: 2 crit, 1 unknown, 3 warn, 1 ok; 1 unreadable file"
        assert lines[1].startswith("CRIT ") and "\x1b" not in out
        assert any(line.startswith("UNREAD ") and "bad-01" in line for line in lines)
    res = run_cli("fleet", str(fleet_dir), "--where", "virt=xen")
    summary = res.out.split("\n\nHOSTS  FINDING CODE")[0].splitlines()[-1]
    assert summary.endswith("(3 shown)") and "esc\\x1b]0;pwned\\x07-01" in res.out


def test_usage_and_empty_directories(tmp_path):
    res = run_cli("fleet", str(tmp_path / "missing"))
    assert res.status == 2 and "not a directory" in res.err
    res = run_cli("fleet", str(tmp_path))
    assert res.status == 2 and "no snapshots or captures" in res.err
    res = run_cli("fleet", str(tmp_path), str(tmp_path), "--level", "warn")
    assert res.status == 2 and "go with one DIR" in res.err


def test_fleet_diff_uses_diff_and_its_exit_rule(tmp_path, fleet_dir, snapshots):
    after = tmp_path / "after"
    shutil.copytree(fleet_dir, after)
    res = run_cli("fleet", str(fleet_dir), str(after))
    assert res.status == 0, res.out + res.err
    assert res.out.splitlines()[-1] == "7 hosts: 0 with regressions, 0 not compared, " \
                                       "7 without regressions"
    # md-01's array lost a member and stopped rebuilding: a regression, as `diff` says
    _place(after, "md-01", snapshots["storage-raid1-faulty"], hostname="md-01")
    shutil.rmtree(after / "nvme-01")                      # did not come back
    doc = _json(str(fleet_dir), str(after))
    assert doc["status"] == 1
    rows = {r["host"]: r for r in doc["hosts"]}
    alone = run_cli("diff", str(fleet_dir / "md-01" / FETCHED), str(after / "md-01" / FETCHED),
                    "--json").json()
    assert rows["md-01"]["regressions"] == alone["regressions"] > 0
    assert rows["md-01"]["changes"] == len(alone["changes"])
    assert any("md.member_faulty@md0" in note for note in rows["md-01"]["notes"])
    assert rows["nvme-01"]["status"] == 2 and "no snapshot in AFTER" in rows["nvme-01"]["error"]
    assert doc["hosts"][0]["host"] == "md-01"             # regressions first
    # without the regression: a host not compared is exit 2
    _place(after, "md-01", snapshots["storage-raid1-recovering"], hostname="md-01")
    res = run_cli("fleet", str(fleet_dir), str(after))
    assert res.status == 2, res.out
    assert any(line.startswith("NOT COMPARED  nvme-01") for line in res.out.splitlines())


@pytest.mark.serial
def test_a_few_hundred_hosts_quickly(tmp_path, snapshots):
    """The benchmark (tests/bench/bench_fleet.py) reads 500; here 150 in well under 2 s."""
    sources = [snapshots[name] for name in sorted(snapshots)]
    for i in range(150):
        _place(tmp_path, f"host{i:03d}", sources[i % len(sources)], hostname=f"host{i:03d}")
    start = time.perf_counter()
    rows = read_fleet(str(tmp_path))
    took = time.perf_counter() - start
    assert len(rows) == 150 and not any(r.error for r in rows)
    assert took < 2.0, took


# ------------------------------------------------------- pipes, codes, stale, diffs as data
def test_rows_are_whole_into_a_pipe_and_with_wide(fleet_dir):
    """`inspector fleet DIR | less` cut rows at the terminal's width with '…': into a pipe
    (or a file, or with --wide) nothing is cut; COLUMNS only fits rows on a terminal."""
    from conftest import run_bin
    worst = _json(str(fleet_dir))["hosts"][0]["worst"]
    piped = run_bin("fleet", str(fleet_dir), env={"COLUMNS": "60"})
    assert piped.returncode == 0, piped.stderr
    assert "…" not in piped.stdout and worst in piped.stdout
    assert max(len(line) for line in piped.stdout.splitlines()) > 126
    wide = run_bin("fleet", str(fleet_dir), "--wide", env={"COLUMNS": "60"}).stdout
    assert "…" not in wide and worst in wide


def on_terminal(*args: str, columns: int = 80) -> str:
    """The real binary's output on a terminal (a pty) COLUMNS wide."""
    import pty

    from conftest import inspector_bin
    pid, fd = pty.fork()
    if pid == 0:                         # the child: exec at once, nothing else
        os.execve(inspector_bin(), [inspector_bin(), *args],
                  {**os.environ, "COLUMNS": str(columns), "LINES": "50"})
    chunks = []
    while True:
        try:
            data = os.read(fd, 65536)
        except OSError:                  # EIO: the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    os.waitpid(pid, 0)
    os.close(fd)
    return b"".join(chunks).decode().replace("\r\n", "\n")


def test_rows_are_fitted_on_a_terminal_unless_wide(fleet_dir):
    fitted = on_terminal("fleet", str(fleet_dir))
    assert "…" in fitted and max(map(len, fitted.splitlines())) <= 80
    assert "…" not in on_terminal("fleet", str(fleet_dir), "--wide")


def test_hosts_per_finding_code(fleet_dir):
    doc = _json(str(fleet_dir))
    expected: dict[str, int] = {}
    for row in doc["hosts"]:
        for code in row["codes"]:
            expected[code] = expected.get(code, 0) + 1
    assert doc["codes"] == expected and doc["codes"]["net.xen_tso"] == 2   # xen-01, -02
    counts = list(doc["codes"].values())
    assert counts == sorted(counts, reverse=True)               # most hosts first
    text = run_cli("fleet", str(fleet_dir)).out
    assert "HOSTS  FINDING CODE" in text
    assert any(line.split() == ["2", "net.xen_tso"] for line in text.splitlines())
    # with a filter, the hosts shown
    xen = _json(str(fleet_dir), "--where", "virt=xen")
    assert xen["codes"]["net.xen_tso"] == 2 and "fio.failed" not in xen["codes"]


def test_old_snapshots_are_marked_stale(tmp_path, snapshots):
    directory = tmp_path / "fleet"
    _place(directory, "fresh-01", snapshots["nvme-bare-metal"], hostname="fresh-01")
    _place(directory, "old-01", snapshots["nvme-bare-metal"], hostname="old-01",
           created_at=time.time() - 3 * 86400)
    doc = _json(str(directory))
    stale = {r["host"]: r["stale"] for r in doc["hosts"]}
    assert stale == {"fresh-01": False, "old-01": True} and doc["summary"]["stale"] == 1
    text = run_cli("fleet", str(directory)).out
    row = next(line for line in text.splitlines() if "old-01" in line)
    assert "3d stale" in row and "1 stale (snapshot older than 1d)" in text
    assert not any(r["stale"] for r in _json(str(directory), "--stale-after", "4d")["hosts"])


def test_fleet_diff_regressions_as_data(tmp_path, fleet_dir, snapshots):
    """Each regression as field, before, after and unit, the same as `diff --json` says."""
    after = tmp_path / "after"
    shutil.copytree(fleet_dir, after)
    _place(after, "md-01", snapshots["storage-raid1-faulty"], hostname="md-01")
    doc = _json(str(fleet_dir), str(after))
    md = next(r for r in doc["hosts"] if r["host"] == "md-01")
    alone = run_cli("diff", str(fleet_dir / "md-01" / FETCHED), str(after / "md-01" / FETCHED),
                    "--json").json()
    regressions = [c for c in alone["changes"] if c["regression"]]
    assert [(r["field"], r["before"], r["after"], r["kind"]) for r in md["regressed"]] == \
        [(c["path"], c["before"], c["after"], c["kind"]) for c in regressions]
    assert len(md["regressed"]) == md["regressions"] == len(md["notes"])
    assert all(set(r) == {"field", "before", "after", "unit", "kind"} for r in md["regressed"])
    quiet = [r for r in doc["hosts"] if r["host"] != "md-01"]
    assert all(r["regressed"] == [] for r in quiet)


def test_units_of_regressed_fields():
    from inspector.compare.fleet import unit_of
    assert unit_of("probes.io:/srv.p99_us") == "us"
    assert unit_of("probes.io:/srv.bytes_per_s") == "B/s"
    assert unit_of("probes.io:/srv.ops_per_s") == "1/s"
    assert unit_of("sections.dns.first_server_loss_delay_s") == "s"
    assert unit_of("sections.cpu.steal_percent") == "%"
    assert unit_of("sections.storage.devices.sda.size_bytes") == "B"
    assert unit_of("sections.storage.md.md0.degraded") == ""
