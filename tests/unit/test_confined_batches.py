"""Batched reads of a --root tree (ConfinedTree.read_many / readlinks, HostRoot.read_many /
try_lines / readlinks): each name answers exactly what its own read would, links are resolved
inside the tree, nothing that is not a file is opened, and every fd a batch opens is closed.
Every test runs with openat2 and with the walk used where the kernel lacks it."""
from __future__ import annotations

import gc
import os
import stat
import time

import pytest

import inspector.roots.confined as confined
from inspector.model import Unknown
from inspector.roots.host import HostRoot, Unavailable

MARKER = "ZQXJ-outside-9c2d-JXQZ"


@pytest.fixture(params=["openat2", "walk"])
def mode(request, monkeypatch):
    if request.param == "walk":
        monkeypatch.setattr(confined._openat2, "available", False)
    return request.param


@pytest.fixture
def outside(tmp_path):
    out = tmp_path / "outside"
    (out / "queue").mkdir(parents=True)
    for name in ("size", "rotational"):
        (out / name).write_text(MARKER + "\n")
        (out / "queue" / name).write_text(MARKER + "\n")
    return out


@pytest.fixture
def tree(tmp_path, outside):
    """sys/block/sda as sysfs lays it out, plus links that point out of the tree."""
    top = tmp_path / "root"
    dev = top / "sys/devices/pci0/host0/target0/0:0:0:0"
    base = dev / "block/sda"
    (base / "queue").mkdir(parents=True)
    (base / "size").write_text("2048\n")
    (base / "ro").write_text("0\n")
    (base / "queue/rotational").write_text("1\n")
    (base / "queue/scheduler").write_text("none [mq-deadline]\n")
    (dev / "model").write_text("DISK\n")
    os.symlink("../../../0:0:0:0", base / "device")
    os.mkfifo(base / "fifo")
    os.symlink(str(outside / "size"), base / "abs_link")          # absolute: the tree's /...
    (top / str(outside).lstrip("/")).mkdir(parents=True)
    (top / str(outside).lstrip("/") / "size").write_text("inside\n")
    os.symlink(str(outside / "queue"), base / "outq")             # a directory link
    (top / str(outside).lstrip("/") / "queue").mkdir()
    (top / str(outside).lstrip("/") / "queue" / "rotational").write_text("0\n")
    (top / "sys/block").mkdir(parents=True)
    os.symlink("../devices/pci0/host0/target0/0:0:0:0/block/sda", top / "sys/block/sda")
    return top


BASE = "sys/devices/pci0/host0/target0/0:0:0:0/block/sda"
NAMES = ("size", "ro", "queue/rotational", "queue/scheduler", "device/model", "missing",
         "fifo", "abs_link", "outq/rotational", "queue/missing", "nodir/x", "queue", "..", "")


def one_by_one(tree: confined.ConfinedTree, directory: str, names) -> list[bytes | OSError]:
    out: list[bytes | OSError] = []
    for name in names:
        try:
            out.append(tree.read(f"{directory}/{name}", 4096))
        except OSError as exc:
            out.append(exc)
    return out


def same(a, b) -> bool:
    if isinstance(a, OSError) or isinstance(b, OSError):
        return (type(a), getattr(a, "errno", None), getattr(a, "strerror", None)) == \
            (type(b), getattr(b, "errno", None), getattr(b, "strerror", None))
    return a == b


def test_each_name_answers_what_its_own_read_answers(mode, tree):
    t = confined.ConfinedTree(str(tree))
    assert t.uses_openat2 is (mode == "openat2")
    start = time.monotonic()
    batch = t.read_many(BASE, NAMES, 4096)
    assert time.monotonic() - start < 5            # the FIFO did not block
    alone = one_by_one(t, BASE, NAMES)
    assert len(batch) == len(NAMES)
    for name, got, expected in zip(NAMES, batch, alone):
        assert same(got, expected), (name, got, expected)
    by_name = dict(zip(NAMES, batch))
    assert by_name["size"] == b"2048\n" and by_name["queue/scheduler"] == b"none [mq-deadline]\n"
    assert by_name["device/model"] == b"DISK\n"    # a directory link, resolved inside the tree
    assert by_name["abs_link"] == b"inside\n"      # an absolute link: from the tree's top
    assert by_name["outq/rotational"] == b"0\n"
    assert isinstance(by_name["fifo"], confined.Refused)
    assert isinstance(by_name["missing"], FileNotFoundError)
    assert isinstance(by_name["nodir/x"], FileNotFoundError)
    assert isinstance(by_name["queue"], IsADirectoryError)
    assert MARKER.encode() not in b"".join(v for v in batch if isinstance(v, bytes))


def test_a_batch_closes_every_fd_it_opened(mode, tree):
    t = confined.ConfinedTree(str(tree))
    t.read_many(BASE, NAMES, 4096)                 # fills the directory cache
    gc.collect()                                   # earlier tests' trees close their fds now
    before = sorted(os.listdir("/proc/self/fd"))
    for _ in range(20):
        t.read_many(BASE, NAMES, 4096)
    gc.collect()
    assert sorted(os.listdir("/proc/self/fd")) == before


def test_fds_are_closed_by_runs_and_nothing_else(tmp_path):
    path = str(tmp_path / "f")
    open(path, "w").close()
    fds = [os.open(path, os.O_RDONLY) for _ in range(6)]
    keep = fds.pop(2)                              # a gap: not ours to close
    confined._close_all(fds)
    assert fds == []
    os.fstat(keep)                                 # still open
    os.close(keep)


def test_a_device_in_a_batch_is_refused_unopened(mode, tree):
    if os.geteuid() != 0:
        pytest.fail("this test needs root (mknod); run the suite as root")
    os.mknod(tree / BASE / "null", stat.S_IFCHR | 0o666, os.makedev(1, 3))
    t = confined.ConfinedTree(str(tree))
    size, null = t.read_many(BASE, ("size", "null"), 4096)
    assert size == b"2048\n"
    assert isinstance(null, confined.Refused) and null.strerror == "a device node, not a file"


def test_readlinks_answer_as_readlink(mode, tree):
    root = HostRoot(str(tree))
    names = ["sda", "missing"]
    assert root.readlinks("sys/block", names) == [root.readlink(f"sys/block/{n}") for n in names]
    sda = root.readlinks("sys/block", names)[0]
    assert sda is not None and sda.endswith("block/sda")
    assert root.readlinks("nowhere", ["x"]) == [None]


def test_host_batches_give_the_reasons_of_single_reads(mode, tree):
    root = HostRoot(str(tree))
    names = ("size", "missing", "fifo", "queue/rotational", "queue")
    lines = root.try_lines(BASE, names)
    assert lines == [root.try_line(f"{BASE}/{n}") for n in names]
    assert lines[0] == "2048" and lines[1] == Unknown("not present")
    assert lines[2] == Unknown("a FIFO, not a file")
    data = root.read_many(BASE, names)
    assert data[0] == b"2048\n" and isinstance(data[1], Unavailable)
    # a batch through a link that climbs out of the tree says so, as a single read does
    os.symlink("../../../../../../../../..", tree / BASE / "up")
    assert root.try_lines(BASE, ["up/size"]) == [root.try_line(f"{BASE}/up/size")]


def test_recording_keeps_every_file_of_a_batch(tree):
    root = HostRoot(str(tree), record=True)
    root.read_many("sys/block/sda", ("size", "queue/rotational", "missing"))
    assert root.recording is not None
    assert root.recording.files[f"{BASE}/size"] == b"2048\n"
    assert root.recording.files[f"{BASE}/queue/rotational"] == b"1\n"
    assert f"{BASE}/missing" not in root.recording.files


def test_live_batches_read_as_read_bytes(tmp_path):
    root = HostRoot("/")
    ostype, missing = root.read_many("proc/sys/kernel", ("ostype", "no-such-file"), 4096)
    assert ostype == root.read_bytes("proc/sys/kernel/ostype", 4096) == b"Linux\n"
    assert isinstance(missing, Unavailable) and missing.reason == "not present"
    (tmp_path / "size").write_text("7\n")
    os.mkfifo(tmp_path / "fifo")
    recording = HostRoot("/", record=True)
    rel = str(tmp_path).lstrip("/")
    size, fifo = recording.read_many(rel, ("size", "fifo"), 4096)
    assert size == b"7\n"
    assert isinstance(fifo, Unavailable) and fifo.reason == "a FIFO, not a file"
    assert recording.recording is not None
    assert recording.recording.files[f"{rel}/size"] == b"7\n"


def test_a_forked_child_reads_its_own_fds(mode, tree):
    """After fork the child reopens the tree and starts its own directory cache (the
    parent's fd numbers may be reused by then): it reads the same bytes."""
    t = confined.ConfinedTree(str(tree))
    expected = t.read_many(BASE, ("size", "queue/rotational"), 4096)
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(read)
            for fd in range(3, 256):               # the parent's numbers, gone in the child
                if fd != write:
                    try:
                        os.close(fd)
                    except OSError:
                        pass
            got = t.read_many(BASE, ("size", "queue/rotational"), 4096)
            os.write(write, b"ok" if got == expected else repr(got).encode())
        finally:
            os._exit(0)
    os.close(write)
    answer = os.read(read, 4096)
    os.close(read)
    os.waitpid(pid, 0)
    assert answer == b"ok"


def test_listings_without_recording_name_what_recorded_ones_name(mode, tree):
    plain, recording = HostRoot(str(tree)), HostRoot(str(tree), record=True)
    for rel in (BASE, "sys/block", "sys/block/sda", f"{BASE}/outq", ""):
        assert plain.listdir(rel) == recording.listdir(rel), rel
    assert "queue" in plain.listdir("sys/block/sda")
    for rel in (f"{BASE}/fifo", f"{BASE}/size", "missing"):
        with pytest.raises(Unavailable) as plain_error:
            plain.listdir(rel)
        with pytest.raises(Unavailable) as recorded_error:
            recording.listdir(rel)
        assert plain_error.value.reason == recorded_error.value.reason, rel
