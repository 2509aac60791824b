"""QA (live view): `inspector top` in an 80-column terminal keeps every line within 80
columns, whatever the figures and states: a veth without peer ('lowerlayerdown no-carrier'),
a disk streaming 500 MB/s (246086.27 kB/s widened its row), a long partition name, and the
capture's note. Seen on a live host with `ip link add qaveth0 type veth peer name qaveth1;
ip link set qaveth0 up` (88 columns) and a dd of 3 GB (81)."""
import shutil

from conftest import fixture_root, run_bin

UPTIME = 864012.34


def _root(tmp_path):
    root = tmp_path / "root"
    shutil.copytree(fixture_root("live-md-busy-member"), root, symlinks=True)
    net = root / "sys/class/net/qaveth0"
    shutil.copytree(root / "sys/class/net/eth0", net, symlinks=True)
    (net / "operstate").write_text("lowerlayerdown\n")
    (net / "carrier").write_text("0\n")
    stats = (root / "proc/diskstats").read_text().splitlines()
    # sda: 987654.32 kB/s written on average since boot; a partition with a long name
    sectors = int(987654.32 * 2 * UPTIME)
    sda = stats[0].split()
    sda[9] = str(sectors)
    stats[0] = " ".join(sda)
    stats.append("259 12 nvme10n1p12 5 0 40 1 0 0 0 0 0 1 1 0 0 0 0 0 0")
    (root / "proc/diskstats").write_text("\n".join(stats) + "\n")
    # a thread of a multi-threaded process stuck under a long kernel function name
    task = root / "proc/18833/task/18901"
    (task / "wchan").write_text("jbd2_log_wait_commit_and_more_of_a_long_name")
    return root


def test_every_line_fits_80_columns(tmp_path):
    res = run_bin("top", "--root", str(_root(tmp_path)), "--all", env={"COLUMNS": "80"})
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    too_long = [line for line in lines if len(line) > 80]
    assert not too_long, too_long
    nic = next(line for line in lines if line.startswith("qaveth0 "))
    assert nic.split()[-1] == "lowerlayerdown"                  # the state is still said
    sda = next(line for line in lines if line.startswith("sda "))
    wkb = sda.split()[4]                                         # wkB/s, fewer decimals
    assert len(wkb) < len("987654.32") and abs(float(wkb) - 987654.32) < 1, sda
    assert any(line.strip() == "wchan jbd2_log_wait_commit_and_more_of_a_long_name"
               for line in lines), res.stdout                   # wchan below, not cut
    part = next(line for line in lines if line.strip().startswith("nvme10n1p12"))
    assert len(part.split()) == 9, part                          # name and 8 columns
    # the capture's note is wrapped, not cut
    assert "rates need two" in res.stdout and "(like iostat's first report)." in res.stdout


def test_wide_keeps_full_precision_and_states(tmp_path):
    res = run_bin("top", "--root", str(_root(tmp_path)), "--wide", env={"COLUMNS": "80"})
    lines = res.stdout.splitlines()
    assert any(line.startswith("qaveth0 ") and line.endswith("lowerlayerdown no-carrier")
               for line in lines), res.stdout
    sda = next(line for line in lines if line.startswith("sda "))
    assert "987654.32" in sda.split(), sda


def test_a_tree_that_does_not_say_when_it_was_taken_is_not_dated_now(tmp_path):
    """A fixture or sysroot directory has no capture sidecar: `top --root` said "one sample
    taken <the current time>", a time the counters were never read at."""
    import json
    import time
    res = run_bin("top", "--root", str(_root(tmp_path)), env={"COLUMNS": "1000"})
    first, second = res.stdout.splitlines()[:2]
    assert "one sample (the tree does not say when it was taken)" in first, first
    assert second.startswith("time not recorded  averages since boot"), second
    assert time.strftime("%Y-%m-%d") not in "\n".join([first, second])
    doc = json.loads(run_bin("top", "--json", "--root", str(_root(tmp_path / "j"))).stdout)
    assert doc["snapshot"]["wall_known"] is False and doc["since_boot"]["wall_known"] is False
