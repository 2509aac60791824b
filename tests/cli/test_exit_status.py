"""One exit status rule for every command, as the README and each --help say: 0 done, 1 the
command ran and found what it looks for, 2 a usage mistake or an error (one line on stderr),
128+N stopped by signal N; `check` is a Nagios plugin (3 UNKNOWN for its usage mistakes)."""
from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path

import pytest

from conftest import fixture_root, run_bin, run_cli
from inspector.cli import COMMANDS, build_parser

ROOT = str(fixture_root("flash-mixed"))
MISSING = "/nonexistent/inspector-test"

# Every command (and sub-command) with arguments it accepts, to which a mistake is added.
VALID = {
    "report": ["report"], "capture": ["capture"], "top": ["top"],
    "probe io": ["probe", "io", "/tmp"], "probe memcached": ["probe", "memcached", "127.0.0.1"],
    "probe dns": ["probe", "dns"], "snapshot": ["snapshot"], "diff": ["diff", "a", "b"],
    "record": ["record"], "history": ["history"],
    "history import-ioping": ["history", "import-ioping", "LOG"], "check": ["check"],
    "export": ["export", "--json"], "fleet": ["fleet", "DIR"], "tui": ["tui"],
    "completion": ["completion", "bash"], "files": ["files"],
}
USAGE_STATUS = {"check": 3}


def test_the_table_covers_every_command():
    assert {name.split()[0] for name in VALID} == set(COMMANDS)


@pytest.mark.parametrize("name", VALID)
def test_an_unknown_option_is_a_usage_mistake(name):
    res = run_cli(*VALID[name], "--no-such-option")
    assert res.status == USAGE_STATUS.get(name, 2), (res.status, res.out, res.err)
    text = res.out if name == "check" else res.err
    assert text.strip().count("\n") == 0 and "--no-such-option" in text, text


# (arguments, status, what the one line says): usage mistakes and errors, then findings
CASES = [
    # usage mistakes: a bad value, a missing or extra argument, an unknown command
    (["bogus-command"], 2, "invalid choice: 'bogus-command'"),
    (["report", "--timeout", "soon"], 2, "is not a number or a duration"),
    (["report", "--section", "gpu"], 2, "unknown section 'gpu'"),
    (["capture", "--timeout", "0"], 2, "must be greater than 0"),
    (["top", "--interval", "-1"], 2, "must be greater than 0"),
    (["probe", "io", "/tmp", "-c", "0"], 2, "'0' must be at least 1"),     # was 1 (ioping's)
    (["probe", "io", "/tmp", "-s", "abc"], 2, "invalid size 'abc'"),       # was 1 (ioping's)
    (["probe", "io", "/tmp", "--ramp", "-c", "5"], 2, "-c does not apply"),
    (["probe", "io", "/tmp", "-j", "257", "-c", "300"], 2, "'257' must be at most 256"),
    (["probe", "io"], 2, "the following arguments are required: TARGET"),
    (["probe", "memcached", "127.0.0.1", "-t", "delete"], 2, "invalid choice: 'delete'"),
    (["probe", "memcached", "nonexistent.invalid"], 2, "cannot resolve nonexistent.invalid"),
    (["probe", "dns", "--count", "0"], 2, "must be at least 1"),
    (["probe", "nfs"], 2, "invalid choice: 'nfs'"),
    (["snapshot", "--probe", "nfs:/srv"], 2, "nfs"),
    (["diff", "a.json"], 2, "the following arguments are required: AFTER"),
    (["diff", "-", "-"], 2, "cannot both be -"),
    (["record", "--every", "soon"], 2, "is not a number or a duration"),
    (["history", "--by", "week"], 2, "invalid choice: 'week'"),
    (["history", "--checks", "--probe", "io:/srv"], 2, "choose one"),
    (["export"], 2, "one of the arguments --prometheus --json is required"),
    (["export", "--json", "--probe", "dns"], 2, "--probe goes with --prometheus"),
    (["fleet", "DIR", "AFTER", "--level", "warn"], 2, "go with one DIR"),
    (["tui", "--probe", "nfs:/srv"], 2, "nfs"),
    (["completion", "fish"], 2, "invalid choice: 'fish'"),
    (["files", "emacs"], 2, "invalid choice: 'emacs'"),
    # errors: what the command was given cannot be read or written
    (["report", "--root", MISSING], 2, MISSING),
    (["capture", "-o", "/dev/null"], 2, "/dev/null"),
    (["top", "--root", MISSING], 2, MISSING),
    (["probe", "io", MISSING], 2, MISSING),
    (["probe", "io", "/tmp", "--root", ROOT], 2, "cannot run on --root"),
    (["probe", "dns", "--resolv-conf", MISSING], 2, MISSING),
    (["snapshot", "--root", MISSING], 2, MISSING),
    (["diff", MISSING, MISSING + "2"], 2, MISSING),
    (["record", "--once", "--db", MISSING + "/h.sqlite"], 2, MISSING),
    (["history", "--db", "/tmp"], 2, "not a history database"),
    (["history", "import-ioping", MISSING], 2, MISSING),
    (["export", "--prometheus", "--root", MISSING], 2, MISSING),
    (["fleet", MISSING], 2, MISSING),
]


@pytest.mark.parametrize("argv, status, says", CASES, ids=lambda v: " ".join(v)
                         if isinstance(v, list) else None)
def test_usage_mistakes_and_errors_exit_2_with_one_line(argv, status, says):
    res = run_cli(*argv)
    assert res.status == status, (res.status, res.out[-300:], res.err)
    assert res.err.strip().count("\n") == 0 and says in res.err, res.err
    assert "Traceback" not in res.err and "internal error" not in res.err


@pytest.mark.parametrize("argv", [["check", "--warn", "steal=x"], ["check", "--root", MISSING],
                                  ["check", "--timeout", "soon"]])
def test_check_says_unknown_for_its_mistakes(argv):
    res = run_cli(*argv)
    assert res.status == 3 and res.out.startswith("INSPECTOR UNKNOWN - "), (res.status, res.out)


# --------------------------------------------------------------- 1: ran and found something
@pytest.fixture(scope="module")
def snapshots(tmp_path_factory) -> tuple[Path, Path]:
    """A snapshot of a fixture root, and the same with a new critical finding."""
    where = tmp_path_factory.mktemp("snapshots")
    before, after = where / "before.json", where / "after.json"
    res = run_cli("snapshot", "--root", ROOT, "-o", str(before))
    assert res.status == 0, res.err
    worse = json.loads(before.read_text())
    worse = copy.deepcopy(worse)
    worse["report"]["findings"].append({"level": "crit", "subject": "md9", "message": "degraded",
                                        "code": "md.degraded", "evidence": [], "advice": ""})
    after.write_text(json.dumps(worse))
    return before, after


def _fleet(tmp_path: Path, name: str, snapshot: Path) -> str:
    host = tmp_path / name / "db1" / "var" / "tmp"
    host.mkdir(parents=True)
    shutil.copy(snapshot, host / "inspector.json")
    return str(tmp_path / name)


def test_found_exits_1(tmp_path, snapshots):
    before, after = snapshots
    assert run_cli("diff", str(before), str(before)).status == 0
    res = run_cli("diff", str(before), str(after))
    assert res.status == 1, res.err
    assert run_cli("fleet", _fleet(tmp_path, "a", before), _fleet(tmp_path, "b", after)).status == 1
    res = run_cli("history", "--db", str(tmp_path / "empty.sqlite"))
    assert res.status == 1 and "no recorded runs" in res.err
    log = tmp_path / "ioping.log"
    log.write_text("not an ioping log\n")
    res = run_cli("history", "import-ioping", str(log), "--db", str(tmp_path / "h.sqlite"))
    assert res.status == 1 and "skipped" in res.err
    assert run_cli("check", "--root", str(fixture_root("xen-pv-guest"))).status == 1  # WARNING


def test_a_probe_that_finds_a_problem_exits_1():
    # nothing listens on port 1 of loopback: the nameserver refuses, the memcached server is down
    res = run_bin("probe", "dns", "--server", "127.0.0.1:1", "--timeout", "1s", timeout=30)
    assert res.returncode == 1 and "refused" in res.stdout, (res.returncode, res.stderr)
    res = run_bin("probe", "memcached", "127.0.0.1:1", "-e", "1", timeout=30)
    assert res.returncode == 1 and "connection refused" in res.stderr, res.stderr


def test_done_exits_0(tmp_path):
    assert run_cli("report", "--root", ROOT, "--section", "cpu").status == 0
    assert run_cli("files").status == 0 and run_cli("completion", "zsh").status == 0
    data = tmp_path / "data.bin"
    data.write_bytes(b"\0" * (1 << 20))
    res = run_cli("probe", "io", str(data), "-c", "3", "-q", "--cached")
    assert res.status == 0, res.err


# ---------------------------------------------------------------- versions and --help
@pytest.mark.parametrize("flag", ["-V", "--version"])
def test_version(flag):
    from inspector import __version__
    res = run_bin(flag)
    assert res.returncode == 0 and res.stdout.strip() == f"inspector {__version__}"


def _parsers():
    parser = build_parser()
    todo = [parser]
    while todo:
        p = todo.pop()
        yield p
        for action in p._actions:
            if hasattr(action, "choices") and isinstance(action.choices, dict):
                todo.extend(dict.fromkeys(action.choices.values()))


# Commands whose module is being changed by someone else right now: their epilog comes with
# that change (then this test fails until the name is removed here, so the list only shrinks)
EPILOG_PENDING: set[str] = set()


def test_every_help_states_its_exit_status():
    parsers = list(_parsers())
    assert len(parsers) >= len(COMMANDS) + 4      # probe's kinds, history's import
    missing = {p.prog for p in parsers if "exit status" not in p.format_help().lower()}
    assert missing - EPILOG_PENDING == set(), "say the exit status in the --help epilog"
    assert EPILOG_PENDING - missing == set(), "now stated: remove from EPILOG_PENDING"


def test_help_of_the_top_level_states_the_rule():
    text = " ".join(build_parser().format_help().split())
    assert "2 usage mistake or error (one line on stderr)" in text
    assert "check is a Nagios plugin: 0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN" in text
