"""HostRoot: reads inside a root, symlink resolution, unknown reasons, facts and recording."""
import os

import pytest

from inspector.model import Unknown
from inspector.roots.host import HostRoot, Unavailable


def make_tree(tmp_path):
    (tmp_path / "sys/devices/virtual/block/dm-0/dm").mkdir(parents=True)
    (tmp_path / "sys/devices/virtual/block/dm-0/dm/name").write_text("vg-root\n")
    (tmp_path / "sys/block").mkdir(parents=True)
    os.symlink("../devices/virtual/block/dm-0", tmp_path / "sys/block/dm-0")
    (tmp_path / "run/systemd/resolve").mkdir(parents=True)
    (tmp_path / "run/systemd/resolve/stub-resolv.conf").write_text("nameserver 127.0.0.53\n")
    (tmp_path / "etc").mkdir()
    os.symlink("/run/systemd/resolve/stub-resolv.conf", tmp_path / "etc/resolv.conf")
    (tmp_path / "garbage").write_text("12x\n")
    return HostRoot(str(tmp_path))


def test_reads_follow_links_inside_root(tmp_path):
    root = make_tree(tmp_path)
    assert root.read_line("sys/block/dm-0/dm/name") == "vg-root"
    assert root.resolve("etc/resolv.conf") == "run/systemd/resolve/stub-resolv.conf"
    assert root.resolve("sys/block/dm-0/../../../../..") == ""   # never escapes the root
    assert root.read_text(root.resolve("etc/resolv.conf")).startswith("nameserver")


def test_unknown_reasons(tmp_path):
    root = make_tree(tmp_path)
    missing = root.try_line("sys/block/sda/size")
    assert isinstance(missing, Unknown) and missing.reason == "not present"
    bad = root.try_int("garbage")
    assert isinstance(bad, Unknown) and "unparsable" in bad.reason
    with pytest.raises(Unavailable):
        root.listdir("nope")


@pytest.mark.skipif(os.geteuid() != 0, reason="root reads everything")
def test_permission_denied_reason(tmp_path):
    p = tmp_path / "secret"
    p.write_text("x")
    p.chmod(0)
    # as root the read succeeds; simulate with a directory we cannot read as a file
    root = HostRoot(str(tmp_path))
    assert isinstance(root.try_line("."), Unknown)


def test_facts_live_and_capture(tmp_path):
    live = HostRoot("/")
    assert live.fact("x", "k", lambda: 41 + 1) == 42
    assert live.fact("x", "k", lambda: 0) == 42            # cached
    (tmp_path / "inspector-sidecar.json").write_text(live_sidecar_json(live))
    cap = HostRoot(str(tmp_path))
    assert cap.fact("x", "k", lambda: 0) == 42
    assert isinstance(cap.fact("x", "other", lambda: 1), Unknown)


def live_sidecar_json(root):
    import json
    return json.dumps(root.sidecar())


def test_command_missing_timeout_and_capture(tmp_path):
    live = HostRoot("/")
    r = live.run(["no-such-tool-xyz", "-a"])
    assert r.error == "no-such-tool-xyz not installed"
    r = live.run(["sleep", "5"], timeout=0.3)
    assert r.error == "sleep timed out after 0.3 s" and r.duration < 2
    r = live.run(["echo", "hello"])
    assert r.ok and r.stdout == "hello\n"
    (tmp_path / "inspector-sidecar.json").write_text(live_sidecar_json(live))
    cap = HostRoot(str(tmp_path))
    assert cap.run(["echo", "hello"]).stdout == "hello\n"
    missing = cap.run(["echo", "bye"]).error
    assert missing is not None and "not recorded" in missing


def test_corrupt_sidecar_is_a_clear_error(tmp_path):
    (tmp_path / "inspector-sidecar.json").write_text("{not json")
    with pytest.raises(Unavailable, match="corrupt sidecar"):
        HostRoot(str(tmp_path))


def test_recorded_readlink_through_a_link_is_stored_at_its_real_path(tmp_path):
    import tarfile

    from inspector.captures.capture import write_capture
    make_tree(tmp_path)
    (tmp_path / "sys/devices/virtual/block/dm-0/subsystem_target").mkdir()
    os.symlink("subsystem_target", tmp_path / "sys/devices/virtual/block/dm-0/subsystem")
    rec = HostRoot(str(tmp_path), record=True)
    assert rec.readlink("sys/block/dm-0/subsystem") == "subsystem_target"
    assert rec.recording is not None          # record=True
    assert "sys/devices/virtual/block/dm-0/subsystem" in rec.recording.links
    assert "sys/block/dm-0/subsystem" not in rec.recording.links
    out = tmp_path / "cap.tar.gz"
    write_capture(rec, str(out))
    with tarfile.open(out) as tar:
        tar.extractall(tmp_path / "x", filter="data")
    assert os.readlink(tmp_path / "x/sys/block/dm-0") == "../devices/virtual/block/dm-0"


def test_a_fifo_in_a_tree_is_unknown_not_a_hang(tmp_path):
    """A FIFO planted where a file should be (`--root` on a crafted or damaged tree) must
    not block the open or the read: it is unknown with a reason, at once."""
    import time
    (tmp_path / "proc").mkdir()
    os.mkfifo(tmp_path / "proc" / "mdstat")
    root = HostRoot(str(tmp_path))
    start = time.monotonic()
    value = root.try_text("proc/mdstat")
    assert time.monotonic() - start < 1
    assert isinstance(value, Unknown) and "FIFO" in value.reason


def test_malformed_recordings_in_a_capture_are_unknown(tmp_path):
    """A capture is foreign input: a uname without its release, a command recorded as a
    string, a non-string stdout, an environment value that is a list — each is unknown for
    what needs it, and the report is still built."""
    import json

    from inspector.report.collect import build_report
    (tmp_path / "proc").mkdir()
    (tmp_path / "inspector-sidecar.json").write_text(json.dumps({"facts": {
        "uname": {"uname": {"nodename": "h1", "machine": "x86_64"}},
        "command": {"hio_info -d /dev/hioa": "garbage",
                    "ethtool -k eth0": {"argv": ["ethtool"], "returncode": 0, "stdout": 12}},
        "env": {"RES_OPTIONS": ["timeout:1"]},
        "uid": {"uid": "root"},
        "time": {"collected_at": "yesterday"}}}))
    root = HostRoot(str(tmp_path))
    uname = root.uname()
    assert isinstance(uname, Unknown) and "malformed" in uname.reason
    assert root.run(["hio_info", "-d", "/dev/hioa"]).error == "malformed recording in capture"
    assert root.run(["ethtool", "-k", "eth0"]).error == "malformed recording in capture"
    assert root.environ("RES_OPTIONS") is None
    assert isinstance(root.uid(), Unknown)
    report = build_report(root, timeout=10)
    assert report.host.collected_at == 0.0          # "yesterday" is no time
    assert set(report.sections) >= {"storage", "net", "dns", "cpu", "virt"}
