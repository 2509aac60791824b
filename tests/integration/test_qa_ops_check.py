"""QA (maintenance and monitoring): `inspector check` output a Nagios/Icinga parser reads
right whatever the host's names hold, and thresholds that can fire."""
import shutil

import pytest

from conftest import fixture_root, replace_section, run_cli


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
    import inspector.check as check   # the plugin logic moved out of commands/ (issue 16)

    def broken(doc):
        raise KeyError("sections")
    monkeypatch.setattr(check, "collect_metrics", broken)
    res = run_cli("check", "--root", str(fixture_root("xen-pv-guest")))
    assert res.status == 3, (res.status, res.out, res.err)
    assert res.out.splitlines() == ["INSPECTOR UNKNOWN - internal error: KeyError: 'sections'"]
    assert "Traceback" in res.err            # the details stay on stderr for whoever debugs
