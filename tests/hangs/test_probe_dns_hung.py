"""`probe dns` reads its resolver configuration bounded: a --resolv-conf that is not a regular
file of sane size is refused in one line (a /dev/zero grew memory without end, a FIFO hung),
and one on a FUSE mount that never answers (hung_mount.SilentFuse), like a hostname there,
fails in one line after RESOLVE_TIMEOUT instead of hanging. The TUI's DNS form reads the file
the same way, in a child."""
from __future__ import annotations

import os
import resource
import sys
import time
from pathlib import Path

import pytest

from conftest import inspector_bin, require_root, run_bin
from hung_mount import run_hung
from inspector.probes.base import ProbeError
from inspector.probes.dns.run import RESOLVE_TIMEOUT, read_resolv_conf_bounded
from overlapped_runs import OverlappedRuns, selected_params
from slowness import slack


def _fifo(tmp: Path) -> Path:
    os.mkfifo(tmp / "fifo")
    return tmp / "fifo"


def _sparse_2gib(tmp: Path) -> Path:
    (tmp / "big").write_bytes(b"")
    os.truncate(tmp / "big", 1 << 31)
    return tmp / "big"


@pytest.mark.parametrize("make, says", [
    (lambda tmp: "/dev/zero", "a character device, not a resolv.conf file"),
    (_fifo, "a FIFO, not a resolv.conf file"),
    (_sparse_2gib, "2147483648 bytes, over the 1 MiB a resolv.conf can be"),
    (lambda tmp: tmp, "a directory, not a resolv.conf file"),
])
def test_a_resolv_conf_that_is_not_one_is_refused(tmp_path, make, says):
    path = make(tmp_path)
    start = time.monotonic()
    res = run_bin("probe", "dns", "--resolv-conf", str(path), timeout=20)
    assert time.monotonic() - start < slack(2.0)       # refused at once: the start-up
    assert res.returncode == 2 and res.stdout == "", res
    assert res.stderr == f"inspector: cannot read {path}: {says}\n"


def test_the_tui_form_reads_it_the_same_way(tmp_path):
    with pytest.raises(ProbeError, match="a character device, not a resolv.conf file"):
        read_resolv_conf_bounded("/dev/zero")
    os.mkfifo(tmp_path / "fifo")
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with pytest.raises(ProbeError, match="a FIFO"):
        read_resolv_conf_bounded(str(tmp_path / "fifo"))
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 10_000   # KiB
    good = tmp_path / "resolv.conf"
    good.write_text("nameserver 192.0.2.1\n")
    assert read_resolv_conf_bounded(str(good)) == "nameserver 192.0.2.1\n"


def _resolv_conf(tmp_path, text: str):
    file = tmp_path / "resolv.conf"
    file.write_text(text)
    return file


def _probe_on_a_silent_resolv_conf(tmp_path) -> tuple[dict, object]:
    file = _resolv_conf(tmp_path, "nameserver 192.0.2.1\n")
    return run_hung([str(file)], [inspector_bin(), "probe", "dns", "--resolv-conf", str(file),
                                  "--timeout", "0.5"]), file


def _form_on_a_silent_resolv_conf(tmp_path) -> tuple[dict, object]:
    file = _resolv_conf(tmp_path, "nameserver 192.0.2.1\n")
    return run_hung([str(file)], [sys.executable, "-c", FORM_CHECK, str(file)]), file


def _probe_with_a_silent_hostname(tmp_path) -> dict:
    conf = _resolv_conf(tmp_path, "nameserver 127.0.0.1:9\nsearch example.test\n")
    return run_hung(["/proc/sys/kernel/hostname"],
                    [inspector_bin(), "probe", "dns", "--resolv-conf", str(conf),
                     "--timeout", "0.3", "--json"])


# Two of the runs wait out RESOLVE_TIMEOUT (5 s) on a silent mount: started 2 s apart, the
# waits overlap. The form's first, its bound has its check's fork in it: the next start-up
# comes while it waits
@pytest.fixture(scope="module")
def runs(request, tmp_path_factory):
    require_root()
    runs = OverlappedRuns(at_once=3, stagger=2.0)
    for test, make in (("test_the_tui_form_on_a_resolv_conf_that_never_answers",
                        _form_on_a_silent_resolv_conf),
                       ("test_a_resolv_conf_that_never_answers", _probe_on_a_silent_resolv_conf),
                       ("test_a_hostname_that_never_answers_does_not_stop_the_probe",
                        _probe_with_a_silent_hostname)):
        for _ in selected_params(request, test):
            runs.start(test, make, tmp_path_factory.mktemp("dns"))
    yield runs
    runs.close()


@pytest.mark.root
@pytest.mark.slow
def test_a_resolv_conf_that_never_answers(runs):
    res, file = runs.result("test_a_resolv_conf_that_never_answers")
    print("probe dns ended after", res["seconds"], "s")
    assert not res["hung"] and res["held"] >= 1 and res["stuck_after_release"] == 0, res
    assert res["status"] == 2 and res["after_held"] <= RESOLVE_TIMEOUT + slack(1.5), res
    assert res["stderr"] == (f"inspector: reading {file}: no answer after 5 s (a hung "
                             "filesystem? look for processes in D state)\n")


FORM_CHECK = """
import sys, time
from inspector.probes.request import check_target
from inspector.tui.probes.runs import form_request
start = time.monotonic()
problem = check_target(form_request("dns", sys.argv[1], "5", "", False))
print(f"{time.monotonic() - start:.1f}", problem)
"""


@pytest.mark.root
@pytest.mark.slow
def test_the_tui_form_on_a_resolv_conf_that_never_answers(runs):
    """The form's check (before the confirmation, in the UI's process) says so in one line
    after RESOLVE_TIMEOUT, and leaves nothing stuck in the UI's process."""
    res, file = runs.result("test_the_tui_form_on_a_resolv_conf_that_never_answers")
    assert not res["hung"] and res["held"] >= 1 and res["stuck_after_release"] == 0, res
    took, problem = res["stdout"].strip().split(" ", 1)
    assert float(took) <= RESOLVE_TIMEOUT + slack(0.5), res
    assert res["after_held"] <= RESOLVE_TIMEOUT + slack(1.5), res
    assert problem == (f"{file}: no answer after 5 s (a hung filesystem? look for processes "
                       "in D state)")


@pytest.mark.root
@pytest.mark.slow
def test_a_hostname_that_never_answers_does_not_stop_the_probe(runs):
    """glibc takes the hostname from gethostname() (uname): so does the probe now, instead
    of reading /proc/sys/kernel/hostname (which hung)."""
    res = runs.result("test_a_hostname_that_never_answers_does_not_stop_the_probe")
    assert not res["hung"] and res["stuck_after_release"] == 0, res
    assert res["seconds"] <= slack(2.5) and res["status"] in (0, 1), res
    assert '"example.test"' in res["stdout"], res["stdout"][:500]
