"""The history database on a filesystem that stops answering: a held lookup (a silent FUSE
directory, hung_mount.SilentFuse) or a held read after the open (stall_mount's file, its READs
held) left `history --db`, `top --db`, `record --once --db` and `history import-ioping LOG
--db` asleep until killed (40-120 s tried), deaf to SIGINT and SIGTERM. Now each gives up
after STALL_S without progress, in one line, and a signal ends it at once. The real binary,
in a private mount namespace; nothing it leaves stays stuck once the mount answers."""
from __future__ import annotations

import signal

import pytest

from conftest import FIXTURES, fixture_root, inspector_bin, require_root
from hung_mount import run_hung
from inspector.record.bounded_history import STALL_S
from overlapped_runs import OverlappedRuns, selected_params
from slowness import slack
from stall_mount import run_stalled

pytestmark = [pytest.mark.root, pytest.mark.slow]
QUIET_OVERHEAD = 2.0     # start-up, the fork, the one line out, on a quiet machine
ROOT = str(fixture_root("xen-pv-guest"))
LOG = str(FIXTURES / "samples/ioping/periodic-log.txt")


@pytest.fixture(autouse=True)
def _root():
    require_root()


def _commands(db: str) -> dict[str, list[str]]:
    return {
        "history": ["history", "--db", db],
        "history --checks": ["history", "--checks", "--db", db],
        "history --samples": ["history", "--samples", "--db", db],
        "top --db": ["top", "--db", db, "--count", "1"],
        "record --once": ["record", "--once", "--root", ROOT, "--db", db],
        "import-ioping": ["history", "import-ioping", LOG, "--db", db],
    }


def _gave_up(res: dict, db: str) -> None:
    assert not res["hung"], res
    assert res["held"] >= 1, f"the command never touched the silent mount: {res}"
    assert res["stuck_after_release"] == 0, res
    assert res["status"] == 2, res
    assert res["after_held"] <= STALL_S + slack(QUIET_OVERHEAD), res
    lines = res["stderr"].strip().splitlines()
    assert lines[-1] == (f"inspector: {db}: no answer from its filesystem for {STALL_S:g} s "
                         "(a hung mount? look for processes in D state)"), res["stderr"]


LOOKUP_HELD = list(_commands("DB"))
READS_HELD = ["history", "top --db", "record --once"]
SIGTERM_ON_HELD_READS = ["top --db", "record --once"]


def _on_a_held_lookup(directory, command: str, **ending) -> tuple[dict, str]:
    mount = directory / "hung"
    mount.mkdir()
    db = str(mount / "history.sqlite")
    return run_hung([str(mount)], [inspector_bin(), *_commands(db)[command]], cap=60,
                    **ending), db


def _on_held_reads(directory, command: str, **ending) -> tuple[dict, str]:
    """The lookup and the open are answered, the first read of the file is held."""
    mount = directory / "mnt"
    mount.mkdir()
    db = str(mount / "disk.img")
    return run_stalled(str(mount), 0, [inspector_bin(), *_commands(db)[command]], cap=60,
                       **ending), db


@pytest.fixture(scope="module")
def runs(request, tmp_path_factory):
    """Every selected test's command, their STALL_S waits overlapped (12 runs of ~7 s each
    took 94 s one after another)."""
    require_root()
    runs = OverlappedRuns(at_once=12, stagger=0.5)

    def start(test: str, make, command: str, **ending) -> None:
        for params in selected_params(request, test):
            if params.get("command", command) == command:
                runs.start((test, command), make, tmp_path_factory.mktemp("db"), command,
                           **ending)
    for command in LOOKUP_HELD:
        start("test_a_database_whose_lookup_never_answers", _on_a_held_lookup, command)
    start("test_ctrl_c_ends_history_on_a_hung_database", _on_a_held_lookup, "history",
          signal_after=1.0, signal_from="held")    # 1 s after it reached the mount
    for command in READS_HELD:
        start("test_a_database_whose_reads_never_answer", _on_held_reads, command)
    for command in SIGTERM_ON_HELD_READS:
        start("test_sigterm_ends_the_command_on_a_database_whose_reads_never_answer",
              _on_held_reads, command, term_after=1.0)
    yield runs
    runs.close()


@pytest.mark.parametrize("command", LOOKUP_HELD)
def test_a_database_whose_lookup_never_answers(runs, command):
    res, db = runs.result(("test_a_database_whose_lookup_never_answers", command))
    print(command, "ended after", res["seconds"], "s")
    _gave_up(res, db)


@pytest.mark.parametrize("command", READS_HELD)
def test_a_database_whose_reads_never_answer(runs, command):
    """The lookup and the open are answered, the first read of the file is held."""
    res, db = runs.result(("test_a_database_whose_reads_never_answer", command))
    print(command, "ended after", res["seconds"], "s")
    _gave_up(res, db)


def test_ctrl_c_ends_history_on_a_hung_database(runs):
    res, _ = runs.result(("test_ctrl_c_ends_history_on_a_hung_database", "history"))
    assert not res["hung"] and res["stuck_after_release"] == 0, res
    assert res["status"] in (130, -signal.SIGINT), res
    assert res["signal_to_exit"] <= slack(2.0), res


@pytest.mark.parametrize("command", SIGTERM_ON_HELD_READS)
def test_sigterm_ends_the_command_on_a_database_whose_reads_never_answer(runs, command):
    res, _ = runs.result(("test_sigterm_ends_the_command_on_a_database_whose_reads_never_answer",
                          command))
    assert not res["hung"] and res["stuck_after_release"] == 0, res
    assert res["status"] in (143, -signal.SIGTERM), res
    assert res["signal_to_exit"] <= slack(2.0), res
